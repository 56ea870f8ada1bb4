// The Services view, the user's journey in a real browser (run by
// tests/integration/daemon_services_ui.sh): sign in (NPROF_E2E_USER,
// NPROF_E2E_PASSWORD) at NPROF_E2E_URL; open Services, pick the service
// NPROF_E2E_SERVICE (split's, which a schedule records every 2 s) in
// mode cpu; its timeline shows bars, then more recordings and bars
// without a reload; a drag across the bars shows that range's flame
// graph, where burn_sixty is found; two ranges kept as before and after
// open the compare view, whose table names burn_sixty. Every wait is
// bounded; the bars' growth is waited for by the schedule's periods,
// not by a count of anything.
'use strict';
const path = require('path');
const { ok, done, launch, screenshotNotBlank, noteStop, signedIn } = require('./lib');

const URL_ = process.env.NPROF_E2E_URL;
const USER = process.env.NPROF_E2E_USER, PASSWORD = process.env.NPROF_E2E_PASSWORD;
const SERVICE = process.env.NPROF_E2E_SERVICE;
const OUT = process.env.NPROF_E2E_DIR || '.';

(async () => {
	const browser = await launch();
	const errors = [];
	let page = null, step = 0;
	const shot = async what => {
		step++;
		await screenshotNotBlank(browser, page, path.join(OUT, `services-${step}-${what.replace(/\W+/g, '-')}.png`), what);
	};
	try {
		page = await signedIn(browser, URL_, USER, PASSWORD, errors);

		// --- the timeline, filling in -------------------------------------------------
		await page.click('#nav a[data-view=services]');
		ok(/#\/services$/.test(page.url()), 'the nav opens the Services view: ' + page.url());
		await page.waitForSelector(`#s-service option[value="${SERVICE}"]`, { state: 'attached', timeout: 10000 });
		await page.selectOption('#s-service', SERVICE);
		await page.selectOption('#s-mode', 'cpu');
		const bars = () => page.evaluate(() => +(document.getElementById('s-timeline').dataset.bars || 0));
		const recordings = () => page.evaluate(() => +(/^(\d+) recordings/.exec(
			document.getElementById('s-count').textContent) || [0, 0])[1]);
		await page.waitForFunction(() => +(document.getElementById('s-timeline').dataset.bars || 0) > 0, null,
			{ timeout: 20000 });
		const n0 = await bars(), r0 = await recordings();
		ok(n0 > 0 && r0 > 0, `the timeline of ${SERVICE} shows bars (${n0}, of ${r0} recordings)`,
			await page.innerText('#s-count'));
		await shot('timeline');
		// a recording ends every 2 s: a poll (4 s) later there are more; a
		// bar of 15 s more within a few of them
		await page.waitForFunction(r => +(/^(\d+) recordings/.exec(
			document.getElementById('s-count').textContent) || [0, 0])[1] > r, r0, { timeout: 30000 });
		await page.waitForFunction(n => +(document.getElementById('s-timeline').dataset.bars || 0) > n, n0,
			{ timeout: 60000 });
		ok(await page.evaluate(() => window.__noReload === 1),
			`it fills in without a reload: ${await recordings()} recordings, ${await bars()} bars`);

		// --- a range's flame graph -----------------------------------------------------
		const boxes = await page.$$eval('#s-svg rect.tl-bar', els => els.map(e => {
			const b = e.getBoundingClientRect();
			return { left: b.left, right: b.right, y: b.top + b.height / 2 };
		}));
		const svgBox = await page.locator('#s-svg').boundingBox();
		const y = svgBox.y + svgBox.height / 2;
		const drag = async (x0, x1) => {
			await page.mouse.move(x0, y);
			await page.mouse.down();
			await page.mouse.move((x0 + x1) / 2, y, { steps: 3 });
			await page.mouse.move(x1, y, { steps: 3 });
			await page.mouse.up();
		};
		const first = boxes[0], last = boxes[boxes.length - 1];
		await drag(first.left - 3, last.right + 3);
		await page.waitForSelector('#s-frame', { timeout: 10000 });
		ok(/\d/.test(await page.innerText('#s-range')), 'a drag picks a range: ' + await page.innerText('#s-range'));
		const fg = page.frameLocator('#s-frame');
		await fg.locator('#canvas').waitFor({ timeout: 30000 });
		await fg.locator('#search').fill('burn_sixty');
		await fg.locator('#search').press('Enter');
		const m = await fg.locator('#match').innerText();
		ok(/Matched: [1-9]/.test(m), "the range's flame graph finds burn_sixty", m);
		await shot('range flame graph');

		// --- two ranges compared ----------------------------------------------------------
		const mid = boxes[Math.floor(boxes.length / 2)];
		await drag(first.left - 3, mid.left - 1);
		await page.click('#s-before');
		await drag(mid.left + 1, last.right + 3);
		await page.click('#s-after');
		ok(!(await page.isDisabled('#s-compare')), 'with a before and an after, Compare is offered');
		await page.click('#s-compare');
		await page.waitForSelector('#view-compare', { state: 'visible', timeout: 10000 });
		ok(/#\/compare\?service=.*&bf=\d+&bu=\d+&af=\d+&au=\d+$/.test(page.url()),
			'Compare opens the compare view with both ranges in its URL: ' + page.url());
		const diff = page.frameLocator('#c-viewer iframe');
		await diff.locator('#difftable tbody tr').first().waitFor({ timeout: 60000 });
		const rows = await diff.locator('#difftable tbody tr').allInnerTexts();
		ok(rows.some(r => r.includes('burn_sixty')), `the two ranges compared: burn_sixty in the table (${rows.length} rows)`);
		ok(/\(before\).*\(after\)/.test(await page.innerText('#c-title')), 'titled with both ranges: ' +
			await page.innerText('#c-title'));
		await shot('ranges compared');
		ok(await page.evaluate(() => window.__noReload === 1), 'the whole journey without a reload');
		ok(errors.length === 0, 'no console error, no request leaving nprofd', errors.join('\n'));
	} catch (e) {
		await noteStop(page, errors, path.join(OUT, 'services-failed.png'));
		throw e;
	} finally {
		await browser.close();
	}
	done();
})().catch(e => { console.log('not ok - ' + e.message.split('\n')[0]); console.log('# ' + (e.stack || '').replace(/\n/g, '\n# ')); process.exit(1); });
