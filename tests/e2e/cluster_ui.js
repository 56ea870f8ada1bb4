// nprofd's web UI with several hosts (run by tests/integration/cluster.sh):
// sign in at host a (NPROF_E2E_URL) as NPROF_E2E_USER; the host filter
// offers this host, every host and each other one; "every host" shows
// the host column with a, b and c's workers; split, which runs on c only,
// is found by the filter on host c; a 2 s cpu instance started on it from
// a's page reaches FINISHED there, and its flame graph, fetched through a,
// names burn_sixty; the filter on host b shows b's workers only.
// Throughout: no console error, no request leaving a's origin.
'use strict';
const path = require('path');
const { ok, done, launch, guardPage, noteStop } = require('./lib');

const URL_ = process.env.NPROF_E2E_URL;
const USER = process.env.NPROF_E2E_USER, PASSWORD = process.env.NPROF_E2E_PASSWORD;
const OUT = process.env.NPROF_E2E_DIR || '.';

(async () => {
	const origin = new URL(URL_).origin;
	const browser = await launch();
	const errors = [];
	let page = null;
	const hostsShown = () => page.evaluate(() => [...new Set([...document.querySelectorAll(
		'#w-body tr:not(.pad) td.c-host')].map(td => td.textContent))].sort().join(' '));
	try {
		page = await browser.newPage({ viewport: { width: 1360, height: 860 } });
		// GET /api/v1/session before signing in answers 401, on purpose
		await guardPage(page, origin, errors, st => st === 401);
		await page.goto(URL_);
		await page.waitForSelector('#signin', { state: 'visible' });
		await page.fill('#signin-user', USER);
		await page.fill('#signin-password', PASSWORD);
		await page.click('#signin-submit');
		await page.waitForSelector('#nav', { state: 'visible', timeout: 30000 });

		await page.waitForSelector('#w-host', { state: 'visible', timeout: 30000 });
		const opts = await page.locator('#w-host option').allInnerTexts();
		ok(opts.join('|') === 'this host (a)|every host|b|c', 'the host filter: this host (a), every host, b, c',
			opts.join('|'));
		ok(!(await page.isVisible('th.c-host')) || await hostsShown() === 'a',
			'this host first: a\'s workers only');
		await page.selectOption('#w-host', '*');
		await page.waitForFunction(() => ['a', 'b', 'c'].every(h => [...document.querySelectorAll(
			'#w-body tr:not(.pad) td.c-host')].some(td => td.textContent === h)), null, { timeout: 60000 });
		ok(await page.isVisible('th.c-host'), 'every host: the host column shows, with a, b and c',
			await hostsShown());

		await page.fill('#w-filter', 'split');
		await page.waitForFunction(() => [...document.querySelectorAll('#w-body tr:not(.pad)')]
			.every(r => /split/.test(r.textContent + r.querySelector('.c-name').title)), null, { timeout: 10000 });
		const row = page.locator('#w-body tr:not(.pad)', { hasText: 'split' }).first();
		ok(await row.locator('td.c-host').innerText() === 'c', 'the filter "split" finds it on host c');
		await row.locator('input[type=checkbox]').check();
		await page.waitForFunction(() => !document.getElementById('w-actions-start').disabled, null,
			{ timeout: 30000 });
		await page.fill('#w-actions-duration', '2');
		await page.click('#w-actions-start');
		const li = page.locator('#w-actions-log li').first();
		await li.locator('.status.s-FINISHED').waitFor({ timeout: 90000 });
		ok((await li.innerText()).includes('on c'), 'a cpu instance on c\'s split, from a\'s page: FINISHED',
			await li.innerText());
		const href = await li.locator('a.vlink', { hasText: 'flamegraph' }).getAttribute('href');
		const body = await page.evaluate(async u => (await fetch(u)).text(), href);
		ok(/host=c/.test(href) && body.includes('burn_sixty'), 'its flame graph, through a, names burn_sixty',
			href);

		await page.fill('#w-filter', '');
		await page.selectOption('#w-host', 'b');
		await page.waitForFunction(() => {
			const hs = [...document.querySelectorAll('#w-body tr:not(.pad) td.c-host')].map(td => td.textContent);
			return hs.length > 0 && hs.every(x => x === 'b');
		}, null, { timeout: 60000 });
		ok(true, 'host b: b\'s workers only');
		ok(errors.length === 0, 'no console error, no request leaving nprofd', errors.join('\n'));
	} catch (e) {
		await noteStop(page, errors, path.join(OUT, 'cluster-failed.png'));
		throw e;
	} finally {
		await browser.close();
	}
	done();
})().catch(e => { console.log('not ok - ' + e.message.split('\n')[0]); console.log('# ' + (e.stack || '').replace(/\n/g, '\n# ')); process.exit(1); });
