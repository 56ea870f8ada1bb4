// series.js: a service's timeline in numbers — the bars a series reply
// draws, the range a drag picks (whole steps, within the range), the
// queries of a range and of two ranges, and the services offered.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spanRange, seriesUrl, profileUrl, rangesDiffUrl, compareHash, rangesOf, bars, rangeAt, spanAt,
	serviceNames, whyNoCompare } from '../../src/daemon/ui/series.js';

const T0 = Date.parse('2026-12-02T14:00:00Z');
// an hour by 15 s, as nprofd answers it: three points with samples
const reply = {
	service: 'web', mode: 'cpu', from: '2026-12-02T14:00:00.000Z', until: '2026-12-02T15:00:00.000Z', step: 15,
	unit: 'count', recordings: 2,
	points: [{ t: '2026-12-02T14:00:00.000Z', value: 10 }, { t: '2026-12-02T14:00:15.000Z', value: 0 },
		{ t: '2026-12-02T14:30:00.000Z', value: 40 }, { t: '2026-12-02T14:59:45.000Z', value: 20 }],
};

test('spanRange: the last hour or day before now', () => {
	assert.deepEqual(spanRange('hour', T0), { from: T0 - 3600e3, until: T0 });
	assert.deepEqual(spanRange('day', T0), { from: T0 - 86400e3, until: T0 });
	assert.deepEqual(spanRange('week', T0), { from: T0 - 3600e3, until: T0 }, 'an unknown span is an hour');
});

test('bars: one per point with a value, placed by its time, as tall as its share of the highest', () => {
	const { bars: b, max } = bars(reply, 1200, 100);
	assert.equal(max, 40);
	assert.deepEqual(b.map(x => [x.x, x.w, x.h, x.value]), [[0, 5, 25, 10], [600, 5, 100, 40], [1195, 5, 50, 20]]);
	assert.deepEqual(bars({ ...reply, points: [] }, 1200, 100), { bars: [], max: 0 }, 'nothing recorded: no bar');
});

test('rangeAt: a drag, either way, widened to whole steps and kept within the range; a click is none', () => {
	// 300 px to 600 px of 1200: 14:15 to 14:30
	assert.deepEqual(rangeAt(reply, 1200, 300, 600), { from: T0 + 900e3, until: T0 + 1800e3 });
	assert.deepEqual(rangeAt(reply, 1200, 601, 299), { from: T0 + 885e3, until: T0 + 1815e3 });
	assert.deepEqual(rangeAt(reply, 1200, -50, 2000), { from: T0, until: T0 + 3600e3 });
	assert.equal(rangeAt(reply, 1200, 300, 300.5), null);
	assert.deepEqual(spanAt(reply, 1200, { from: T0 + 900e3, until: T0 + 1800e3 }), { x: 300, w: 300 });
});

test('the queries: the series, a range flame graph, two ranges compared, and back from the address', () => {
	const sel = { service: 'queue worker', mode: 'cpu' }, r = { from: T0, until: T0 + 60e3 };
	assert.equal(seriesUrl(sel, r), '/api/v1/profiles/series?service=queue+worker&mode=cpu&' +
		'from=2026-12-02T14%3A00%3A00.000Z&until=2026-12-02T14%3A01%3A00.000Z');
	assert.equal(profileUrl({ ...sel, user: 'ann' }, r, 'flamegraph', true), '/api/v1/profiles?service=queue+worker&mode=cpu&' +
		'user=ann&from=2026-12-02T14%3A00%3A00.000Z&until=2026-12-02T14%3A01%3A00.000Z&format=flamegraph&inline=1');
	const a = { from: T0 + 120e3, until: T0 + 180e3 };
	assert.match(rangesDiffUrl(sel, r, a, 'flat'), /^\/api\/v1\/profiles\/diff\?service=queue\+worker&mode=cpu&before_from=2026-12-02T14%3A00%3A00.000Z&before_until=2026-12-02T14%3A01%3A00.000Z&after_from=2026-12-02T14%3A02%3A00.000Z&after_until=2026-12-02T14%3A03%3A00.000Z&format=flat$/);
	const h = compareHash(sel, r, a);
	assert.deepEqual(rangesOf(new URLSearchParams(h.split('?')[1])), { sel: { ...sel, user: undefined, host: undefined },
		before: r, after: a });
	assert.equal(rangesOf(new URLSearchParams('service=x&mode=cpu&bf=1&bu=2&af=3')), null, 'a side missing: no ranges');
});

test('serviceNames: the workers\' and the schedules\' exact names, sorted, each once; a glob names none', () => {
	assert.deepEqual(serviceNames([{ service: 'web' }, { service: '' }, { service: 'db' }, { service: 'web' }],
		[{ selector: { service: 'queue' } }, { selector: { service: 'web-*' } }, { selector: { workers: ['1-2'] } }]),
	['db', 'queue', 'web']);
});

test('a host: one host\'s or every host\'s, in every query and in the address; every host\'s not compared', () => {
	const r = { from: T0, until: T0 + 60e3 }, a = { from: T0 + 120e3, until: T0 + 180e3 };
	const every = { service: 'web', mode: 'cpu', host: '*' }, one = { service: 'web', mode: 'cpu', host: 'b' };
	assert.match(seriesUrl(every, r), /^\/api\/v1\/profiles\/series\?service=web&mode=cpu&from=.*&until=.*&host=\*$/);
	assert.match(profileUrl(every, r, 'flamegraph', true), /&format=flamegraph&inline=1&host=\*$/);
	assert.match(rangesDiffUrl(one, r, a, 'flat'), /&format=flat&host=b$/);
	assert.doesNotMatch(seriesUrl({ service: 'web', mode: 'cpu' }, r), /host=/, 'this host\'s: no host');
	assert.deepEqual(rangesOf(new URLSearchParams(compareHash(one, r, a).split('?')[1])).sel,
		{ ...one, user: undefined }, 'the address keeps the host');
	assert.match(whyNoCompare(every), /pick one host/);
	assert.equal(whyNoCompare(one), '');
	assert.equal(whyNoCompare({ service: 'web', mode: 'cpu' }), '');
});
