// A service profile started from the workers page, the user's journey in
// a real browser (run by tests/integration/daemon_group_ui.sh): sign in
// (NPROF_E2E_USER, NPROF_E2E_PASSWORD) at NPROF_E2E_URL; filter the
// workers by the service NPROF_E2E_SERVICE (NPROF_E2E_PIDS: its
// workers' pids, space-separated), tick them all, and "Start as one
// profile" (cpu, 2 s): the panel's log follows that one instance until
// it ends and shows its files. The instances view lists it as one row
// ("N workers: ...") and none of its members; its page lists the
// members and draws its flame graph, in which every process has its
// root "[NAME pid=PID]". Every wait is bounded.
'use strict';
const path = require('path');
const { ok, done, launch, screenshotNotBlank, noteStop, signedIn } = require('./lib');

const URL_ = process.env.NPROF_E2E_URL;
const USER = process.env.NPROF_E2E_USER, PASSWORD = process.env.NPROF_E2E_PASSWORD;
const SERVICE = process.env.NPROF_E2E_SERVICE;
const PIDS = (process.env.NPROF_E2E_PIDS || '').split(/\s+/).filter(Boolean);
const OUT = process.env.NPROF_E2E_DIR || '.';

(async () => {
	const browser = await launch();
	const errors = [];
	let page = null, step = 0;
	const shot = async what => {
		step++;
		await screenshotNotBlank(browser, page, path.join(OUT, `group-${step}-${what.replace(/\W+/g, '-')}.png`), what);
	};
	try {
		page = await signedIn(browser, URL_, USER, PASSWORD, errors);

		// --- the service's workers, ticked ------------------------------------------------
		await page.click('#nav a[data-view=workers]');
		await page.fill('#w-filter', 'service:' + SERVICE);
		for (const pid of PIDS)
			await page.locator(`#w-body tr[data-id^="${pid}-"]`).waitFor({ timeout: 30000 });
		const together = '#w-actions-together';
		await page.check(`#w-body tr[data-id^="${PIDS[0]}-"] input[type=checkbox]`);
		ok(await page.isDisabled(together) && /two workers or more/.test(await page.getAttribute(together, 'title')),
			'with one worker ticked, "Start as one profile" waits for two: ' + await page.getAttribute(together, 'title'));
		await page.check('#w-all');
		const ticked = await page.$$eval('#w-body tr[data-id] input[type=checkbox]:checked', es => es.length);
		ok(ticked === PIDS.length, `"select all" ticks the service's ${PIDS.length} workers (${ticked})`);
		await page.waitForFunction(b => !document.querySelector(b).disabled, together, { timeout: 10000 });
		await page.selectOption('#w-actions-mode', 'cpu');
		await page.fill('#w-actions-duration', '2');
		await page.selectOption('#w-actions-unit', 's');
		await page.fill('#w-actions-interval', '1ms');
		await page.click(together);

		// --- one instance, followed until its files --------------------------------------
		const line = page.locator('#w-actions-log li').first();
		await page.waitForFunction(() => {
			const li = document.querySelector('#w-actions-log li');
			return li && /as one profile/.test(li.textContent) && li.querySelector('.arts a');
		}, null, { timeout: 60000 }).catch(() => {});
		const text = await line.innerText();
		const m = /cpu for 2s of (\d+) workers as one profile: instance (\d+) FINISHED/.exec(text);
		ok(m && +m[1] === PIDS.length, 'the log names one instance of every worker, FINISHED: ' + text);
		const G = m ? m[2] : '0';
		ok(await line.locator('a').count() > 1, 'and links its files: ' + text);
		ok(await page.$$eval('#w-actions-log li', ls => ls.filter(l => /as one profile/.test(l.textContent)).length) === 1,
			'one line, not one a worker');
		ok(await page.innerText('#w-actions-err') === '', 'no error shown');
		await shot('one profile started');

		// --- the instances view: one row ------------------------------------------------
		await page.click('#nav a[data-view=instances]');
		const row = page.locator(`#i-list tr[data-id="${G}"]`);
		await row.waitFor({ timeout: 30000 });
		const rowText = await row.innerText();
		ok(new RegExp(`${PIDS.length} workers`).test(rowText), `its row names it by its workers: ${rowText.replace(/\s+/g, ' ')}`);
		const members = await page.evaluate(async g => {
			const j = await (await fetch('/api/v1/instances?parent=' + g)).json();
			return j.instances.map(i => String(i.id));
		}, G);
		const shown = await page.$$eval('#i-list tr[data-id]', rs => rs.map(r => r.dataset.id));
		ok(members.length === PIDS.length && members.every(id => !shown.includes(id)),
			`its ${members.length} members have no row of their own [${shown.join(' ')}]`);

		// --- its page: members and flame graph ------------------------------------------
		await page.goto(`${URL_}#/instances/${G}`);
		await page.waitForSelector('#id-summary .members a', { timeout: 20000 });
		const memberLinks = await page.locator('#id-summary .members a').allInnerTexts();
		ok(memberLinks.length === PIDS.length && memberLinks.every(t => /FINISHED/.test(t)),
			'its page lists its members, each FINISHED: ' + memberLinks.join(' · '));
		const frame = page.frameLocator('#viewer-frame');
		await frame.locator('#canvas').waitFor({ timeout: 30000 });
		for (const pid of PIDS) {
			await frame.locator('#search').fill(`pid=${pid}]`);
			await frame.locator('#search').press('Enter');
			const matched = await frame.locator('#match').innerText();
			ok(/Matched: [1-9]/.test(matched), `its flame graph has the root of pid ${pid}`, matched);
		}
		await shot('service profile');
		ok(await page.evaluate(() => window.__noReload === 1), 'the journey without a reload');
		ok(errors.length === 0, 'no console error, no request leaving nprofd', errors.join('\n'));
	} catch (e) {
		await noteStop(page, errors, path.join(OUT, 'group-failed.png'));
		throw e;
	} finally {
		await browser.close();
	}
	done();
})().catch(e => { console.log('not ok - ' + e.message.split('\n')[0]); console.log('# ' + (e.stack || '').replace(/\n/g, '\n# ')); process.exit(1); });
