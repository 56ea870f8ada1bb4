// The instances view: the table of instances (instance_table.js),
// filtered by host, worker and status, and Compare on two ticked
// profiles. With several hosts (hosts.js) it follows the host filter,
// and an instance of another host carries its host into every link.
import { h, $, clear, setText, showErr } from './dom.js';
import { STATES } from './nouns.js';
import { hosts, remote, key, onHost, choose, load as loadHosts, filter as hostFilter } from './hosts.js';
import { forgetOnEnd } from './session.js';
import { go } from './router.js';
import { workers, workerName } from './worker_store.js';
import { known } from './instance_store.js';
import { instanceTable, tableIn } from './instance_table.js';
import { profileOf } from './artifacts.js';

forgetOnEnd(() => clear($('i-count')));

export const instancesView = {
	el: $('view-instances'),
	async enter({ query }) {
		const worker = query.get('worker') || '', status = query.get('status') || '';
		// a link to a worker's history on another host names it
		if (query.has('host')) choose(query.get('host'));
		// the states, once nprofd has named them (nouns.js)
		if ($('i-status').options.length === 1)
			for (const s of STATES) $('i-status').appendChild(h('option', s));
		await loadHosts();
		fillWorkers(worker);
		$('i-status').value = status;
		showErr($('i-err'), '');
		instanceTable($('i-list'), { worker, status, host: hosts.choice });
		const t = tableIn($('i-list'));
		t.onList = list => { setText($('i-count'), `${list.length} shown`); fillWorkers($('i-worker').value, list); };
		t.onPick = picked => { $('i-compare').disabled = picked.length !== 2; };
		t.onPick(t.picked);
	},
	leave() { instanceTable($('i-list'), null); },
};

// Compare: the two ticked instances' profiles, the older one as before.
// Both of one host: that host's daemon compares them (?host=); of two
// hosts, this daemon fetches each from its host (before_host,
// after_host) and compares them here.
$('i-compare').addEventListener('click', () => {
	const t = tableIn($('i-list'));
	if (!t || t.picked.length !== 2) return;
	const [a, b] = t.picked.map(k => known.get(k)).sort((x, y) =>
		Date.parse(x.created) - Date.parse(y.created) || Number(x.id) - Number(y.id));
	const pa = a && profileOf(a), pb = b && profileOf(b);
	if (!pa || !pb) return;
	const hostOf = i => i.host || hosts.self;
	const path = `#/compare/${encodeURIComponent(pa.id)}/${encodeURIComponent(pb.id)}`;
	showErr($('i-err'), '');
	if (hostOf(a) === hostOf(b)) go(onHost(path, a));
	else go(path + '?' + new URLSearchParams({ before_host: hostOf(a), after_host: hostOf(b) }));
});

// The worker filter: every worker the user sees, and those the instances
// name. A worker is of one host: another host's is named with it, and
// picking it picks its host too (under "every host", two hosts' workers
// may share an id).
function fillWorkers(sel, list) {
	const s = $('i-worker'), have = new Set([...s.options].map(o => o.value));
	const add = (x, text) => {
		const k = key(x);
		if (have.has(k)) return;
		have.add(k);
		s.appendChild(h('option', { value: k, dataset: { id: x.id, host: remote(x) ? x.host : '' } },
			text + (remote(x) ? ' on ' + x.host : '')));
	};
	for (const w of workers.list) add(w, `${w.name} (${w.pid})`);
	for (const i of list || []) add({ id: i.worker, host: i.host }, workerName(i));
	const chosen = { id: sel, host: hosts.choice === '*' ? '' : hosts.choice };
	if (sel) add(chosen, sel);
	s.value = sel ? key(chosen) : '';
}
function filterChanged() {
	const o = $('i-worker').selectedOptions[0], q = new URLSearchParams();
	if (o && o.value) {
		q.set('worker', o.dataset.id);
		if (o.dataset.host) q.set('host', o.dataset.host);
		else if (hosts.choice) choose('');
	}
	if ($('i-status').value) q.set('status', $('i-status').value);
	go('#/instances' + (q.toString() ? '?' + q : ''));
}
hostFilter($('i-host'), () => {
	// another host's workers are not this one's
	go('#/instances' + ($('i-status').value ? '?status=' + encodeURIComponent($('i-status').value) : ''));
});
$('i-worker').addEventListener('change', filterChanged);
$('i-status').addEventListener('change', filterChanged);
