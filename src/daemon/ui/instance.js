// One instance's page: its summary (its status followed while it runs)
// and its artifacts viewed in the page: the flame graph and the call
// tree in a sandboxed frame, a thread dump drawn here (thread_dump.js).
import { api } from './api.js';
import { h, $, append, clear, setText, showErr } from './dom.js';
import { bytes, secs, time } from './fmt.js';
import { VIEWS } from './nouns.js';
import { hosts, remote, key, onHost, load as loadHosts } from './hosts.js';
import { forgetOnEnd } from './session.js';
import { known, placed, track } from './instance_store.js';
import { workerName } from './worker_store.js';
import { statusText, what, groupName } from './status.js';
import { artUrl, viewHash, workerHash, instHash, viewLinks, downloads } from './artifacts.js';
import { threadDump } from './thread_dump.js';

let shown = null;	// the key of the instance shown

function forget() {
	shown = null;
	clear($('id-viewer'));
	$('id-viewer').dataset.key = '';
}
forgetOnEnd(() => { forget(); clear($('id-summary')); });

export const instanceView = {
	el: $('view-instance'),
	tab: 'instances',
	async enter({ id, rest, query }) {
		const err = $('id-err'), host = (query && query.get('host')) || undefined;
		if (host && !hosts.self) await loadHosts();	// opened by its URL
		const where = { id, host }, k = key(where);
		showErr(err, '');
		const again = shown === k;
		shown = k;
		setText($('id-title'), id);
		if (!again) { clear($('id-viewer')); $('id-viewer').dataset.key = ''; }
		let i;
		try {
			i = placed(await api('GET', onHost('/api/v1/instances/' + encodeURIComponent(id), where)), host);
		} catch (e) {
			showErr(err, e);
			clear($('id-summary'));
			return;
		}
		known.set(k, i);
		summary(i);
		if (i.status === 'RUNNING')
			track(id, n => { if (shown === k) { summary(n); if (n.status !== 'RUNNING') this.enter({ id, rest, query }); } }, host);
		let [artId, v] = rest || [];
		if (!artId) {
			// The first viewable artifact, in its first view.
			const a = (i.artifacts || []).find(x => VIEWS[x.format]);
			if (a) { artId = a.id; v = VIEWS[a.format][0]; history.replaceState(null, '', viewHash(i, artId, v)); }
		}
		const a = (i.artifacts || []).find(x => String(x.id) === String(artId));
		if (!a) { if (artId) showErr(err, `instance ${id} has no artifact ${artId}`); return; }
		viewer(i, a, v || (VIEWS[a.format] || [])[0]);
	},
	leave: forget,
};

function summary(i) {
	const who = i.selector ? groupName(i) : workerName(i);
	const rows = [['Host', remote(i) ? i.host : ''], ['Worker', i.selector ? who :
		h('a', { href: workerHash(i, i.worker) }, who)],
		['Part of', i.parent ? h('a', { href: instHash({ id: i.parent, host: i.host }) },
			`service profile ${i.parent}`) : ''],
		['Members', i.selector ? membersOf(i) : ''],
		['What', what(i) + (i.interval ? ` every ${i.interval}` : '')], ['Status', h('span.status',
			{ class: 's-' + i.status }, statusText(i))], ['Message', i.message],
		['Duration', i.duration ? secs(i.duration) : ''], ['Triggered', time(i.created)],
		['Finished', time(i.finished)], ['Owner', i.user], ['Service', i.service],
		['New worker', i.new_worker ? h('a', { href: workerHash(i, i.new_worker) }, i.new_worker) : ''],
		['Artifacts', (i.artifacts || []).length ? viewLinks(i) : 'none']];
	setText($('id-title'), `${i.id}: ${what(i)} of ${who}`);
	append(clear($('id-summary')), [h('dl.facts', rows.filter(([, v]) => v)
		.map(([k, v]) => [h('dt', k), h('dd', v)]))]);
}

// A service profile's members, each a link, filled in when they come.
function membersOf(g) {
	const box = h('span.members', '…');
	const q = new URLSearchParams({ parent: String(g.id), limit: '1000' });
	if (remote(g)) q.set('host', g.host);
	api('GET', '/api/v1/instances?' + q).then(j => append(clear(box), (j.instances || []).reverse()
		.map(m => [h('a', { href: instHash(m) }, `${workerName(m)} ${m.status}`), ' '])))
		.catch(e => setText(box, String(e.message || e)));
	return box;
}

function viewer(inst, a, v) {
	const box = $('id-viewer');
	const tabs = h('div.tabs', (VIEWS[a.format] || []).map(x =>
		h('a', { href: viewHash(inst, a.id, x), class: x === v ? 'active' : '' }, x)),
		h('span.hint', ` ${a.name} · ${bytes(a.size)}`), downloads(a));
	if (box.dataset.key === `${key(a)}/${v}`) return;
	box.dataset.key = `${key(a)}/${v}`;
	if (v === 'flamegraph' || v === 'tree') {
		// nprof's own page, in a sandbox of its own (CSP sandbox from nprofd).
		const f = h('iframe.viewer', { src: artUrl(a, v, true), sandbox: 'allow-scripts allow-downloads',
			title: `${v} of ${a.name}`, id: 'viewer-frame' });
		append(clear(box), [tabs, f]);
	} else if (v === 'threads') {
		const out = h('div.threads', { id: 'threads' }, 'Loading the thread dump…');
		append(clear(box), [tabs, out]);
		threadDump(artUrl(a), out);
	} else {
		append(clear(box), [tabs, h('p', 'No in-page view of this format: download it.')]);
	}
}
