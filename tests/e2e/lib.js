// Shared by the browser tests: launching Debian's chromium through
// playwright-core, TAP output, and skipping cleanly when either is absent.
'use strict';
const fs = require('fs');
const path = require('path');

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
	'--disable-component-update', '--disable-sync', '--no-first-run'];

let count = 0, failed = 0;

// A failure says when it came, in seconds since the script started: a
// journey that ran out of its time limit shows where the time went
// (NPROF_E2E_TIMES=1 puts the time on every line).
const started = Date.now();
const elapsed = () => ((Date.now() - started) / 1000).toFixed(1);

function ok(cond, what, detail) {
	count++;
	if (!cond) failed++;
	console.log(`${cond ? 'ok' : 'not ok'} ${count} - ${what}` + (process.env.NPROF_E2E_TIMES ? ` [${elapsed()} s]` : ''));
	if (!cond) console.log(`#   (${elapsed()} s into the script)`);
	if (!cond && detail !== undefined) console.log('#   ' + String(detail).replace(/\n/g, '\n#   '));
	return cond;
}

function note(text) { console.log('# ' + text); }

function done() {
	note(`the script took ${elapsed()} s`);
	console.log(`1..${count}`);
	process.exit(failed ? 1 : 0);
}

// Returns playwright's chromium, or prints a SKIP and exits when the test
// cannot run here.
function requireBrowser() {
	let pw;
	try {
		pw = require('playwright-core');
	} catch (e) {
		console.log('ok 1 # SKIP playwright-core missing (cd tests/e2e && npm ci)');
		console.log('1..1');
		process.exit(0);
	}
	if (!fs.existsSync(CHROMIUM)) {
		console.log(`ok 1 # SKIP ${CHROMIUM} missing (apt-get install chromium)`);
		console.log('1..1');
		process.exit(0);
	}
	return pw.chromium;
}

// The directory the unit tests wrote their pages to (NPROF_E2E_DIR).
function artifactDir() {
	const dir = process.env.NPROF_E2E_DIR || path.join(__dirname, '../../build/e2e');
	return path.resolve(dir);
}

async function launch() {
	const chromium = requireBrowser();
	return chromium.launch({ executablePath: CHROMIUM, args: ARGS });
}

// A page that records console errors and uncaught exceptions, and refuses
// every request that is not for a local file: the pages must not need one.
async function newPage(browser, errors) {
	const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
	page.on('console', m => { if (m.type() === 'error') errors.push('console: ' + m.text()); });
	page.on('pageerror', e => errors.push('pageerror: ' + e.message));
	await page.route('**/*', route => {
		if (route.request().url().startsWith('file:')) return route.continue();
		errors.push('network: ' + route.request().url());
		return route.abort();
	});
	return page;
}

// The page's main-thread CPU time so far, in ms (Chromium's ThreadTime
// metric). Bars on the pages' speed compare CPU times the page spent,
// one action's against another's: wall time on a shared host measures
// the neighbours, and an absolute bar measures the machine.
async function cpuMeter(page) {
	const cdp = await page.context().newCDPSession(page);
	await cdp.send('Performance.enable');
	return async () => {
		const { metrics } = await cdp.send('Performance.getMetrics');
		return 1000 * metrics.find(m => m.name === 'ThreadTime').value;
	};
}

// Pixel statistics of a PNG (a screenshot's buffer), decoded by the
// browser: { width, height, colors: distinct colours, fg: fraction of pixels
// that differ from the most common colour (the background), sd: standard
// deviation of the luminance }. A blank or single-colour image has fg 0.
async function pixelStats(browser, png) {
	const page = await browser.newPage();
	try {
		return await page.evaluate(async b64 => {
			const img = new Image();
			img.src = 'data:image/png;base64,' + b64;
			await img.decode();
			const c = document.createElement('canvas');
			c.width = img.width;
			c.height = img.height;
			const g = c.getContext('2d');
			g.drawImage(img, 0, 0);
			return stats(g.getImageData(0, 0, c.width, c.height));
			function stats(im) {
				const d = im.data, n = d.length / 4, count = new Map();
				let sum = 0, sum2 = 0;
				for (let i = 0; i < d.length; i += 4) {
					const k = (d[i] << 16) | (d[i + 1] << 8) | d[i + 2];
					count.set(k, (count.get(k) || 0) + 1);
					const y = 0.299 * d[i] + 0.587 * d[i + 1] + 0.114 * d[i + 2];
					sum += y;
					sum2 += y * y;
				}
				const top = Math.max(...count.values());
				const mean = sum / n;
				return { width: im.width, height: im.height, colors: count.size, fg: 1 - top / n,
					sd: Math.sqrt(Math.max(0, sum2 / n - mean * mean)) };
			}
		}, png.toString('base64'));
	} finally {
		await page.close();
	}
}

// Takes a screenshot (saved to file) and checks that it is not blank: at
// least minColors distinct colours, minFg of the pixels off the background
// and a luminance standard deviation of at least 10.
async function screenshotNotBlank(browser, page, file, what, opts = {}) {
	const png = await page.screenshot(Object.assign({ path: file }, opts.screenshot || {}));
	const st = await pixelStats(browser, png);
	const minColors = opts.minColors || 8, minFg = opts.minFg || 0.02;
	ok(st.colors >= minColors && st.fg >= minFg && st.sd >= 10,
		`${what}: screenshot ${require('path').basename(file)} is not blank (${st.colors} colours, ` +
		`${(100 * st.fg).toFixed(1)}% off the background, luminance sd ${st.sd.toFixed(1)})`,
		JSON.stringify(st));
	return st;
}

// Watches an nprofd page: its console errors (but those expected(status,
// url) allows: the refusals a journey makes on purpose), uncaught errors,
// and any request leaving origin (aborted), each pushed to errors.
async function guardPage(page, origin, errors, expected = () => false) {
	page.on('console', m => {
		if (m.type() !== 'error') return;
		const loc = m.location() && m.location().url || '';
		const st = +((m.text().match(/status of (\d+)/) || [])[1]);
		if (expected(st, loc)) return;
		errors.push(`console: ${m.text()} (${loc})`);
	});
	page.on('pageerror', e => errors.push('pageerror: ' + e.message));
	await page.route('**/*', route => {
		const u = new URL(route.request().url());
		if (u.origin !== origin && u.protocol !== 'data:') {
			errors.push('a request leaves nprofd: ' + u.href);
			return route.abort();
		}
		return route.continue();
	});
}

// Where a journey stopped: a screenshot to file, the URL, the error lines
// the page shows and the errors guardPage saw.
async function noteStop(page, errors, file) {
	if (page) {
		await page.screenshot({ path: file }).catch(() => {});
		note('stopped at ' + page.url() + ` (screenshot ${require('path').basename(file)}); errors shown: ` +
			(await page.locator('.err.on').allInnerTexts().catch(() => [])).join(' | '));
	}
	if (errors.length) note('page errors: ' + errors.join(' | '));
}

// nprofd's page at url in a new page of browser, signed in as user with
// password: the page, guarded (guardPage: errors; the one refusal
// expected, GET /api/v1/session signed out), window.__noReload set to
// tell a reload.
async function signedIn(browser, url, user, password, errors) {
	const page = await browser.newPage({ viewport: { width: 1360, height: 860 } });
	await guardPage(page, new URL(url).origin, errors, (st, loc) => st === 401 && /\/api\/v1\/session$/.test(loc));
	await page.goto(url);
	await page.waitForSelector('#signin', { state: 'visible' });
	await page.evaluate(() => { window.__noReload = 1; });
	await page.fill('#signin-user', user);
	await page.fill('#signin-password', password);
	await page.click('#signin-submit');
	await page.waitForSelector('#nav', { state: 'visible', timeout: 10000 });
	return page;
}

module.exports = { ok, note, done, launch, newPage, artifactDir, pixelStats, screenshotNotBlank,
	guardPage, noteStop, cpuMeter, signedIn };
