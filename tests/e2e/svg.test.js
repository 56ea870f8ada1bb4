// The SVG flame graph in a real browser, on build/e2e/flame.svg written by
// tests/unit/svg_test.c: 10,000 samples under main: gc_collect 6000
// (gc_mark 5000, memcpy 1000), hash_bytes 3900 (memcpy 1400 > ksys_read),
// an inlined operator[] 99 and tiny 1. 1200 px wide, 10 px padding.
'use strict';
const path = require('path');
const { ok, done, launch, newPage, artifactDir } = require('./lib');

const dir = artifactDir();

// The <g> of the first frame whose tooltip starts with name.
function frame(page, name) {
	return page.locator('g.frame', { has: page.locator(`title:text-matches("^${name}\\\\b")`) }).first();
}

async function rectWidth(page, name) {
	return Number(await frame(page, name).locator('rect').getAttribute('width'));
}

async function main() {
	const browser = await launch();
	const errors = [];
	const page = await newPage(browser, errors);
	await page.goto('file://' + path.join(dir, 'flame.svg'));
	await page.waitForLoadState('load');

	ok(await page.locator('g.frame').count() === 10, 'ten frames');
	const tip = await frame(page, 'gc_collect').locator('title').textContent();
	ok(tip === 'gc_collect\n/usr/bin/app (user code)\n6000 samples, 60.00%', 'tooltip <title>', tip);
	ok(Math.abs(await rectWidth(page, 'gc_collect') - 708) < 0.01, 'gc_collect is 60% of 1180 px');
	await page.screenshot({ path: path.join(dir, 'svg.png') });

	await frame(page, 'gc_collect').locator('rect').hover();
	const details = await page.locator('#details').textContent();
	ok(details.startsWith('gc_collect') && details.includes('60.00%'), 'hover shows details', details);

	await frame(page, 'gc_collect').locator('rect').click();
	ok(Math.abs(await rectWidth(page, 'gc_collect') - 1180) < 0.01, 'click zooms: gc_collect fills the width');
	ok(Math.abs(await rectWidth(page, 'gc_mark') - 1180 * 5 / 6) < 0.01, 'its children scale with it');
	ok(!await frame(page, 'hash_bytes').isVisible(), 'frames outside it are hidden');
	ok(await frame(page, 'main').evaluate(g => g.classList.contains('parent')) &&
		Math.abs(await rectWidth(page, 'main') - 1180) < 0.01, 'callers span the width, faded');
	const label = await frame(page, 'gc_collect').locator('text').textContent();
	ok(label === 'gc_collect', 'label refitted', label);
	await page.screenshot({ path: path.join(dir, 'svg-zoomed.png') });
	ok(await page.locator('#reset').isVisible(), '"Reset Zoom" appears');
	await page.locator('#reset').click();
	ok(Math.abs(await rectWidth(page, 'gc_collect') - 708) < 0.01 && await frame(page, 'hash_bytes').isVisible(),
		'reset zoom restores everything');

	page.once('dialog', d => d.accept('^memcpy$'));
	await page.locator('#search').click();
	let m = await page.locator('#matched').textContent();
	ok(m === 'Matched: 24.00%', 'search (prompt) memcpy: 24%', m);
	ok(await page.locator('g.frame.hit').count() === 2, 'both memcpy frames highlighted');
	await page.screenshot({ path: path.join(dir, 'svg-search.png') });
	await page.locator('#search').click();
	ok(await page.locator('g.frame.hit').count() === 0, 'reset search');
	await page.evaluate(() => window.nprofSearch('^(gc_|memcpy)'));
	m = await page.locator('#matched').textContent();
	ok(m === 'Matched: 74.00%', 'nested matches counted once: gc_collect 60% + memcpy under hash_bytes 14%', m);
	ok(errors.length === 0, 'no console errors, exceptions or network requests', errors.join('\n'));
	await browser.close();
}

main().then(done, e => { ok(false, 'svg browser test ran', e.stack); done(); });
