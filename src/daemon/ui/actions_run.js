// What every part of the actions panel shares: running a request on each
// target worker, or on each host's targets at once (one at a time per
// button, each failure one line naming its worker or host), the panel's log of what was done (an instance followed
// until it ends, then its files), and a button's state and reason.
import { api } from './api.js';
import { h, append, setText, showErr, once, busy } from './dom.js';
import { time, workerLabel } from './fmt.js';
import { ACTIONS } from './nouns.js';
import { remote, onHost } from './hosts.js';
import { track, placed } from './instance_store.js';
import { viewLinks } from './artifacts.js';

const LOG_LINES = 8;

// box: the panel's element (its id prefixes every control's);
// targets(): the workers to act on; refresh(): the panel's, after each run.
export function runner(box, targets, refresh) {
	const err = h('p.err', { role: 'alert', id: box.id + '-err' });
	const log = h('ul.log', { id: box.id + '-log' });

	// A line of the log; an instance's with its link, its status followed
	// until it ends, then its files.
	function note(text, inst, w) {
		const li = h('li', h('span.t', time(new Date().toISOString())), ' ', text);
		if (inst && inst.id) {
			const host = remote(w) ? w.host : undefined;
			const st = h('span.status', { class: 's-' + inst.status }, inst.status);
			append(li, [' ', h('a', { href: onHost('#/instances/' + encodeURIComponent(inst.id), w) },
				'instance ' + inst.id), host ? ` on ${host} ` : ' ', st]);
			// An action quicker than its reply (a small heap snapshot) is
			// over already: its files now, with nothing to follow.
			if (inst.status !== 'RUNNING' && inst.artifacts && inst.artifacts.length)
				append(li, [' ', viewLinks(placed(inst, host))]);
			if (inst.status === 'RUNNING')
				track(inst.id, i => {
					st.className = 'status s-' + i.status;
					setText(st, i.status + (i.new_worker ? ` — came back as pid ${i.new_worker.split('-')[0]}` :
						i.message ? ': ' + i.message : ''));
					if (i.new_worker) st.title = i.message || '';
					if (i.status !== 'RUNNING' && i.artifacts && i.artifacts.length)
						append(li, [' ', viewLinks(i)]);
				}, host);
		}
		log.insertBefore(li, log.firstChild);
		while (log.children.length > LOG_LINES) log.removeChild(log.lastChild);
	}

	// Runs fn(g) on each of groups, once at a time for button b (key);
	// each failure one line, named by name(g).
	async function runOn(key, b, groups, name, fn) {
		await once(box.id + key, [b], async () => {
			showErr(err, '');
			const errs = [];
			await Promise.all(groups.map(async g => {
				try { await fn(g); } catch (e) { errs.push(`${name(g)}: ${e.message}`); }
			}));
			showErr(err, errs.join(' · '));
		});
		refresh();
	}

	// Runs fn(w) on each target.
	const each = (key, b, fn) => runOn(key, b, targets(), w => `${w.name} (pid ${w.pid})`, fn);

	// Runs fn(ws) once for each host's targets (one request a host: a
	// service profile takes workers of its daemon's host alone).
	const eachHost = (key, b, fn) => {
		const byHost = new Map();
		for (const w of targets()) {
			const k = remote(w) ? w.host : '';
			if (!byHost.has(k)) byHost.set(k, []);
			byHost.get(k).push(w);
		}
		return runOn(key, b, [...byHost.values()],
			ws => `${ws.length} workers${remote(ws[0]) ? ' on ' + ws[0].host : ''}`, fn);
	};

	// fn for each(): POST /api/v1/workers/ID/PATH, its outcome logged as text.
	const act = (path, body, text) => async w => {
		const r = await api('POST', onHost(`/api/v1/workers/${encodeURIComponent(w.id)}/${path}`, w), body);
		if (r && r.id) note(`${text} of ${workerLabel(w)}:`, r, w);
		else note(`${text} of ${workerLabel(w)}: ${r && r.output ? r.output.trim() : 'done'}`);
	};

	// Enabled unless there is a reason (the title says it) or it runs.
	const setButton = (b, reason, key, desc) => {
		b.disabled = !!reason || busy(box.id + key);
		b.title = reason ? 'Unavailable: ' + reason : desc || '';
	};

	// A button of the panel, its id BOXID-KEY.
	const button = (key, label, attrs) => h('button', Object.assign({ type: 'button', id: box.id + '-' + key }, attrs), label);
	// The button of an action of ACTIONS (nouns.js), by its key.
	const actionButton = key => {
		const a = ACTIONS.find(x => x.key === key);
		return button(key, a.label, { class: a.danger ? 'danger' : '' });
	};

	return { box, targets, err, log, note, each, eachHost, act, setButton, button, actionButton, busy: key => busy(box.id + key) };
}
