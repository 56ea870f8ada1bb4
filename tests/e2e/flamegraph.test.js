// The flamegraph HTML in a real browser: hover, zoom, search, reverse,
// icicle, and the 100,000-stack page against the clock. The pages come
// from tests/unit/flamegraph_test.c (run with NPROF_E2E_DIR set); the
// rich profile there has a known tree:
//
//   all 1000 > [worker-1 tid=43] 1000 > main 1000 >
//     LazyCompile... 60 | evil</script>... 10 | gc_collect 400 |
//     hash_bytes 110 | libfoo.so+0x1f2e 20 | server::Connection::serve 400
//   leaf (self) values: gc_mark 250, hash_bytes 290, __memcpy 160, ...
'use strict';
const path = require('path');
const { ok, note, done, launch, newPage, artifactDir, screenshotNotBlank, cpuMeter } = require('./lib');

const FRAME_H = 16;
const dir = artifactDir();
const shots = path.join(dir);

// Mouse position of depth d at fraction fx of the width, for the current
// orientation (flame: root at the bottom; icicle: root at the top).
async function at(page, d, fx, icicle) {
	const r = await page.locator('#canvas').boundingBox();
	const y = icicle ? r.y + d * FRAME_H + FRAME_H / 2 : r.y + r.height - d * FRAME_H - FRAME_H / 2;
	return [r.x + Math.min(Math.max(fx * r.width, 1), r.width - 2), y];
}

async function hover(page, d, fx, icicle) {
	const [x, y] = await at(page, d, fx, icicle);
	await page.mouse.move(x, y);
	return (await page.locator('#tip').isVisible()) ? page.locator('#tip').innerText() : '';
}

async function click(page, d, fx, icicle) {
	const [x, y] = await at(page, d, fx, icicle);
	await page.mouse.click(x, y);
}

// What the canvas holds: distinct colours, the fraction of pixels that are
// not the background (the most common colour), and a hash of the pixels.
function canvasStats(page) {
	return page.evaluate(() => {
		const c = document.getElementById('canvas');
		const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		const count = new Map();
		let h = 0;
		for (let i = 0; i < d.length; i += 4) {
			const k = (d[i] << 16) | (d[i + 1] << 8) | d[i + 2] | (d[i + 3] << 24);
			count.set(k, (count.get(k) || 0) + 1);
			h = (Math.imul(h, 31) + k) | 0;
		}
		const n = d.length / 4;
		return { colors: count.size, fg: 1 - Math.max(...count.values()) / n, hash: h };
	});
}

async function search(page, text) {
	await page.fill('#search', text);
	await page.press('#search', 'Enter');
	return page.locator('#match').innerText();
}

async function main() {
	const browser = await launch();
	const errors = [];
	let page = await newPage(browser, errors);
	await page.goto('file://' + path.join(dir, 'flame.html'));
	await page.waitForFunction(() => window.nprofTimings && window.nprofTimings.drawn);

	ok(await page.title() === 'nprof test: rich profile', 'title from --title; the hostile name did not run',
		await page.title());
	ok((await page.locator('#notes').innerText()).includes('perf_event_paranoid=2'), 'notes are shown');
	const legend = await page.locator('#legend li:not([hidden])').allInnerTexts();
	ok(['user code', 'library', 'kernel', 'inlined', 'JIT', 'thread', 'no symbol'].every(k => legend.includes(k)),
		'legend lists the kinds present', legend.join(', '));
	const drawn = await canvasStats(page);
	const nframes = await page.evaluate(() => window.nprofTimings.frames);
	ok(nframes > 10 && drawn.colors >= 10 && drawn.fg > 0.05,
		`frames are drawn: ${nframes} frames, ${drawn.colors} colours, ` +
		`${(100 * drawn.fg).toFixed(1)}% of the canvas off the background`, JSON.stringify(drawn));
	await screenshotNotBlank(browser, page, path.join(shots, 'flame.png'), 'flame graph',
		{ screenshot: { fullPage: true } });

	let tip = await hover(page, 2, 0.5);
	ok(/^main\b/.test(tip) && tip.includes('src/main.c:42') && tip.includes('/usr/bin/app'),
		'tooltip: name, module, file:line', tip);
	ok(tip.includes('1,000 samples') && tip.includes('100.00% of total') && tip.includes('100.00% of parent'),
		'tooltip: value and shares', tip);
	tip = await hover(page, 3, 0.27);
	ok(tip.startsWith('gc_collect') && tip.includes('400 samples') && tip.includes('40.00% of total') &&
		tip.includes('40.00% of parent'), 'gc_collect is 40% of total and of main', tip);
	tip = await hover(page, 3, 0.0675);
	ok(tip.startsWith('evil</script><script>'), 'a name with </script> is shown as text', tip);

	await click(page, 3, 0.27);
	const left = await hover(page, 3, 0.001), right = await hover(page, 3, 0.999);
	ok(left.startsWith('gc_collect') && right.startsWith('gc_collect'), 'click zooms: gc_collect fills the width',
		left + ' | ' + right);
	tip = await hover(page, 4, 0.3);
	ok(tip.startsWith('gc_mark') && tip.includes('62.50% of parent') && tip.includes('25.00% of total'),
		'zoomed: children spread over the width, shares unchanged', tip);
	tip = await hover(page, 2, 0.9);
	ok(tip.startsWith('main'), 'zoomed: callers drawn across the width');
	ok((await canvasStats(page)).hash !== drawn.hash, 'zoom redrew the canvas');
	await screenshotNotBlank(browser, page, path.join(shots, 'flame-zoomed.png'), 'zoomed',
		{ screenshot: { fullPage: true } });
	await page.click('#reset');
	tip = await hover(page, 3, 0.01);
	ok(tip.startsWith('LazyCompile'), 'reset zoom shows everything again', tip);

	let m = await search(page, '^gc_');
	ok(m.includes('Matched: 40.00%'), 'search ^gc_ matches 40%', m);
	m = await search(page, 'hash');
	ok(m.includes('Matched: 29.00%') && m.includes('290 samples'),
		'search counts hash_bytes under parse and under main: 29%', m);
	m = await search(page, 'h.*_(bytes|headers)');
	ok(m.includes('Matched: 36.00%'), 'nested matches counted once: parse_headers 25% (with its hash_bytes) + hash_bytes 11%', m);
	await screenshotNotBlank(browser, page, path.join(shots, 'flame-search.png'), 'search',
		{ screenshot: { fullPage: true } });
	m = await search(page, '(');
	ok(m.includes('invalid') && await page.locator('#search.bad').count() === 1, 'a bad regex is reported', m);
	m = await search(page, '');
	ok(m === '', 'clearing the search clears the match');

	await page.click('#icicle');
	ok(await page.getAttribute('#icicle', 'aria-pressed') === 'true', 'icicle toggled');
	tip = await hover(page, 0, 0.5, true);
	ok(tip.startsWith('all'), 'icicle: root at the top', tip);
	tip = await hover(page, 3, 0.27, true);
	ok(tip.startsWith('gc_collect'), 'icicle: same frames from the top', tip);

	await page.click('#reverse');
	ok(await page.getAttribute('#reverse', 'aria-pressed') === 'true', 'reverse toggled');
	tip = await hover(page, 1, 0.01, true);
	ok(tip.startsWith('LazyCompile'), 'reversed: leaf functions at the base', tip);
	tip = await hover(page, 1, 0.68, true);
	ok(tip.startsWith('hash_bytes') && tip.includes('29.00% of total'),
		'reversed: hash_bytes self time merged from both callers', tip);
	tip = await hover(page, 2, 0.68, true);
	ok(tip.startsWith('http::parse_headers') && tip.includes('62.07% of parent'),
		'reversed: its callers above it', tip);
	await screenshotNotBlank(browser, page, path.join(shots, 'flame-reverse-icicle.png'), 'reversed icicle',
		{ screenshot: { fullPage: true } });
	await page.click('#reverse');
	tip = await hover(page, 3, 0.27, true);
	ok(tip.startsWith('gc_collect'), 'reverse off again restores the tree', tip);

	// Written with --reverse: the page starts reversed.
	await page.goto('file://' + path.join(dir, 'flame-reverse.html'));
	ok(await page.getAttribute('#reverse', 'aria-pressed') === 'true', '--reverse sets the initial mode');
	tip = await hover(page, 1, 0.68);
	ok(tip.startsWith('hash_bytes'), '--reverse: hash_bytes at the base', tip);
	await page.click('#reverse');
	tip = await hover(page, 3, 0.27);
	ok(tip.startsWith('gc_collect'), '--reverse page can show the forward tree', tip);
	ok(errors.length === 0, 'no console errors, exceptions or network requests', errors.join('\n'));

	// 100,000 distinct stacks. Each action's main-thread CPU time is held
	// against the page's own load (parse, build, draw): a slow algorithm
	// shows as a ratio, while a slow or busy machine moves both alike.
	errors.length = 0;
	page = await newPage(browser, errors);
	const cpu = await cpuMeter(page);
	const t0 = Date.now(), c0 = await cpu();
	await page.goto('file://' + path.join(dir, 'flame-big.html'));
	await page.waitForFunction(() => window.nprofTimings && window.nprofTimings.drawn);
	const loaded = Date.now() - t0, loadCpu = await cpu() - c0;
	const tm = await page.evaluate(() => window.nprofTimings);
	note(`100k stacks: page ready in ${loaded} ms, ${loadCpu.toFixed(0)} ms of CPU (JSON ${(tm.parsed - tm.start).toFixed(0)} ms, ` +
		`tree ${(tm.decoded - tm.parsed).toFixed(0)} ms, draw ${(tm.drawn - tm.decoded).toFixed(0)} ms, ` +
		`${tm.frames} frames drawn)`);
	ok(tm.frames > 1000, `100k stacks: drawn (${tm.frames} frames)`);
	// An action's CPU time, and its fraction of the load's.
	const measure = async action => {
		const c = await cpu();
		const result = await action();
		const ms = await cpu() - c;
		return { result, ms, share: ms / loadCpu };
	};
	const describe = x => `${x.ms.toFixed(1)} ms of CPU, ${(100 * x.share).toFixed(1)}% of the load's`;
	const hovers = [];
	for (let k = 0; k < 21; k++)
		hovers.push(await measure(() => hover(page, 1 + (k % 6), (k + 0.5) / 21)));
	// Some of the 21 points lie past a row's last frame (4 here): those
	// show nothing, cost little, and are not hovers of a frame. The median
	// is of those that showed one; most must.
	const shown = hovers.filter(x => x.result !== '').sort((a, b) => a.ms - b.ms);
	const h = shown[Math.floor(shown.length / 2)];
	ok(shown.length >= 11 && h.share < 0.05,
		`100k stacks: a hover takes ${h ? describe(h) : '?'} (median of the ${shown.length} of 21 that showed a frame)`,
		h ? h.result : '');
	const z = await measure(() => click(page, 2, 0.3));
	ok(z.share < 0.5, `100k stacks: zoom redraws in ${describe(z)}`);
	const sr = await measure(() => search(page, 'method_1[0-9]\\b'));
	ok(/Matched: \d/.test(sr.result) && sr.share < 1, `100k stacks: search in ${describe(sr)} (${sr.result})`);
	const rv = await measure(async () => {
		await page.click('#reverse');
		await page.waitForFunction(() => document.querySelector('#reverse').getAttribute('aria-pressed') === 'true');
	});
	ok(rv.share < 3, `100k stacks: reversed tree built in ${describe(rv)}`);
	await screenshotNotBlank(browser, page, path.join(shots, 'flame-big.png'), '100k stacks');
	ok(errors.length === 0, '100k stacks: no console errors', errors.join('\n'));

	await browser.close();
}

main().then(done, e => { ok(false, 'flamegraph browser test ran', e.stack); done(); });
