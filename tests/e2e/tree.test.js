// The HTML call tree in a real browser, on build/e2e/tree.html written by
// tests/unit/tree_test.c: 1,300 samples under [worker tid=7] > main:
// gc_collect 600 (gc_mark 500, __memcpy 100), hash_bytes 390 (self 250,
// __memcpy 140), evil<img ...> 10, and leaf_000..leaf_299 1 each.
'use strict';
const path = require('path');
const { ok, done, launch, newPage, artifactDir, screenshotNotBlank } = require('./lib');

const dir = artifactDir();

// The row of the first node named name, as its cells' texts.
async function row(page, name) {
	const r = page.locator('.row[data-node]', { has: page.locator('.name b', { hasText: name }) }).first();
	if (!await r.count()) return null;
	return r.locator('span').allInnerTexts();
}

async function main() {
	const browser = await launch();
	const errors = [];
	const page = await newPage(browser, errors);
	await page.goto('file://' + path.join(dir, 'tree.html'));
	await page.waitForFunction(() => window.nprofTimings && window.nprofTimings.drawn);

	ok(await page.title() === 'nprof test: call tree', 'title from --title');
	let r = await row(page, 'gc_mark');
	ok(r && r[0] === '500 samples' && r[1] === '38.46%' && r[2] === '500 samples',
		'hot path opened: gc_mark total and self', r);
	r = await row(page, 'main');
	ok(r && r[0] === '1,300 samples' && r[1] === '100.00%' && r[4].includes('src/main.c:42'),
		'main: total, share, file:line', r);
	ok(await page.locator('#rows img').count() === 0 && await row(page, 'evil<img src=x onerror=alert(1)>') !== null,
		'a name with markup is shown as text');
	// main has 303 callees: gc_collect, hash_bytes, evil and 300 leaves.
	ok(await page.locator('.name b', { hasText: /^leaf_/ }).count() === 197 &&
		(await page.locator('.row.more').innerText()).includes('103 more (7.92% of total)'),
		'303 callees: the heaviest 200 shown, then a "more" row');
	await page.click('.row.more');
	ok(await page.locator('.name b', { hasText: /^leaf_/ }).count() === 300, 'clicking "more" shows them all');

	ok(await row(page, '__memcpy_avx_unaligned_erms') !== null, 'rows opened before "more" stay open');
	await page.locator('.row[data-node]', { has: page.locator('.name b', { hasText: 'hash_bytes' }) }).click();
	const memcpys = await page.locator('.name b', { hasText: '__memcpy_avx_unaligned_erms' }).count();
	ok(memcpys === 2, 'clicking hash_bytes expands it', memcpys);
	await page.locator('.row[data-node]', { has: page.locator('.name b', { hasText: 'hash_bytes' }) }).click();
	ok(!await page.locator('.name b', { hasText: '__memcpy_avx_unaligned_erms' }).nth(1).isVisible(),
		'clicking again collapses it');

	await page.fill('#search', 'memcpy');
	await page.press('#search', 'Enter');
	let m = await page.locator('#match').innerText();
	ok(m.includes('Matched: 18.46%') && m.includes('240 samples'), 'search: memcpy is 18.46%', m);
	ok(await page.locator('.row.hit').count() >= 1, 'matching rows highlighted');
	await page.click('#reveal');
	ok(await page.locator('.row.hit').nth(1).isVisible(), '"Show matches" opens the tree down to them');
	await screenshotNotBlank(browser, page, path.join(dir, 'tree.png'), 'tree');

	await page.click('#reverse');
	const tops = await page.locator('#rows > .node > .kids > .node > .row .name b').allInnerTexts();
	ok(tops[0] === 'gc_mark' && tops[1] === 'hash_bytes' && tops[2] === '__memcpy_avx_unaligned_erms',
		'reversed: leaf functions at the top level, heaviest first', tops.slice(0, 4).join(', '));
	m = await page.locator('#match').innerText();
	ok(m.includes('Matched: 18.46%'), 'search kept across reverse', m);
	await screenshotNotBlank(browser, page, path.join(dir, 'tree-reverse.png'), 'reversed tree');

	await page.fill('#search', '[');
	await page.press('#search', 'Enter');
	ok((await page.locator('#match').innerText()).includes('invalid'), 'a bad regex is reported');
	ok(errors.length === 0, 'no console errors, exceptions or network requests', errors.join('\n'));
	await browser.close();
}

main().then(done, e => { ok(false, 'tree browser test ran', e.stack); done(); });
