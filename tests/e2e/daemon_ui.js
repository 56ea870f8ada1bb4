// nprofd's web UI, the user's journey in a real browser (run by
// tests/integration/daemon_ui.sh): sign in with a user and password
// (NPROF_E2E_USER, NPROF_E2E_PASSWORD) at NPROF_E2E_URL; find split
// (pid NPROF_E2E_SPLIT) by the filter; start a 3 s cpu instance
// (NPROF_E2E_SECONDS: as long as it must be for RUNNING to be seen; a double
// click starts one); watch it go RUNNING -> FINISHED without a reload;
// open its flame graph in the page, find burn_sixty by its search and pick
// a time range on its strip of samples over time;
// take a thread dump of eight_threads (NPROF_E2E_EIGHT) and see its eight
// named threads; switch heap profiling on in a worker with the agent
// (NPROF_E2E_HEAP), make it allocate, take a heap snapshot and find its
// allocating function in it; restart a runit service's split (pid
// NPROF_E2E_SVC) through the confirmation and see its new pid; run an
// operator's command; a second Start while one runs shows the API's
// error by the button; stop a running instance; delete a dump file; a
// change without the CSRF token is refused; sign out; a second user
// (NPROF_E2E_USER2) signs in and sees none of the first one's workers,
// instances or files, not even by editing the URL. Throughout: no console error, no request that
// leaves nprofd's origin, a non-blank screenshot per step.
// With NPROF_E2E_HOST (tests/integration/cluster.sh), the page is that of
// one daemon of a cluster whose hosts are NPROF_E2E_HOSTS (itself first),
// and the workers run on host NPROF_E2E_HOST (their pids as that host
// sees them; NPROF_E2E_HEAP_SIGNAL: alloc_primes' pid as this script
// sees it): right after sign-in the host filter offers this host, every
// host and each other one, "every host" shows the host column with every
// host's workers, and then the filter is set to NPROF_E2E_HOST; every
// step after that (and the second user's) happens on that host's workers
// through this daemon's page, each request carrying ?host=; the host view
// shows that host's facts, asked of it; and a profile of the user's
// worker on NPROF_E2E_OTHER_HOST (pid NPROF_E2E_OTHER_PID there) is
// compared with one of NPROF_E2E_HOST's, picked on the instances page
// under "every host".
'use strict';
const fs = require('fs');
const path = require('path');
const { ok, note, done, launch, screenshotNotBlank, guardPage, noteStop } = require('./lib');

const URL_ = process.env.NPROF_E2E_URL;
const USER = process.env.NPROF_E2E_USER, PASSWORD = process.env.NPROF_E2E_PASSWORD;
const SPLIT = process.env.NPROF_E2E_SPLIT, EIGHT = process.env.NPROF_E2E_EIGHT;
const HEAP = process.env.NPROF_E2E_HEAP, SVC = process.env.NPROF_E2E_SVC;
const SPLIT2 = process.env.NPROF_E2E_SPLIT2;
const USER2 = process.env.NPROF_E2E_USER2, PASSWORD2 = process.env.NPROF_E2E_PASSWORD2;
const OUT = process.env.NPROF_E2E_DIR || '.';
const SECS = +(process.env.NPROF_E2E_SECONDS || 3);
const HOST = process.env.NPROF_E2E_HOST || '';
const HOSTS = (process.env.NPROF_E2E_HOSTS || '').split(/\s+/).filter(Boolean);
const HEAP_SIGNAL = process.env.NPROF_E2E_HEAP_SIGNAL || HEAP;
// With HOST, a worker of the user's on host OTHER (its pid there), whose
// profile is compared with one of HOST's.
const OTHER = process.env.NPROF_E2E_OTHER_HOST || '', OTHER_PID = process.env.NPROF_E2E_OTHER_PID || '';
// an item of OTHER's key in the page: its id alone when OTHER is the page's own host
const KO = id => OTHER === HOSTS[0] ? String(id) : `${OTHER}/${id}`;
// What names an item of HOST's: its key in the page (HOST/ID, hosts.js),
// a request about it (?host=), the end of a URL that has it.
const K = id => HOST ? `${HOST}/${id}` : String(id);
const onHost = p => HOST ? p + (p.includes('?') ? '&' : '?') + 'host=' + HOST : p;
const endsHost = re => new RegExp(re + (HOST ? `[?&]host=${HOST}` : '') + '$');

// The workers page's host filter set to HOST: its list, HOST's workers
// (mine: the user has some there) or none.
async function pickHost(page, mine) {
	await page.waitForSelector('#w-host', { state: 'visible', timeout: 30000 });
	await page.selectOption('#w-host', HOST);
	await page.waitForFunction(({ host, mine }) => {
		const hs = [...document.querySelectorAll('#w-body tr:not(.pad) td.c-host')].map(td => td.textContent);
		return hs.length > 0 === mine && hs.every(x => x === host);
	}, { host: HOST, mine }, { timeout: 60000 });
}

// A 3 s cpu instance of the first worker GET workers lists, started by
// POST instances from the page (its session, its CSRF token, as GET
// session gives it to the page): its id.
const startCpu = async (page, workers, instances) => page.evaluate(async ({ workers, instances }) => {
	const w = (await (await fetch(workers)).json()).workers[0];
	const { csrf } = await (await fetch('/api/v1/session')).json();
	const r = await fetch(instances, { method: 'POST', headers: {
		'Content-Type': 'application/json', 'X-CSRF-Token': csrf },
		body: JSON.stringify({ worker: w.id, mode: 'cpu', duration: '3s', interval: '1ms' }) });
	return (await r.json()).id;
}, { workers, instances });

(async () => {
	const origin = new URL(URL_).origin;
	for (const f of fs.readdirSync(OUT)) if (/^ui-.*\.png$/.test(f)) fs.unlinkSync(path.join(OUT, f));
	const browser = await launch();
	const errors = [];
	let step = 0, page = null;
	const shot = async (page, what) => {
		step++;
		await screenshotNotBlank(browser, page, path.join(OUT, `ui-${step}-${what.replace(/\W+/g, '-')}.png`), what);
	};
	try {
		page = await browser.newPage({ viewport: { width: 1360, height: 860 } });
		// Console errors, but the failed requests the journey makes on
		// purpose (Chromium logs each): GET /api/v1/session signed out (401),
		// a wrong password (401),
		// a second cpu instance (409), a POST without the CSRF token (403),
		// the deleted artifact (404).
		const expected = [[401, /\/api\/v1\/session$/],
			[409, endsHost('\\/api\\/v1\\/instances')], [403, endsHost('\\/api\\/v1\\/instances')],
			[404, endsHost('\\/api\\/v1\\/artifacts\\/\\w+\\?info=1')],
			[404, endsHost('\\/api\\/v1\\/instances\\/\\w+')]];
		await guardPage(page, origin, errors, (st, loc) => expected.some(([s, re]) => s === st && re.test(loc)));

		// --- sign in -----------------------------------------------------------
		const resp = await page.goto(URL_);
		ok(resp && resp.status() === 200, `the page loads (${resp && resp.status()})`);
		await page.waitForSelector('#signin', { state: 'visible' });
		await page.evaluate(() => { window.__noReload = 1; });
		await page.fill('#signin-user', USER);
		await page.fill('#signin-password', 'not-' + PASSWORD);
		await page.click('#signin-submit');
		await page.waitForSelector('#signin-err.on', { timeout: 10000 });
		ok(!(await page.isVisible('#nav')), 'a wrong password: still signed out, an error line: ' +
			await page.innerText('#signin-err'));
		await shot(page, 'sign-in refused');
		await page.fill('#signin-password', PASSWORD);
		await page.click('#signin-submit');
		await page.waitForSelector('#nav', { state: 'visible', timeout: 10000 });
		ok((await page.innerText('#me-name')).includes(USER), `signed in as ${USER}`);

		// --- several hosts: the host filter, every host, then HOST's --------------------
		if (HOST) {
			const hostsShown = () => page.evaluate(() => [...new Set([...document.querySelectorAll(
				'#w-body tr:not(.pad) td.c-host')].map(td => td.textContent))].sort().join(' '));
			await page.waitForSelector('#w-host', { state: 'visible', timeout: 30000 });
			const opts = await page.locator('#w-host option').allInnerTexts();
			const want = [`this host (${HOSTS[0]})`, 'every host', ...HOSTS.slice(1)].join('|');
			ok(opts.join('|') === want, `the host filter: ${want}`, opts.join('|'));
			await page.selectOption('#w-host', '*');
			await page.waitForFunction(hs => hs.every(h => [...document.querySelectorAll(
				'#w-body tr:not(.pad) td.c-host')].some(td => td.textContent === h)), HOSTS, { timeout: 60000 });
			ok(await page.isVisible('th.c-host'), `every host: the host column shows, with ${HOSTS.join(', ')}`,
				await hostsShown());
			await pickHost(page, true);
			ok(true, `host ${HOST}: ${HOST}'s workers only`);
			await shot(page, 'host filter');
		}

		// --- find split by the filter ------------------------------------------
		await page.waitForSelector(`#w-body tr >> text="${SPLIT}"`, { timeout: 10000 });
		await page.fill('#w-filter', 'split');
		const rows = page.locator('#w-body tr:not(.pad)');
		const srow = page.locator(`#w-body tr[data-id^="${K(SPLIT)}-"]`);
		await page.waitForFunction(() => [...document.querySelectorAll('#w-body tr:not(.pad)')]
			.every(r => /split/.test(r.textContent + r.querySelector('.c-name').title)), null, { timeout: 5000 })
			.catch(() => {});
		const texts = await rows.allInnerTexts();
		// "N of M": M, the workers the page listed before filtering
		const listed = +(await page.innerText('#w-count')).split(' of ')[1];
		ok(await srow.count() === 1 && texts.length < listed,
			`the filter "split" finds pid ${SPLIT} and hides the others`, texts.join(' | '));
		ok(page.url().includes('#/workers?q=split'), 'the filter is in the URL: ' + page.url());
		await srow.locator('input[type=checkbox]').check();
		await page.waitForFunction(() => !document.getElementById('w-actions-start').disabled);
		await shot(page, 'workers filtered');

		// --- a 3 s (SECS) cpu instance; a double click starts one ------------------------
		await page.selectOption('#w-actions-mode', 'cpu');
		ok((await page.getAttribute('#w-actions-mode option[value=cpu]', 'title')).includes('CPU'),
			'the cpu mode has its description on hover');
		await page.fill('#w-actions-duration', String(SECS));
		await page.selectOption('#w-actions-unit', 's');
		await page.fill('#w-actions-interval', '1ms');
		await page.dblclick('#w-actions-start');
		const link = page.locator('#w-actions-log a[href^="#/instances/"]');
		await link.first().waitFor({ timeout: 10000 });
		await page.waitForTimeout(500);
		const started = await page.evaluate(async ({ pid, url }) => {
			const r = await fetch(url);
			const j = await r.json();
			return j.instances.filter(i => i.pid === +pid && i.status === 'RUNNING').map(i => i.id);
		}, { pid: SPLIT, url: onHost('/api/v1/instances?limit=50') });
		ok(started.length === 1 && await link.count() === 1 && !(await page.isVisible('#w-actions-err')),
			'a double click on Start started one instance', JSON.stringify(started));
		const inst = started[0] || (await link.first().innerText()).replace('instance ', '');
		await shot(page, 'instance started');

		// --- RUNNING -> FINISHED in the instances table, without a reload --------------
		await page.click('#nav a[data-view=instances]');
		const row = page.locator(`#i-list tr[data-id="${K(inst)}"]`);
		// (its RUNNING row and countdown are checked below, on a one-minute
		// instance: a 3 s one can end before a loaded host draws the view)
		await row.waitFor({ timeout: 10000 });
		await shot(page, 'instance running');
		await page.waitForSelector(`#i-list tr[data-id="${K(inst)}"][data-status=FINISHED]`,
			{ timeout: 17000 + SECS * 1000 });
		ok(await page.evaluate(() => window.__noReload === 1), 'FINISHED arrived without a reload');
		// A tab in the background polls nothing; shown again, it does.
		let polls = 0;
		const countPolls = r => { if (/\/api\/v1\/instances(\?|\/|$)/.test(r.url())) polls++; };
		page.on('request', countPolls);
		const setHidden = h => page.evaluate(v => {
			Object.defineProperty(document, 'hidden', { value: v, configurable: true });
			document.dispatchEvent(new Event('visibilitychange'));
		}, h);
		await setHidden(true);
		await page.waitForTimeout(1500);
		polls = 0;
		await page.waitForTimeout(6000);
		const hiddenPolls = polls;
		await setHidden(false);
		await page.waitForTimeout(2500);
		ok(hiddenPolls === 0 && polls > 0,
			`the instances list asks nothing while the tab is hidden (${hiddenPolls} requests in 6 s), ` +
			`and again once shown (${polls})`);
		page.off('request', countPolls);
		ok(await row.locator('a.vlink', { hasText: 'flamegraph' }).count() === 1 &&
			await row.locator('a.dl').count() >= 1, 'its row links to a view and a download');
		await shot(page, 'instance finished');
		const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 20000 }),
			row.locator('a.dl').first().click()]);
		await dl.saveAs(path.join(OUT, 'ui-instance.pb.gz'));
		ok(/\.pb\.gz$/.test(dl.suggestedFilename()), 'the pprof download saved: ' + dl.suggestedFilename() +
			' (daemon_ui.sh opens it with go tool pprof)');

		// --- the flame graph in the page, its search -----------------------------------
		await row.locator('a.vlink', { hasText: 'flamegraph' }).click();
		await page.waitForSelector('#viewer-frame');
		const frame = page.frameLocator('#viewer-frame');
		await frame.locator('#canvas').waitFor({ timeout: 15000 });
		await frame.locator('#search').fill('burn_sixty');
		await frame.locator('#search').press('Enter');
		const m = await frame.locator('#match').innerText();
		ok(/Matched: [1-9]/.test(m), 'the flame graph in the page finds burn_sixty', m);
		ok(endsHost('#\\/instances\\/[^/]+\\/[^/]+\\/flamegraph').test(page.url()), 'the view has its URL: ' + page.url());
		await shot(page, 'flame graph');
		// A time range: a drag over the strip of samples over time redraws
		// the graph for that part (tests/integration/timeline.sh checks
		// what it holds against a program's own phases).
		const strip = frame.locator('#strip');
		await strip.scrollIntoViewIfNeeded();
		const sb = await strip.boundingBox();
		await page.mouse.move(sb.x + sb.width * 0.25, sb.y + sb.height / 2);
		await page.mouse.down();
		await page.mouse.move(sb.x + sb.width * 0.6, sb.y + sb.height / 2, { steps: 5 });
		await page.mouse.up();
		const rt = await frame.locator('#rangetext').innerText();
		const part = /\(([0-9.]+)% of all\)/.exec(rt);
		ok(part && Number(part[1]) > 0 && Number(part[1]) < 100, 'a time range picked on the strip: ' + rt);
		const inRange = await frame.locator('#match').innerText();
		ok(/Matched: [1-9]/.test(inRange), 'the graph of that range still finds burn_sixty', inRange);
		await shot(page, 'flame graph, time range');
		await page.click('.tabs a:text-is("tree")');
		await page.waitForFunction(re => new RegExp(re).test(document.getElementById('viewer-frame').src),
			endsHost('format=tree&inline=1').source);
		await page.frameLocator('#viewer-frame').locator('#search').waitFor({ timeout: 15000 });
		ok(endsHost('\\/tree').test(page.url()), 'the call tree in the page too: ' + page.url());
		await shot(page, 'call tree');
		await page.reload();
		await page.waitForSelector('#viewer-frame', { timeout: 10000 });
		ok(true, 'a reload keeps the flame graph view, signed in');
		await page.evaluate(() => { window.__noReload = 1; });

		// --- a thread dump of eight_threads ------------------------------------------
		await page.click('#nav a[data-view=workers]');
		await page.click('#w-clear');
		await page.fill('#w-filter', EIGHT);
		const erow = page.locator(`#w-body tr[data-id^="${K(EIGHT)}-"]`);
		await erow.waitFor({ timeout: 10000 });
		await erow.locator('input[type=checkbox]').check();
		await page.waitForFunction(() => !document.getElementById('w-actions-stacks').disabled);
		await page.click('#w-actions-stacks');
		const tview = page.locator('#w-actions-log li').first().locator('a.vlink', { hasText: 'threads' });
		await tview.waitFor({ timeout: 30000 });
		await tview.click();
		await page.waitForSelector('.tgroup', { timeout: 10000 });
		const names = await page.locator('.tname b').allInnerTexts();
		const want = ['poller-0', 'poller-1', 'poller-2', 'poller-3', 'waiter-0', 'waiter-1', 'waiter-2', 'waiter-3'];
		ok(want.every(n => names.includes(n)), 'the thread dump names the eight threads', names.join(', '));
		const blocked = await page.locator('li.blocking .fn').allInnerTexts();
		ok(['wait_in_poll', 'wait_for_work', 'main_wait'].every(f => blocked.includes(f)),
			'the blocking functions are highlighted', blocked.join(', '));
		const groups = await page.locator('.tgroup .count').allInnerTexts();
		ok(groups.includes('4×'), 'identical stacks are grouped (4 pollers, 4 waiters)', groups.join(' '));
		await shot(page, 'thread dump');
		await page.click('#nav a[data-view=workers]');
		await page.goBack();
		await page.waitForSelector('.tgroup', { timeout: 10000 });
		ok(endsHost('\\/threads').test(page.url()), 'Back returns to the thread dump, shown again: ' + page.url());

		// --- select one worker by pid (clearing the selection) ----------------------
		const only = async pid => {
			await page.click('#nav a[data-view=workers]');
			await page.click('#w-clear');
			await page.fill('#w-filter', String(pid));
			const r = page.locator(`#w-body tr[data-id^="${K(pid)}-"]`);
			// Another host's list comes through this daemon, polled every
			// 2 s: on a loaded host one answer took longer than 10 s
			// (CI). A wait past 10 s is noted; one past 30 s says what
			// the page showed.
			const t0 = Date.now();
			await r.waitFor({ timeout: 30000 }).catch(async e => {
				const seen = await page.evaluate(() => ({
					host: document.getElementById('w-host').value,
					err: document.getElementById('w-err').textContent,
					rows: [...document.querySelectorAll('#w-body tr[data-id]')].map(t => t.dataset.id).slice(0, 12),
				}));
				throw new Error(`worker ${K(pid)} not listed in 30 s: ${JSON.stringify(seen)}; ${e.message}`);
			});
			if (Date.now() - t0 > 10000) note(`worker ${K(pid)} was listed after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
			await r.locator('input[type=checkbox]').check();
			return r;
		};
		const lastLog = () => page.locator('#w-actions-log li').first();
		const waitLog = async (re, ms) => page.waitForFunction(re => {
			const li = document.querySelector('#w-actions-log li');
			return li && new RegExp(re).test(li.textContent);
		}, re, { timeout: ms || 30000 });

		// --- heap profiling on, a heap snapshot, off --------------------------------
		await only(HEAP);
		await page.waitForFunction(() => !document.getElementById('w-actions-heap-on').disabled, null, { timeout: 10000 })
			.catch(() => {});
		ok(!(await page.isDisabled('#w-actions-heap-on')) && !(await page.isDisabled('#w-actions-heapdump')),
			'a worker with the agent: heap profiling and heap snapshot enabled',
			await page.getAttribute('#w-actions-heap-on', 'title'));
		await page.fill('#w-actions-interval', '');
		await page.click('#w-actions-heap-on');
		await waitLog('heap profiling on', 15000);
		ok(!(await page.isVisible('#w-actions-err')), 'heap profiling on: ' + await lastLog().innerText(),
			await page.innerText('#w-actions-err').catch(() => ''));
		process.kill(+HEAP_SIGNAL, 'SIGUSR1');	// alloc_primes allocates now
		await page.waitForTimeout(1000);
		await page.click('#w-actions-heapdump');
		const hview = lastLog().locator('a.vlink', { hasText: 'flamegraph' });
		await hview.waitFor({ timeout: 30000 });
		await hview.click();
		const hframe = page.frameLocator('#viewer-frame');
		await hframe.locator('#canvas').waitFor({ timeout: 15000 });
		await hframe.locator('#search').fill('make_a');
		await hframe.locator('#search').press('Enter');
		const hm = await hframe.locator('#match').innerText();
		ok(/Matched: [1-9]/.test(hm), 'the heap snapshot as a flame graph holds make_a', hm);
		await shot(page, 'heap snapshot');
		await only(HEAP);
		await page.click('#w-actions-heap-off');
		await waitLog('heap profiling off', 15000);
		ok(!(await page.isVisible('#w-actions-err')), 'heap profiling off: ' + await lastLog().innerText());

		// --- the agent attached to split, started without it, and detached --------------
		const splitRow = await only(SPLIT);
		await page.waitForFunction(() => !document.getElementById('w-actions-attach').disabled, null,
			{ timeout: 10000 }).catch(() => {});
		ok(!(await page.isDisabled('#w-actions-attach')) && await page.isDisabled('#w-actions-detach') &&
			await page.isDisabled('#w-actions-heap-on'),
			'split without the agent: Attach agent enabled; Detach and heap profiling not, saying why',
			await page.getAttribute('#w-actions-heap-on', 'title'));
		await page.click('#w-actions-attach');
		await waitLog('agent loaded', 20000);
		ok(/agent loaded/.test(await lastLog().innerText()), 'Attach agent: ' + await lastLog().innerText());
		await page.waitForFunction(k => {
			const r = document.querySelector(`#w-body tr[data-id^="${k}-"] td.c-agent`);
			return r && r.textContent === 'yes';
		}, K(SPLIT), { timeout: 10000 }).catch(() => {});
		ok(await splitRow.locator('td.c-agent').innerText() === 'yes',
			'the workers table shows the agent in split without a reload');
		await page.waitForFunction(() => !document.getElementById('w-actions-detach').disabled, null,
			{ timeout: 10000 }).catch(() => {});
		await shot(page, 'agent attached');
		await page.click('#w-actions-detach');
		await waitLog('idle', 20000);
		ok(/idle/.test(await lastLog().innerText()), 'Detach agent: ' + await lastLog().innerText());

		// --- an operator's command ----------------------------------------------------
		await only(SPLIT);
		await page.waitForSelector('#w-actions-cmd-hello:not([disabled])', { timeout: 10000 });
		ok((await page.getAttribute('#w-actions-cmd-hello', 'title')) === 'says hello to the worker',
			'the operator\'s command "hello" is a button, its description on hover');
		await page.click('#w-actions-cmd-hello');
		await waitLog('FINISHED', 20000);
		ok(true, 'the command ran: ' + await lastLog().innerText());

		// --- an error by its button; Stop ---------------------------------------------
		await page.fill('#w-actions-duration', '1');
		await page.selectOption('#w-actions-unit', 'm');
		await page.fill('#w-actions-interval', '');
		await page.click('#w-actions-start');
		await waitLog('RUNNING', 10000);
		await page.waitForFunction(() => !document.getElementById('w-actions-start').disabled);
		await page.click('#w-actions-start');
		await page.waitForSelector('#w-actions-err.on', { timeout: 10000 });
		const e409 = await page.innerText('#w-actions-err');
		ok(/split/.test(e409) && /instance/.test(e409), 'a second cpu instance: the API\'s error on one line by the buttons', e409);
		await shot(page, 'error by the button');
		await page.click('#nav a[data-view=instances]');
		const running = page.locator('#i-list tr[data-status=RUNNING]');
		await running.first().waitFor({ timeout: 10000 });
		const rid = await running.first().getAttribute('data-id');
		const st0 = await running.first().locator('.status').innerText();
		ok(/RUNNING/.test(st0), `instance ${rid} shows RUNNING with a countdown: ${st0}`);
		ok(/left/.test(st0), 'the countdown shows the time left');
		await page.waitForFunction(({ id, was }) => {
			const s = document.querySelector(`#i-list tr[data-id="${id}"] .status`);
			return s && s.textContent !== was;
		}, { id: rid, was: st0 }, { timeout: 5000 }).catch(() => {});
		const st1 = await page.locator(`#i-list tr[data-id="${rid}"] .status`).innerText();
		ok(st1 !== st0 && /left/.test(st1), `the countdown ticks: ${st0} -> ${st1}`);
		await running.first().locator('button', { hasText: 'Stop' }).click();
		await page.waitForSelector(`#i-list tr[data-id="${rid}"][data-status=STOPPED]`, { timeout: 20000 });
		ok(true, `Stop: instance ${rid} STOPPED`);

		// --- compare: split (6:3:1) against split --ratio 1:3:6 ---------------------------------
		const inst2 = await startCpu(page, onHost('/api/v1/workers?pid=' + SPLIT2), onHost('/api/v1/instances'));
		await page.waitForSelector(`#i-list tr[data-id="${K(inst2)}"][data-status=FINISHED]`, { timeout: 20000 });
		ok(await page.isDisabled('#i-compare'), 'Compare waits for two ticked profiles');
		await page.check(`#i-list tr[data-id="${K(inst)}"] input.pick`);
		await page.check(`#i-list tr[data-id="${K(inst2)}"] input.pick`);
		await page.click('#i-compare');
		ok(endsHost('#\\/compare\\/\\d+\\/\\d+').test(page.url()), 'Compare opens the comparison, with its URL: ' + page.url());
		const diffFrame = page.frameLocator('#c-viewer iframe');
		const top = diffFrame.locator('#difftable tbody tr').first();
		await top.waitFor({ timeout: 30000 });
		const topText = await top.innerText();
		const diffRows = await diffFrame.locator('#difftable tbody tr').allInnerTexts();
		const line = f => diffRows.find(r => r.includes(f)) || '';
		ok(/burn_sixty|burn_ten/.test(topText), 'the function that changed most heads the table: ' + topText.replace(/\s+/g, ' '));
		ok(/\u2212\d/.test(line('burn_sixty')) && /\+\d/.test(line('burn_ten')),
			'burn_sixty shrank, burn_ten grew: ' + line('burn_sixty').replace(/\s+/g, ' ') + ' / ' +
			line('burn_ten').replace(/\s+/g, ' '));
		await shot(page, 'compare');

		// --- several hosts: a profile of OTHER's against HOST's -------------------------------
		if (OTHER_PID) {
			const instO = await startCpu(page, `/api/v1/workers?pid=${OTHER_PID}&host=${OTHER}`,
				`/api/v1/instances?host=${OTHER}`);
			await page.click('#nav a[data-view=instances]');
			await page.selectOption('#i-host', '*');
			await page.waitForSelector(`#i-list tr[data-id="${KO(instO)}"][data-status=FINISHED]`,
				{ timeout: 30000 });
			await page.check(`#i-list tr[data-id="${K(inst)}"] input.pick`);
			await page.check(`#i-list tr[data-id="${KO(instO)}"] input.pick`);
			await page.click('#i-compare');
			ok(/#\/compare\/\d+\/\d+\?before_host=\w+&after_host=\w+$/.test(page.url()),
				`two hosts' profiles compared, with their hosts in the URL: ${page.url()}`);
			const rowsO = page.frameLocator('#c-viewer iframe').locator('#difftable tbody tr');
			await rowsO.first().waitFor({ timeout: 30000 });
			const textO = (await rowsO.allInnerTexts()).join('\n');
			ok(/burn_sixty/.test(textO) && /wall_compute/.test(textO),
				`${HOST}'s split against ${OTHER}'s wall_split: burn_sixty and wall_compute in the table`,
				textO.slice(0, 300));
			await shot(page, 'compare two hosts');
			// Under every host a worker is named with its host, and
			// picking one picks its host: two hosts' workers may share
			// an id (each host has its own PID namespace here).
			await page.click('#nav a[data-view=instances]');
			const row = `#i-list tr[data-id="${K(inst)}"]`;
			await page.waitForSelector(row);
			const wid = await page.getAttribute(`${row} td.c-worker a`, 'title');
			const opt = await page.locator(`#i-worker option[value="${HOST}/${wid}"]`).innerText().catch(() => '');
			ok(opt.endsWith(` on ${HOST}`), `every host: the worker menu names ${HOST}'s worker with its host: ${opt}`);
			await page.selectOption('#i-worker', `${HOST}/${wid}`);
			// until the list is that worker's (the one before stays until
			// the new one arrives, and a list may be empty or another
			// filter's on the way: an answer in flight when the filter
			// changed is drawn too)
			await page.waitForFunction(([h, want, not]) => {
				const ids = [...document.querySelectorAll('#i-list tr[data-id]')].map(r => r.dataset.id);
				return document.getElementById('i-host').value === h && ids.includes(want) &&
					ids.every(id => id.startsWith(h + '/') && !not.includes(id));
			}, [HOST, K(inst), [K(inst2), KO(instO)]], { timeout: 30000 }).catch(() => {});
			const shown = await page.$$eval('#i-list tr[data-id]', rs => rs.map(r => r.dataset.id));
			ok(await page.inputValue('#i-host') === HOST && endsHost(`#\\/instances\\?worker=${wid}`).test(page.url()) &&
				shown.includes(K(inst)) && !shown.includes(K(inst2)) && !shown.includes(KO(instO)),
				`picking it shows that worker's instances on ${HOST} alone: ${page.url()} [${shown.join(' ')}]`);
			await page.selectOption('#i-worker', '');
			await page.selectOption('#i-host', HOST);
		}

		// --- restart a runit service, with the confirmation ---------------------------------
		await only(SVC);
		await page.waitForFunction(() => !document.getElementById('w-actions-restart').disabled, null, { timeout: 10000 });
		await page.click('#w-actions-restart');
		await page.waitForSelector('#confirm[open]');
		const says = await page.innerText('#confirm');
		ok(says.includes('split_sv') && says.includes(`pid ${SVC}`) && /new one is started/.test(says),
			'Restart asks first, naming the worker and what will happen', says);
		await shot(page, 'restart confirmation');
		await page.click('#confirm-ok');
		await waitLog('came back as', 40000);
		const back = await lastLog().innerText();
		const m2 = back.match(/came back as pid (\d+)/);
		ok(m2 && m2[1] !== SVC, `restarted: ${back}`);
		if (m2) {
			await page.fill('#w-filter', 'split_sv');
			await page.waitForSelector(`#w-body tr[data-id^="${K(m2[1])}-"]`, { timeout: 10000 });
			ok(await page.locator(`#w-body tr[data-id^="${K(SVC)}-"]`).count() === 0,
				`the workers table shows the new pid ${m2[1]}, not ${SVC}`);
		}
		await shot(page, 'restarted');

		// --- one worker's page: its facts, reasons and history -------------------------------
		const srow2 = await only(SPLIT);
		await srow2.locator('.c-name a').click();
		await page.waitForFunction(() => /split/.test(document.getElementById('wd-facts').textContent));
		await page.waitForSelector('#wd-instances tr[data-id]', { timeout: 10000 });
		ok(await page.locator('#wd-instances tr[data-id]').count() >= 3 && (await page.innerText('#wd-why')).length > 0,
			`split's page: its facts, why some actions are unavailable, its ${await page.locator('#wd-instances tr[data-id]').count()} instances`);
		await shot(page, 'worker page');

		// --- CSRF: a change without the token is refused ----------------------------------
		const csrf = await page.evaluate(async url => (await fetch(url, { method: 'POST',
			headers: { 'Content-Type': 'application/json' }, body: '{"worker": "1-1"}' })).status,
			onHost('/api/v1/instances'));
		ok(csrf === 403, `a POST without X-CSRF-Token: ${csrf}`);

		// --- files (delete one), host, sign out ---------------------------------------------
		await page.click('#nav a[data-view=files]');
		await page.waitForSelector('.fgroup', { timeout: 10000 });
		ok(await page.locator('.fgroup').count() >= 2, 'my dump files: grouped by worker');
		await shot(page, 'dump files');
		const files = page.locator('.fgroup tbody tr');
		const nfiles = await files.count();
		const victim = await files.first().getAttribute('data-id');
		await files.first().locator('button', { hasText: 'Delete' }).click();
		await page.waitForSelector('#confirm[open]');
		await page.click('#confirm-ok');
		await page.waitForSelector(`.fgroup tbody tr[data-id="${victim}"]`, { state: 'detached', timeout: 10000 });
		const gone = await page.evaluate(async url => (await fetch(url)).status,
			onHost('/api/v1/artifacts/' + victim.split('/').pop() + '?info=1'));
		ok(gone === 404, `Delete removed artifact ${victim} (${nfiles} files before; now ${gone})`);
		await page.click('#nav a[data-view=host]');
		await page.waitForFunction(() => document.getElementById('host-me').textContent.length > 0);
		await page.waitForSelector('#host-caps p', { timeout: 10000 });
		ok((await page.innerText('#host-me')).includes(USER), 'the host view says who you are');
		await page.waitForSelector('#host-facts .means', { timeout: 10000 });
		const facts = await page.innerText('#host-facts');
		ok(facts.includes(process.env.NPROF_E2E_KERNEL) && /perf_event_paranoid/.test(facts),
			'its kernel, CPUs and what perf, ptrace and the agent allow, in words: ' +
			(await page.innerText('#host-facts .means')).slice(0, 80));
		if (HOST)
			ok((await page.innerText('#host-facts h2')) === `Host ${HOST}` &&
				(await page.innerText('#host-me')).includes(`${HOST} (through ${HOSTS[0]})`),
				`the host view shows host ${HOST}, asked through ${HOSTS[0]}`);
		ok(/worker\(s\) you may act on/.test(await page.innerText('#host-caps')),
			'and what your workers allow: ' + (await page.innerText('#host-caps')).split('\n')[0]);
		await shot(page, 'host');
		ok(await page.evaluate(() => window.__noReload === 1), 'the whole journey without a reload');
		await page.click('#signout');
		await page.waitForSelector('#signin', { state: 'visible', timeout: 10000 });
		const after = await page.evaluate(async () => (await fetch('/api/v1/session')).status);
		ok(after === 401, `signed out: GET /api/v1/session is ${after}`);

		// --- another user sees nothing of the first one's --------------------------------
		if (USER2) {
			await page.fill('#signin-user', USER2);
			await page.fill('#signin-password', PASSWORD2);
			await page.click('#signin-submit');
			await page.waitForSelector('#nav', { state: 'visible', timeout: 10000 });
			await page.click('#nav a[data-view=workers]');
			if (HOST)
				await pickHost(page, false);	// USER2 has no worker there
			await page.waitForFunction(() => /of \d+$/.test(document.getElementById('w-count').textContent));
			await page.waitForTimeout(500);
			// the owners of the workers the page lists (its request, HOST's with HOST)
			const seen2 = await page.evaluate(async url => (await (await fetch(url)).json()).workers.map(w => w.user),
				onHost('/api/v1/workers'));
			ok(!seen2.includes(USER) && await page.locator(`#w-body tr[data-id^="${K(SPLIT)}-"]`).count() === 0,
				`${USER2} sees none of ${USER}'s workers (${seen2.length} listed)`);
			await page.goto(URL_.replace(/\/?$/, '/') + onHost(`#/instances/${inst}`));
			await page.waitForSelector('#id-err.on', { timeout: 10000 });
			ok(/404|no such|not found|instance/i.test(await page.innerText('#id-err')) &&
				await page.locator('#viewer-frame').count() === 0,
				`${USER2} opening ${USER}'s instance by URL: ` + await page.innerText('#id-err'));
			await page.click('#nav a[data-view=files]');
			await page.waitForFunction(() => /files?,/.test(document.getElementById('f-count').textContent));
			ok(await page.locator('.fgroup').count() === 0, `${USER2}'s dump files: none of ${USER}'s`);
			await shot(page, 'second user');
			await page.click('#signout');
			await page.waitForSelector('#signin', { state: 'visible', timeout: 10000 });
		}
		ok(errors.length === 0, 'no console error, no request leaving nprofd', errors.join('\n'));
	} catch (e) {
		await noteStop(page, errors, path.join(OUT, 'ui-failed.png'));
		throw e;
	} finally {
		await browser.close();
	}
	done();
})().catch(e => { console.log('not ok - ' + e.message.split('\n')[0]); console.log('# ' + (e.stack || '').replace(/\n/g, '\n# ')); process.exit(1); });
