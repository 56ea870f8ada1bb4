// An instance's artifacts as links: viewed in the page (flame graph,
// call tree, thread dump) and downloaded in every format nprofd converts
// them to; and the page's addresses of instances, workers and views.
import { h } from './dom.js';
import { bytes } from './fmt.js';
import { CONVERT, VIEWS } from './nouns.js';
import { onHost } from './hosts.js';

// An artifact's download, in format f (as stored when none), inline to
// show in a frame.
export const artUrl = (a, f, inline) => onHost('/api/v1/artifacts/' + encodeURIComponent(a.id) +
	(f || inline ? '?' + [f ? 'format=' + encodeURIComponent(f) : '', inline ? 'inline=1' : '']
		.filter(Boolean).join('&') : ''), a);
// inst: { id, host }; a: an artifact's id
export const viewHash = (inst, a, v) =>
	onHost(`#/instances/${encodeURIComponent(inst.id)}/${encodeURIComponent(a)}/${v}`, inst);
export const instHash = i => onHost('#/instances/' + encodeURIComponent(i.id), i);
export const workerHash = (i, wid) => onHost('#/workers/' + encodeURIComponent(wid), i);

// The instance's complete profile (pprof) artifact, if it has one: what
// Compare compares.
export function profileOf(i) {
	return (i.artifacts || []).find(a => a.format === 'pprof' && a.complete) || null;
}

// Links to view an instance's artifacts in the page and to download them.
export function viewLinks(inst) {
	const span = h('span.arts');
	for (const a of inst.artifacts || []) {
		const el = h('span.art', { title: `${a.name}, ${bytes(a.size)}${a.complete === false ? ', incomplete' : ''}` });
		for (const v of VIEWS[a.format] || [])
			el.appendChild(h('a.vlink', { href: viewHash(inst, a.id, v) }, v));
		el.appendChild(downloads(a));
		span.appendChild(el);
	}
	return span;
}

export function downloads(a) {
	const fmts = CONVERT[a.format] || [];
	const main = h('a.dl', { href: artUrl(a), download: '', title: `download ${a.name} as stored (${a.format})` },
		`↓ ${a.format}`);
	if (!fmts.length) return main;
	return h('span.dls', main, h('details.more',
		h('summary', { title: 'download in another format' }, '▾'),
		h('div.menu', fmts.map(f => h('a', { href: artUrl(a, f), download: '' }, f)))));
}
