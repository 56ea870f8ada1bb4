// "My dump files": every artifact the user may see, grouped by the
// worker it came from, each viewed, downloaded or deleted here.
import { api } from './api.js';
import { h, $, append, clear, setText, showErr, confirm, once, busy } from './dom.js';
import { bytes, time } from './fmt.js';
import { VIEWS } from './nouns.js';
import { remote, key, onHost, hostQuery, load as loadHosts, filter as hostFilter } from './hosts.js';
import { forgetOnEnd } from './session.js';
import { workers } from './worker_store.js';
import { remember } from './instance_store.js';
import { what } from './status.js';
import { instHash, viewHash, downloads } from './artifacts.js';

forgetOnEnd(() => { clear($('f-groups')); clear($('f-count')); });

export const filesView = {
	el: $('view-files'),
	async enter() {
		await loadHosts();
		loadFiles();
	},
};
hostFilter($('f-host'), loadFiles);

async function loadFiles() {
	const err = $('f-err'), q = hostQuery();
	showErr(err, '');
	let arts, insts;
	try {
		[arts, insts] = await Promise.all([api('GET', '/api/v1/artifacts' + (q ? '?' + q : '')),
			api('GET', '/api/v1/instances?limit=10000' + (q ? '&' + q : '')).catch(() => ({ instances: [] }))]);
	} catch (e) { showErr(err, e); return; }
	remember(insts.instances || []);
	const byInst = new Map((insts.instances || []).map(i => [key(i), i]));
	const instOf = a => byInst.get(key({ id: a.instance, host: a.host }));
	const groups = new Map();	// HOST/WORKER or WORKER -> its files
	for (const a of arts.artifacts || []) {
		const wk = key({ id: a.worker, host: a.host });
		if (!groups.has(wk)) groups.set(wk, []);
		groups.get(wk).push(a);
	}
	let total = 0, n = 0;
	const out = [];
	for (const [wk, list] of groups) {
		const a0 = list[0], wid = a0.worker, i0 = instOf(a0);
		const w = workers.byId.get(wk);
		const size = list.reduce((s, a) => s + (a.size || 0), 0);
		total += size;
		n += list.length;
		const gerr = h('p.err', { role: 'alert' });
		const rows = list.map(a => fileRow(a, instOf(a), gerr));
		out.push(h('section.fgroup', { dataset: { worker: wk } },
			h('h2', remote(a0) ? h('span.hint', a0.host + ': ') : '',
				w ? `${w.name} (pid ${w.pid})` : i0 ? `pid ${i0.pid}` : wid,
				i0 && i0.service ? h('span.hint', ' ' + i0.service) : '',
				h('span.hint', ` · ${list.length} file${list.length > 1 ? 's' : ''}, ${bytes(size)}` +
					(w ? '' : ' · exited')),
				' ', h('a.small', { href: onHost('#/instances?worker=' + encodeURIComponent(wid), a0) }, 'history')),
			gerr,
			h('table.grid', h('thead', h('tr', ['File', 'From', 'Format', 'Size', 'Created', 'View', 'Download', '']
				.map(c => h('th', c)))), h('tbody', rows))));
	}
	setText($('f-count'), `${n} file${n === 1 ? '' : 's'}, ${bytes(total)}`);
	append(clear($('f-groups')), out.length ? out : [h('p', 'No files yet: thread dumps, heap snapshots, ' +
		'profiles and core files appear here.')]);
}

function fileRow(a, inst, gerr) {
	const del = h('button.small.danger', { type: 'button', title: 'delete this file from nprofd' }, 'Delete');
	const i = { id: a.instance, host: a.host };
	const tr = h('tr', { dataset: { id: key(a) } },
		h('td', a.name, a.complete === false ? h('span.hint', ' (incomplete)') : ''),
		h('td', h('a', { href: instHash(i) }, inst ? what(inst) : a.instance)),
		h('td', a.format), h('td.num', bytes(a.size)), h('td', { title: a.created || '' }, time(a.created)),
		h('td', (VIEWS[a.format] || []).map(v => h('a.vlink', { href: viewHash(i, a.id, v) }, v))),
		h('td', downloads(a)), h('td', del));
	del.addEventListener('click', async () => {
		if (busy('del:' + a.id)) return;
		const yes = await confirm('Delete this file?', h('p', `${a.name} (${bytes(a.size)}) is removed ` +
			'from nprofd for good.'), 'Delete');
		if (!yes) return;
		once('del:' + a.id, [del], async () => {
			showErr(gerr, '');
			try {
				await api('DELETE', onHost('/api/v1/artifacts/' + encodeURIComponent(a.id), a));
				tr.remove();
			} catch (e) { showErr(gerr, `${a.name}: ${e.message}`); }
		});
	});
	return tr;
}
