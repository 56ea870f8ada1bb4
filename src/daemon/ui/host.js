// The host view: who you are on the host, its facts (GET /api/v1/host)
// with what perf, ptrace and the agent mean for you, and what the
// workers you see allow. This host's, or the one the host filter
// (hosts.js) names, or ?host=NAME: each fact asked of that host's own
// daemon.
import { api } from './api.js';
import { h, $, append, clear, showErr } from './dom.js';
import { secs } from './fmt.js';
import { hosts, remote, onHost, choose, load as loadHosts, filter as hostFilter } from './hosts.js';
import { forgetOnEnd } from './session.js';
import { go } from './router.js';

const BOXES = ['host-me', 'host-facts', 'host-caps'];
forgetOnEnd(() => { for (const id of BOXES) clear($(id)); });

// GET /api/v1/host into the host view: the facts, and for perf, ptrace
// and the agent what nprofd says they mean for you. name: another host's
// (asked through this one), or undefined.
function renderHost(host, name) {
	const facts = (...kv) => h('div.subs', kv.map(([k, v]) => h('span.sub', h('span.hint', k + ' '), v)));
	const yes = v => v ? 'yes' : 'no';
	append(clear($('host-facts')), [h('h2', name ? `Host ${name}` : 'This host'), h('dl.facts', [
		h('dt', 'Host name'), h('dd', host.name),
		h('dt', 'Kernel'), h('dd', `${host.kernel} (${host.machine})`),
		h('dt', 'CPUs'), h('dd', String(host.cpus)),
		h('dt', 'Up for'), h('dd', secs(host.uptime_seconds)),
		h('dt', 'perf events'), h('dd', h('div.means', host.perf.means), facts(
			['perf_event_paranoid', String(host.perf.paranoid)], ['available', yes(host.perf.available)],
			['hardware events', yes(host.perf.hardware_events)])),
		h('dt', 'ptrace (thread dumps, core files)'), h('dd', h('div.means', host.ptrace.means), facts(
			['Yama ptrace_scope', host.ptrace.yama_scope < 0 ? 'none (no Yama)' : String(host.ptrace.yama_scope)])),
		h('dt', 'nprof\'s agent'), h('dd', h('div.means', host.agent.means), facts(
			['installed', yes(host.agent.installed)], ...(host.agent.library ? [['library', host.agent.library]] : []))),
	])]);
}
let filterMade = false;
export const hostView = {
	el: $('view-host'),
	async enter({ query }) {
		const err = $('host-err');
		showErr(err, '');
		if (query && query.has('host')) choose(query.get('host'));
		if (!filterMade) {
			filterMade = true;
			hostFilter($('h-host'), () => go('#/host'), false);
		}
		await loadHosts();
		const where = { host: hosts.choice === '*' ? '' : hosts.choice }, name = remote(where) ? where.host : undefined;
		for (const id of BOXES) clear($(id));
		try {
			const me = await api('GET', onHost('/api/v1/whoami', where));
			append(clear($('host-me')), [
				h('dt', 'Host'), h('dd', name ? `${name} (through ${hosts.self})` : me.host || ''),
				h('dt', 'You are'), h('dd', `${me.user} (uid ${me.uid})`),
				h('dt', 'Role'), h('dd', me.admin ? `admin: you see and act on every worker of ${name ? 'host ' + name : 'this host'}` :
					'user: you see and act on your own processes only'),
				h('dt', 'Signed in via'), h('dd', name ? `this host, which asks ${name} for you` : me.via || ''),
			]);
		} catch (e) { showErr(err, e); }
		try {
			renderHost(await api('GET', onHost('/api/v1/host', where)), name);
		} catch (e) {
			clear($('host-facts'));
			showErr(err, e);
		}
		try {
			const [ws, cmds] = await Promise.all([api('GET', onHost('/api/v1/workers?detail=1', where)),
				api('GET', onHost('/api/v1/commands', where))]);
			renderCaps(ws.workers || [], cmds);
		} catch (e) { showErr(err, e); }
	},
};

// What the workers the user can see allow, summed over them, with the
// reasons for what they do not.
function renderCaps(workers, cmds) {
	const modes = new Map(), why = new Map();
	let agent = 0;
	for (const w of workers) {
		if (w.agent) agent++;
		for (const m of w.modes || []) modes.set(m, (modes.get(m) || 0) + 1);
		const un = w.unavailable || {};
		for (const kind of ['modes', 'actions'])
			for (const [k, r] of Object.entries(un[kind] || {})) {
				const key = `${kind === 'modes' ? 'mode' : 'action'} ${k}: ${r}`;
				why.set(key, (why.get(key) || 0) + 1);
			}
	}
	const list = [...modes.entries()].sort((a, b) => b[1] - a[1]);
	append(clear($('host-caps')), [
		h('p', `${workers.length} worker(s) you may act on; ${agent} with nprof's agent loaded.`),
		h('dl.facts', h('dt', 'Modes available'), h('dd', list.length ?
			list.map(([m, n]) => `${m} (${n})`).join(', ') : 'none')),
		why.size ? h('ul.why', [...why.entries()].sort((a, b) => b[1] - a[1]).slice(0, 30)
			.map(([t, n]) => h('li', t, h('span.hint', ` (${n} worker${n > 1 ? 's' : ''})`)))) : null,
		h('p.hint', cmds && cmds.commands && cmds.commands.length ?
			`Operator commands: ${cmds.commands.map(c => c.name).join(', ')}` +
			(cmds.enabled ? '' : ' (switched off: [actions] commands in nprofd.conf)') :
			'The operator has defined no commands.'),
	]);
}
