// The compare view: two profiles as a differential flame graph (GET
// /api/v1/diff, in a sandboxed frame), with its downloads; or two ranges
// of a service's recordings, picked in the Services view (GET
// /api/v1/profiles/diff).
import { api } from './api.js';
import { h, $, append, clear, setText, showErr } from './dom.js';
import { hosts, onHost, load as loadHosts } from './hosts.js';
import { time } from './fmt.js';
import { rangesOf, rangesDiffUrl } from './series.js';

const frame = src => h('iframe.viewer', { src, sandbox: 'allow-scripts allow-downloads', title: 'differential flame graph' });
const words = r => `${time(new Date(r.from).toISOString())} – ${time(new Date(r.until).toISOString())}`;

// Two ranges of a service: its recordings in each merged, then compared.
function ranges({ sel, before, after }) {
	setText($('c-title'), `compare: ${sel.service}, ${sel.mode}, ${words(before)} (before) → ${words(after)} (after)`);
	append(clear($('c-links')), [h('span.dls', ['flamegraph', 'flat', 'collapsed'].map(f =>
		h('a', { href: rangesDiffUrl(sel, before, after, f, false), download: '' }, '↓ ' + f)))]);
	clear($('c-viewer')).appendChild(frame(rangesDiffUrl(sel, before, after, 'flamegraph', true)));
}

// The comparison's URL: where: { host } (both of one other host), or
// { before_host, after_host } (of two hosts).
const diffUrl = (before, after, f, inline, where) => {
	const q = new URLSearchParams(Object.assign({ before, after, format: f }, inline ? { inline: '1' } : {}));
	if (where.before_host) { q.set('before_host', where.before_host); q.set('after_host', where.after_host); }
	return onHost('/api/v1/diff?' + q, { host: where.host });
};

export const compareView = {
	el: $('view-compare'),
	tab: 'instances',
	async enter({ before, after, query }) {
		const err = $('c-err'), q = k => (query && query.get(k)) || undefined;
		// two ranges of a service (the Services view) have no ids
		const rr = !before && query ? rangesOf(query) : null;
		if (rr) { showErr(err, ''); ranges(rr); return; }
		const where = { host: q('host'), before_host: q('before_host'), after_host: q('after_host') };
		if (!where.before_host || !where.after_host) where.before_host = where.after_host = undefined;
		const hs = [where.before_host || where.host, where.after_host || where.host];
		if (hs.some(Boolean) && !hosts.self) await loadHosts();	// opened by its URL
		showErr(err, '');
		setText($('c-title'), `compare: profile ${before}` + (where.before_host ? ` of ${where.before_host}` : '') +
			` (before) → ${after}` + (where.after_host ? ` of ${where.after_host}` : '') + ' (after)' +
			(where.host ? ` on ${where.host}` : ''));
		append(clear($('c-links')), [h('span.dls', ['flamegraph', 'flat', 'collapsed'].map(f =>
			h('a', { href: diffUrl(before, after, f, false, where), download: '' }, '↓ ' + f)))]);
		const box = clear($('c-viewer'));
		// The comparison takes a while: it starts at once, and both
		// profiles are checked meanwhile (cheap); a frame would show an
		// error as raw JSON, so a wrong id replaces it with one line here.
		box.appendChild(frame(diffUrl(before, after, 'flamegraph', true, where)));
		const refuse = e => { clear(box); showErr(err, e); };
		Promise.all([before, after].map((id, k) => api('GET', onHost(`/api/v1/artifacts/${encodeURIComponent(id)}?info=1`,
			{ host: hs[k] }))))
			.then(arts => {
				const bad = arts.find(a => a.format !== 'pprof');
				if (bad) refuse(`artifact ${bad.id} is a ${bad.format}, not a profile`);
			}, refuse);
	},
	leave() { clear($('c-viewer')); },
};
