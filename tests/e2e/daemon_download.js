// A flame graph as nprofd serves it, in a real browser: the page comes
// from GET /api/v1/artifacts/ID?format=flamegraph over nprofd's HTTP
// listener with a bearer token (NPROF_E2E_URL, NPROF_E2E_TOKEN), draws
// its canvas, and its search finds the frame NPROF_E2E_FRAME. Run by
// tests/integration/daemon_api.sh, not by e2e.sh.
'use strict';
const path = require('path');
const { ok, done, launch, screenshotNotBlank } = require('./lib');

(async () => {
	const url = process.env.NPROF_E2E_URL, token = process.env.NPROF_E2E_TOKEN;
	const frame = process.env.NPROF_E2E_FRAME || 'main';
	const browser = await launch();
	const errors = [];
	try {
		const page = await browser.newPage({ viewport: { width: 1280, height: 800 },
			extraHTTPHeaders: { Authorization: 'Bearer ' + token } });
		page.on('pageerror', e => errors.push('pageerror: ' + e.message));
		// The page is whole: nothing but the download itself is fetched.
		await page.route('**/*', route => {
			if (route.request().url() === url) return route.continue();
			errors.push('network: ' + route.request().url());
			return route.abort();
		});
		const resp = await page.goto(url);
		ok(resp && resp.status() === 200, `nprofd serves the flame graph (status ${resp && resp.status()})`);
		await page.waitForSelector('#canvas');
		await screenshotNotBlank(browser, page, path.join(process.env.NPROF_E2E_DIR || '.', 'daemon-flame.png'),
			'the served flame graph');
		await page.fill('#search', frame);
		await page.press('#search', 'Enter');
		const m = await page.locator('#match').innerText();
		ok(/Matched: [1-9]/.test(m), `its search finds ${frame}`, m);
		ok(errors.length === 0, 'no page errors, no other request', errors.join('; '));
	} finally {
		await browser.close();
	}
	done();
})().catch(e => { console.log('not ok - ' + e.message); process.exit(1); });
