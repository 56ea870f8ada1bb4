// nprof's speedscope output in speedscope itself: the bundled web app of
// the `speedscope` npm package (node_modules/speedscope/dist/release/),
// opened from file:// in Debian's chromium, loads the file through its
// "Browse" file input, as a user would. It must import it (no "Unrecognized
// format" alert, no error), show the profiles by name, draw the flame chart
// (screenshot not blank), and its Sandwich table must list our functions
// with the totals and self values of the source.
//
// Sources: the hand-made collapsed file of tests/integration/convert.sh
// (three threads, 1000 samples; the anonymous thread has 970: burn_a 600,
// burn_b 250, ...), converted with `nprof convert`, and a short real
// `nprof record -o speedscope` of tests/progs/split (weights in
// nanoseconds).
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const { ok, note, done, launch, newPage, artifactDir, screenshotNotBlank } = require('./lib');

const dir = artifactDir();
const build = path.resolve(process.env.NPROF_BUILD || path.join(__dirname, '../../build'));
const nprof = path.join(build, 'nprof');
const app = path.join(__dirname, 'node_modules/speedscope/dist/release/index.html');

const COLLAPSED = `main;run;burn_a 600
main;run;burn_b 250
main;recurse;recurse;recurse 50
main;operator new(unsigned long);malloc 40
main;sys_read_[k];do_syscall_64_[k] 30
[worker 1 tid=12];main;run;burn_a 20
[worker 2 tid=13];main;run;burn_b 10
`;

// Opens speedscope and loads file; returns the alerts it raised.
async function load(page, file) {
	const alerts = [];
	page.on('dialog', d => { alerts.push(d.message()); d.dismiss().catch(() => {}); });
	await page.goto('file://' + app);
	await page.waitForSelector('#file', { state: 'attached' });
	await page.setInputFiles('#file', file);
	// The toolbar shows "name (i/n)" once a profile is loaded.
	await page.waitForFunction(() => /\(\d+\/\d+\)/.test(document.body.innerText), null, { timeout: 20000 })
		.catch(() => {});
	return alerts;
}

// The Sandwich view's rows as { total, self, name }.
// The sandwich table's rows, sorted by total: the table shows only the
// rows that fit, and sorted by self (its default) a root with no self
// value falls below them when many functions (kernel ones) have some.
async function sandwich(page) {
	await page.keyboard.press('3');
	await page.waitForFunction(() => document.body.innerText.includes('Symbol Name'), null, { timeout: 10000 });
	const read = async () => {
		const text = await page.locator('body').innerText();
		const rows = [];
		// Shares are "12%", "<0.01%" or ">99%" (a root with a few
		// samples outside it, e.g. in ld.so's start-up).
		const re = /^(\S+) \(([\d.]+%|<0\.01%|>99%)\)\n\t?(\S+) \((?:[\d.]+%|<0\.01%|>99%)\)\n\t?(.+)$/gm;
		let m;
		while ((m = re.exec(text))) rows.push({ total: m[1], self: m[3], name: m[4] });
		return rows;
	};
	// The header's sort icon: two triangles, the active one drawn in the
	// primary colour, both in the secondary one on an inactive column.
	// Rows are read only once the icon says "Total, descending": the rows
	// sorted by self can happen to descend by total too.
	const sortByTotal = () => page.evaluate(() => {
		const th = [...document.querySelectorAll('th')];
		const fills = name => {
			const h = th.find(e => e.innerText.trim() === name);
			return h ? [...h.querySelectorAll('path')].map(p => p.getAttribute('fill')) : [];
		};
		const total = fills('Total'), self = fills('Self');
		if (total.length !== 2 || self.length !== 2) return 'unknown';
		if (total[0] === self[0] && total[1] !== self[0]) return 'descending';
		if (total[0] !== self[0] && total[1] === self[0]) return 'ascending';
		return 'not';
	});
	for (let k = 0; k < 3; k++) {
		const before = await sortByTotal();
		if (before === 'descending') break;
		await page.locator('th', { hasText: /^Total$/ }).first().click();
		for (let t = 0; t < 40 && (await sortByTotal()) === before; t++) await page.waitForTimeout(50);
	}
	const byTotalDescending = async () => (await sortByTotal()) === 'descending';
	if (!(await byTotalDescending())) note('speedscope: the table is not sorted by total, descending');
	// The table is drawn after its sort icon: read it once two reads
	// 100 ms apart agree (a loaded host drew it late).
	let rows = await read();
	for (let t = 0; t < 50; t++) {
		await page.waitForTimeout(100);
		const again = await read();
		if (JSON.stringify(again) === JSON.stringify(rows)) break;
		rows = again;
	}
	return rows.map(({ total, self, name }) => ({ total, self, name }));
}

function noError(page) {
	return page.locator('body').innerText().then(t => !/something went wrong|unrecognized format|error/i.test(t));
}

async function main() {
	if (!fs.existsSync(app)) {
		console.log('ok 1 # SKIP speedscope missing (cd tests/e2e && npm ci)');
		console.log('1..1');
		process.exit(0);
	}
	if (!fs.existsSync(nprof)) {
		ok(false, `nprof is built (${nprof})`);
		return;
	}
	fs.mkdirSync(dir, { recursive: true });
	const src = path.join(dir, 'speedscope-in.collapsed');
	const json = path.join(dir, 'hand.speedscope.json');
	fs.writeFileSync(src, COLLAPSED);
	execFileSync(nprof, ['convert', src, json], { timeout: 30000 });

	const browser = await launch();
	const errors = [];
	let page = await newPage(browser, errors);
	let alerts = await load(page, json);
	let text = await page.locator('body').innerText();
	ok(alerts.length === 0, 'speedscope imports the converted file without an alert', alerts.join('; '));
	ok(await noError(page), 'no error message on the page', text.slice(0, 300));
	ok(text.includes('no thread (1/3)'), 'three profiles, the busiest ("no thread") shown first', text.slice(0, 200));
	await screenshotNotBlank(browser, page, path.join(dir, 'speedscope.png'), 'speedscope flame chart',
		{ minFg: 0.05 });

	let rows = await sandwich(page);
	const by = Object.fromEntries(rows.map(r => [r.name, r]));
	ok(rows.length === 9, `Sandwich lists the 9 functions of the anonymous thread (${rows.length})`,
		rows.map(r => r.name).join(', '));
	ok(by.burn_a && by.burn_a.total === '600' && by.burn_a.self === '600' &&
		by.burn_b && by.burn_b.self === '250' && by.main && by.main.total === '970' && by.main.self === '0' &&
		by['operator new(unsigned long)'] && by['operator new(unsigned long)'].total === '40' &&
		by['do_syscall_64_[k]'] && by['do_syscall_64_[k]'].self === '30' &&
		by.recurse && by.recurse.total === '50',
		'totals and self values equal the source (burn_a 600, main 970, recursion counted once)', JSON.stringify(rows));
	await screenshotNotBlank(browser, page, path.join(dir, 'speedscope-sandwich.png'), 'speedscope sandwich');
	await page.keyboard.press('n');
	await page.waitForFunction(() => document.body.innerText.includes('(2/3)'), null, { timeout: 5000 }).catch(() => {});
	text = await page.locator('body').innerText();
	rows = await sandwich(page);
	ok(text.includes('worker 1 tid=12 (2/3)') && rows.some(r => r.name === 'burn_a' && r.total === '20') &&
		!rows.some(r => r.name.includes('tid=')),
		'the next profile is thread "worker 1 tid=12": burn_a 20, no thread frame in its stacks',
		text.slice(0, 200) + ' ' + JSON.stringify(rows));
	ok(errors.length === 0, 'no console errors, exceptions or network requests', errors.join('\n'));

	// A real recording, weights in nanoseconds.
	const rec = path.join(dir, 'split.speedscope.json');
	let recorded = true;
	try {
		// -i 1ms: on a loaded host the program may get only tens of
		// milliseconds of CPU, and every function must still be seen.
		execFileSync(nprof, ['record', '-d', '1', '-i', '1ms', '-o', 'speedscope', '-f', rec, '--',
			path.join(build, 'tests/progs/split'), '--seconds', '1'], { timeout: 30000, stdio: 'pipe' });
	} catch (e) {
		recorded = false;
		ok(false, 'nprof record -o speedscope of split', String(e.stderr || e));
	}
	if (recorded) {
		errors.length = 0;
		page = await newPage(browser, errors);
		alerts = await load(page, rec);
		text = await page.locator('body').innerText();
		// Profiles come busiest first, and split's two burning threads
		// burn equally: either may lead. "(1/K)": as many profiles as the
		// file has threads (split's timer thread may be sampled too, at
		// 1 ms), two or more.
		const threads = JSON.parse(fs.readFileSync(rec, 'utf8')).profiles.length;
		ok(alerts.length === 0 && await noError(page) && threads >= 2 &&
			new RegExp('^(split|burner) tid=\\d+ \\(1\\/' + threads + '\\)$', 'm').test(text),
			`speedscope imports a real recording: one profile per thread (${threads}), named "NAME tid=N"`,
			alerts.join('; ') + ' ' + text.slice(0, 200));
		await screenshotNotBlank(browser, page, path.join(dir, 'speedscope-split.png'), 'recording flame chart',
			{ minFg: 0.05 });
		rows = await sandwich(page);
		const names = rows.map(r => r.name);
		// The first profile is either thread: its root is main or
		// the burner's start routine.
		const root = names.includes('main') ? 'main' : 'worker_main';
		ok(['burn_sixty', 'burn_thirty', 'burn_ten', root].every(n => names.includes(n)) &&
			rows.some(r => r.name === root && /ms$|s$/.test(r.total)),
			'its functions are listed, with times (weights in nanoseconds)', JSON.stringify(rows.slice(0, 6)) +
			' names: ' + names.join(' ') +
			` (${rows.length} rows; the file's first profile: ` +
			JSON.parse(fs.readFileSync(rec, 'utf8')).profiles[0].name + ')');
		ok(errors.length === 0, 'recording: no console errors, exceptions or network requests', errors.join('\n'));
	}
	note('speedscope ' + require('./node_modules/speedscope/package.json').version);
	await browser.close();
}

main().then(done, e => { ok(false, 'speedscope browser test ran', e.stack); done(); });
