// One worker's page: its facts, the actions panel on it, what it cannot
// do and why, and its instances. Read again every 5 s.
import { api } from './api.js';
import { h, $, append, clear, setText, showErr } from './dom.js';
import { bytes, secs, pct, workerLabel } from './fmt.js';
import { hosts, remote, onHost, load as loadHosts } from './hosts.js';
import { forgetOnEnd } from './session.js';
import { keepDetail } from './worker_store.js';
import { actionsPanel } from './actions.js';
import { instanceTable } from './instance_table.js';

let panel = null, worker = null, timer = null;
forgetOnEnd(() => clear($('wd-instances')));

export const workerView = {
	el: $('view-worker'),
	tab: 'workers',
	async enter({ id, query }) {
		const err = $('wd-err'), host = query && query.get('host');
		if (host && !hosts.self) await loadHosts();	// opened by its URL
		const where = { id, host: host || undefined };
		showErr(err, '');
		setText($('wd-title'), id);
		clear($('wd-facts'));
		clear($('wd-why'));
		worker = null;
		if (!panel) panel = actionsPanel($('wd-actions'), () => worker ? [worker] : []);
		const load = async () => {
			try {
				const w = await api('GET', onHost('/api/v1/workers/' + encodeURIComponent(id), where));
				if (remote(where)) w.host = host;
				keepDetail(w);
				worker = w;
				showFacts(w);
				showErr(err, '');
			} catch (e) {
				worker = null;
				showErr(err, e.status === 410 ? 'This worker has exited: ' + e.message : e);
			}
			panel.refresh();
		};
		await load();
		clearInterval(timer);
		timer = setInterval(() => { if (!document.hidden) load(); }, 5000);
		instanceTable($('wd-instances'), { worker: id, host: remote(where) ? host : '' });
	},
	leave() {
		clearInterval(timer);
		instanceTable($('wd-instances'), null);
	},
};

function showFacts(w) {
	setText($('wd-title'), workerLabel(w));
	const f = [['Host', w.host], ['Id', w.id], ['Pid', w.pid], ['Name', w.name], ['Command line', w.cmdline],
		['Owner', `${w.user} (uid ${w.uid})`],
		['Service', w.service && (w.service_source ? `${w.service} (from its ${w.service_source})` : w.service)],
		['Unit', w.unit], ['Slice', w.slice], ['Cgroup', w.cgroup],
		['Container', w.container_id && (w.container_runtime ? `${w.container_id} (${w.container_runtime})` : w.container_id)],
		['Pod', w.pod_uid && (w.qos_class ? `${w.pod_uid} (QoS ${w.qos_class})` : w.pod_uid)],
		['CPU %', pct(w.cpu_percent)],
		['RSS', bytes(w.rss_bytes)], ['Threads', w.threads], ['Uptime', secs(w.uptime)],
		['Agent', w.agent ? 'loaded' : 'not loaded'], ['Modes', (w.modes || []).join(', ')],
		['Actions', (w.actions || []).join(', ')]];
	append(clear($('wd-facts')), f.filter(([, v]) => v !== undefined && v !== null && v !== '')
		.map(([k, v]) => [h('dt', k), h('dd', String(v))]));
	const un = w.unavailable || {}, lis = [];
	for (const kind of ['modes', 'actions'])
		for (const [k, r] of Object.entries(un[kind] || {})) lis.push(h('li', h('b', k + ': '), r));
	append(clear($('wd-why')), lis.length ? lis : [h('li', 'Everything is available.')]);
}
