// Shared by the browser tests: launching Debian's chromium through
// playwright-core, TAP output, and skipping cleanly when either is absent.
'use strict';
const fs = require('fs');
const path = require('path');

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
	'--disable-component-update', '--disable-sync', '--no-first-run'];

let count = 0, failed = 0;

function ok(cond, what, detail) {
	count++;
	if (!cond) failed++;
	console.log(`${cond ? 'ok' : 'not ok'} ${count} - ${what}`);
	if (!cond && detail !== undefined) console.log('#   ' + String(detail).replace(/\n/g, '\n#   '));
	return cond;
}

function note(text) { console.log('# ' + text); }

function done() {
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

module.exports = { ok, note, done, launch, newPage, artifactDir };
