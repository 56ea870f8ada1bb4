// A flame graph's time range in a real browser. tests/integration/
// timeline.sh records `phases` (phase_one, then phase_two, each for a
// measured second of CPU) and writes its page; NPROF_TIMELINE_PAGE names
// it and NPROF_TIMELINE_SWITCH says when (seconds after the recording's
// start, from the program's own clock) phase_two began, NPROF_TIMELINE_END
// when it ended.
//
// Checked: the strip of samples over time is drawn; a range before the
// switch (given in the URL) is phase_one's alone, one after it phase_two's
// alone (>= 90 % each, the rest being the process starting and exiting);
// dragging over the strip redraws the graph for that part and says so;
// "Whole recording" gives every sample back; no console error.
'use strict';
const path = require('path');
const { ok, note, done, launch, newPage, artifactDir, screenshotNotBlank } = require('./lib');

const PAGE = process.env.NPROF_TIMELINE_PAGE;
const SWITCH = Number(process.env.NPROF_TIMELINE_SWITCH), END = Number(process.env.NPROF_TIMELINE_END);
const MARGIN = 0.15; // seconds kept away from the switch

async function open(browser, errors, hash) {
	const page = await newPage(browser, errors);
	await page.goto('file://' + PAGE + (hash || ''));
	await page.waitForFunction(() => window.nprofTimings && window.nprofTimings.drawn && window.nprofRange);
	return page;
}

// The share of the drawn tree that a search for name matches, in percent.
async function shareOf(page, name) {
	await page.fill('#search', '^' + name + '$');
	await page.press('#search', 'Enter');
	const m = /Matched: ([0-9.]+)%/.exec(await page.locator('#match').innerText());
	return m ? Number(m[1]) : -1;
}

async function main() {
	if (!PAGE || !(SWITCH > 0) || !(END > SWITCH)) {
		console.log('ok 1 # SKIP run by tests/integration/timeline.sh, which records the page');
		console.log('1..1');
		process.exit(0);
	}
	const browser = await launch();
	const errors = [];
	const dir = artifactDir();

	let page = await open(browser, errors);
	const whole = await page.evaluate(() => window.nprofRange);
	const strip = await page.locator('#strip').boundingBox();
	ok(strip && strip.width > 200 && strip.height >= 30, 'the strip of samples over time is shown',
		JSON.stringify(strip));
	ok(whole.total === whole.all && whole.all > 0, `with no range, every sample is drawn (${whole.all})`,
		JSON.stringify(whole));
	const both = [await shareOf(page, 'phase_one'), await shareOf(page, 'phase_two')];
	ok(both[0] > 25 && both[1] > 25, `the whole recording has both phases (${both.join('%, ')}%)`);
	await page.close();

	const first = `#range=0-${(SWITCH - MARGIN).toFixed(3)}`;
	page = await open(browser, errors, first);
	let r = await page.evaluate(() => window.nprofRange);
	let one = await shareOf(page, 'phase_one');
	ok(r.total < r.all && one >= 90,
		`${first}: phase_one is ${one}% of the ${r.total} samples drawn (of ${r.all})`, JSON.stringify(r));
	ok((await page.locator('#rangetext').innerText()).includes('of all'), 'the range and its share are named',
		await page.locator('#rangetext').innerText());
	await page.close();

	const second = `#range=${(SWITCH + MARGIN).toFixed(3)}-${(END - 0.02).toFixed(3)}`;
	page = await open(browser, errors, second);
	r = await page.evaluate(() => window.nprofRange);
	const two = await shareOf(page, 'phase_two');
	ok(r.total < r.all && two >= 90,
		`${second}: phase_two is ${two}% of the ${r.total} samples drawn (of ${r.all})`, JSON.stringify(r));

	// A drag over the strip's first fifth: a range that ends well before
	// the switch, drawn for that part alone.
	const box = await page.locator('#strip').boundingBox();
	const y = box.y + box.height / 2;
	await page.locator('#rangeclear').click();
	r = await page.evaluate(() => window.nprofRange);
	ok(r.total === r.all, '"Whole recording" gives every sample back', JSON.stringify(r));
	await page.mouse.move(box.x + 2, y);
	await page.mouse.down();
	await page.mouse.move(box.x + box.width * 0.1, y, { steps: 4 });
	await page.mouse.move(box.x + box.width * 0.2, y, { steps: 4 });
	await page.mouse.up();
	r = await page.evaluate(() => window.nprofRange);
	one = await shareOf(page, 'phase_one');
	ok(r.to / 1e9 < SWITCH && r.total > 0 && r.total < r.all / 2 && one >= 90,
		`a drag over the strip's first fifth draws ${(r.from / 1e9).toFixed(2)}-${(r.to / 1e9).toFixed(2)} s: ` +
		`${r.total} samples, phase_one ${one}%`, JSON.stringify(r));
	await screenshotNotBlank(browser, page, path.join(dir, 'timeline.png'), 'flame graph of a time range',
		{ screenshot: { fullPage: true } });
	await page.close();

	ok(errors.length === 0, 'no console errors, no requests', errors.join(' | '));
	await browser.close();
}

main().then(done, e => { ok(false, 'the test ran', e.stack); done(); });
