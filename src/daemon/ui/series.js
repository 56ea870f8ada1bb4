// A service's timeline in numbers (GET /api/v1/profiles/series): the
// range a span names, the bars its points draw, the range a drag picks,
// and the queries for the series, a range's flame graph and two ranges
// compared. Pure: no DOM, no clock but the one given, so that node's
// tests (tests/ui/) run it as the page does.

// The spans the Services view offers, in ms.
export const SPANS = { hour: 3600e3, day: 86400e3 };

// The range a span names, ending now.
export function spanRange(span, now) {
	return { from: now - (SPANS[span] || SPANS.hour), until: now };
}

const iso = ms => new Date(ms).toISOString();

// A query string of o's keys that have a value, in o's order.
function query(o) {
	const q = new URLSearchParams();
	for (const [k, v] of Object.entries(o)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
	return q.toString();
}

// sel: { service, mode, user, host }; r: { from, until } in ms. host:
// '' (this host's), a host's name, or '*': every host's, summed or
// merged under a root per host (docs/api.md).
export const seriesUrl = (sel, r) => '/api/v1/profiles/series?' +
	query({ service: sel.service, mode: sel.mode, user: sel.user, from: iso(r.from), until: iso(r.until),
		host: sel.host });
// The range's recordings merged, in format f (shown in the page: inline).
export const profileUrl = (sel, r, f, inline) => '/api/v1/profiles?' +
	query({ service: sel.service, mode: sel.mode, user: sel.user, from: iso(r.from), until: iso(r.until),
		format: f, inline: inline ? '1' : '', host: sel.host });
// Two ranges compared (the compare view draws it): of one host (every
// host's are not compared yet: canCompare).
export const rangesDiffUrl = (sel, before, after, f, inline) => '/api/v1/profiles/diff?' +
	query({ service: sel.service, mode: sel.mode, user: sel.user,
		before_from: iso(before.from), before_until: iso(before.until),
		after_from: iso(after.from), after_until: iso(after.until), format: f, inline: inline ? '1' : '',
		host: sel.host });
// Why two ranges of sel cannot be compared, or '' when they can.
export const whyNoCompare = sel => sel.host === '*' ?
	"every host's ranges are not compared yet: pick one host to compare two of its ranges" : '';

// The compare view's address for two ranges, and back: a range in the
// address is ms since the epoch, so that a bookmark holds it.
export const compareHash = (sel, before, after) => '#/compare?' + query({ service: sel.service, mode: sel.mode,
	user: sel.user, host: sel.host, bf: before.from, bu: before.until, af: after.from, au: after.until });
export function rangesOf(q) {
	const n = k => Number(q.get(k));
	const ok = ['bf', 'bu', 'af', 'au'].every(k => q.has(k) && Number.isFinite(n(k))) && q.get('service') && q.get('mode');
	return ok ? { sel: { service: q.get('service'), mode: q.get('mode'), user: q.get('user') || undefined,
		host: q.get('host') || undefined },
		before: { from: n('bf'), until: n('bu') }, after: { from: n('af'), until: n('au') } } : null;
}

// The bars of a series reply in a box of width x height px: each point
// where its step lies in from..until, as tall as its share of the
// highest. [{ x, w, h, t (ms), value }], and the highest value.
export function bars(s, width, height) {
	const from = Date.parse(s.from), until = Date.parse(s.until), step = s.step * 1000;
	const span = until - from, pts = s.points || [];
	const max = pts.reduce((m, p) => Math.max(m, p.value), 0);
	const out = [];
	if (!(span > 0)) return { bars: out, max };
	const px = t => Math.min(width, Math.max(0, (t - from) / span * width));
	for (const p of pts) {
		const t = Date.parse(p.t), x = px(t), x1 = px(t + step);
		if (x1 <= x || !p.value) continue;
		out.push({ x, w: x1 - x, h: max ? p.value / max * height : 0, t, value: p.value });
	}
	return { bars: out, max };
}

// The range between two x positions of a drag on the box (either
// order), widened to whole steps of the series and kept within its
// from..until; null for a click (under one px).
export function rangeAt(s, width, x0, x1) {
	if (Math.abs(x1 - x0) < 1 || !(width > 0)) return null;
	const from = Date.parse(s.from), until = Date.parse(s.until), step = s.step * 1000;
	const at = x => from + Math.min(width, Math.max(0, x)) / width * (until - from);
	const a = Math.floor(at(Math.min(x0, x1)) / step) * step, b = Math.ceil(at(Math.max(x0, x1)) / step) * step;
	return { from: Math.max(from, a), until: Math.min(until, b) };
}

// Where a range lies on the box, for its highlight: { x, w } in px.
export function spanAt(s, width, r) {
	const from = Date.parse(s.from), until = Date.parse(s.until);
	const px = t => Math.min(width, Math.max(0, (t - from) / (until - from) * width));
	return { x: px(r.from), w: px(r.until) - px(r.from) };
}

// The services to pick from: the workers' (GET /api/v1/workers) and
// those schedules select by an exact name (a glob names no one service),
// sorted, each once.
export function serviceNames(workers, schedules) {
	const names = new Set();
	for (const w of workers || []) if (w.service) names.add(w.service);
	for (const s of schedules || []) {
		const g = s.selector && s.selector.service;
		if (g && !/[*?[]/.test(g)) names.add(g);
	}
	return [...names].sort();
}
