// nprof diff's flame graph in a real browser. The page is NPROF_DIFF_PAGE
// when tests/integration/diff.sh wrote it; run from e2e.sh, this script
// writes it itself with nprof diff on the same two profiles:
//
//   BEFORE (400): main;work;alpha 100  main;work;beta 240  main;gone 60
//   AFTER  (800): main;work;alpha 400  main;work;beta 300  main;fresh 100
//
// so alpha doubles its share (25% -> 50%, +25 points), beta shrinks
// (60% -> 37.5%), gone disappears (15% -> 0) and fresh appears (12.5%).
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const { ok, note, done, launch, newPage, artifactDir, screenshotNotBlank } = require('./lib');

const BEFORE = 'main;work;alpha 100\nmain;work;beta 240\nmain;gone 60\n';
const AFTER = 'main;work;alpha 400\nmain;work;beta 300\nmain;fresh 100\n';

function pagePath() {
	if (process.env.NPROF_DIFF_PAGE) return process.env.NPROF_DIFF_PAGE;
	const dir = artifactDir();
	const build = process.env.NPROF_BUILD || path.join(__dirname, '../../build');
	const nprof = path.join(build, 'nprof');
	if (!fs.existsSync(nprof)) {
		console.log(`ok 1 # SKIP ${nprof} is not built`);
		console.log('1..1');
		process.exit(0);
	}
	fs.mkdirSync(dir, { recursive: true });
	fs.writeFileSync(path.join(dir, 'diff-before.collapsed'), BEFORE);
	fs.writeFileSync(path.join(dir, 'diff-after.collapsed'), AFTER);
	const page = path.join(dir, 'diff.html');
	execFileSync(nprof, ['diff', path.join(dir, 'diff-before.collapsed'), path.join(dir, 'diff-after.collapsed'),
		'-f', page]);
	return page;
}

// The frame named name: its box in page coordinates and the colour the
// canvas has at its centre, read before anything is hovered.
function frame(page, name) {
	return page.evaluate(name => {
		const t = tree;
		let i = -1;
		for (let k = 1; k < t.n; k++) if (nameOf(t, k) === name) { i = k; break; }
		if (i < 0) return null;
		const [x, y, w] = frameBox(i), c = document.getElementById('canvas'), r = c.getBoundingClientRect();
		const dpr = c.width / r.width;
		const px = c.getContext('2d').getImageData(Math.floor((x + w / 2) * dpr), Math.floor((y + 8) * dpr), 1, 1).data;
		return { x: r.left + x + w / 2, y: r.top + y + 8, w, rgb: [px[0], px[1], px[2]] };
	}, name);
}

async function hover(page, f) {
	await page.mouse.move(f.x, f.y);
	return (await page.locator('#tip').isVisible()) ? page.locator('#tip').innerText() : '';
}

function reddish([r, g, b]) { return r > b + 60 && r > g + 30; }
function bluish([r, g, b]) { return b > r + 60; }

async function main() {
	const file = pagePath();
	const browser = await launch();
	const errors = [];
	const page = await newPage(browser, errors);
	await page.goto('file://' + file);
	await page.waitForFunction(() => window.nprofTimings && window.nprofTimings.drawn);

	ok((await page.title()).startsWith('Diff: '), 'the default title names the two profiles', await page.title());
	const info = await page.locator('#info').innerText();
	ok(info.includes('before 400 samples') && info.includes('after 800 samples'), 'the header gives both totals', info);
	const legend = await page.locator('#legend li:not([hidden])').allInnerTexts();
	ok(legend.includes('grew') && legend.includes('shrank') && !legend.includes('user code'),
		'the legend explains the diff colours', legend.join(', '));
	ok(await page.locator('#reverse').isHidden(), 'the reverse toggle is hidden in a diff');
	await screenshotNotBlank(browser, page, path.join(path.dirname(file), 'diff.png'), 'diff flame graph',
		{ screenshot: { fullPage: true } });

	const alpha = await frame(page, 'alpha'), beta = await frame(page, 'beta');
	const gone = await frame(page, 'gone'), fresh = await frame(page, 'fresh');
	ok(alpha && beta && gone && fresh, 'every frame of either profile is drawn, the vanished one too',
		JSON.stringify({ alpha, beta, gone, fresh }));
	if (alpha && beta && gone && fresh) {
		ok(gone.w > 20, `the vanished frame keeps its width (${gone.w.toFixed(1)} px: its 15% before)`);
		ok(reddish(alpha.rgb), `the grown frame is red (rgb ${alpha.rgb})`);
		ok(reddish(fresh.rgb), `the new frame is red (rgb ${fresh.rgb})`);
		ok(bluish(beta.rgb), `the shrunk frame is blue (rgb ${beta.rgb})`);
		ok(bluish(gone.rgb), `the vanished frame is blue (rgb ${gone.rgb})`);
		let tip = await hover(page, alpha);
		ok(tip.startsWith('alpha') && tip.includes('before 25.00% (100 samples)') &&
			tip.includes('after 50.00% (400 samples)') && tip.includes('+25.00 points'),
			'hovering alpha: 25% -> 50%, +25 points, and the raw values', tip);
		tip = await hover(page, gone);
		ok(tip.startsWith('gone') && tip.includes('before 15.00% (60 samples)') &&
			tip.includes('after 0.00% (0 samples)') && tip.includes('\u221215.00 points'),
			'hovering the vanished frame: 15% -> 0, -15 points', tip);
		const status = await page.locator('#status').innerText();
		ok(status.includes('gone') && status.includes('15.00 points'), 'the status line says the change', status);
	}

	ok(await page.locator('#diffs').isVisible(), 'the table of changed functions is on the page');
	const rows = await page.locator('#difftable tbody tr').evaluateAll(trs =>
		trs.map(tr => [...tr.cells].map(td => td.textContent)));
	ok(rows.length >= 4 && rows[0][0] === 'alpha' && rows[0][3] === '+25.00 points',
		'the table lists the doubled function first, +25 points', JSON.stringify(rows[0]));
	ok(rows.length >= 4 && rows[1][0] === 'beta' && rows[2][0] === 'gone' && rows[3][0] === 'fresh',
		'then beta, gone, fresh: by self change, both directions', rows.map(r => r[0]).join(', '));
	await page.locator('#difftable tbody tr').first().click();
	const m = await page.locator('#match').innerText();
	ok(m.includes('before 25.00%') && m.includes('after 50.00%'), 'a click on a row searches for its function', m);

	ok(errors.length === 0, 'no console errors, no network requests', errors.join('\n'));
	await browser.close();
	done();
}

main().catch(e => { ok(false, 'the test ran', e.stack); done(); });
