// What the page knows of workers: the last list (the workers view polls
// it), the selection, each one's details with the reasons for what it
// cannot do (fetched once in a while), and each host's operator commands.
// Read by the instances and files views to name a worker.
import { api } from './api.js';
import { remote, key, onHost } from './hosts.js';
import { forgetOnEnd } from './session.js';

export const workers = {
	list: [],			// the last GET /api/v1/workers, as given
	byId: new Map(),		// worker key (hosts.js) -> worker
	selected: new Set(),		// worker keys, kept across refreshes
};
const details = new Map();	// key -> { w: GET /api/v1/workers/ID (with unavailable), at }
const commands = new Map();	// host ('' this one) -> its GET /api/v1/commands
let detailList = null;		// { at, byId } of GET /api/v1/workers?detail=1
const FRESH_MS = 10000;

forgetOnEnd(() => {
	setList([]);
	workers.selected.clear();
	forgetDetails();
	commands.clear();
});

export function setList(list) {
	workers.list = list;
	workers.byId = new Map(list.map(w => [key(w), w]));
}

// A worker's details just read (its page), kept for the panel.
export function keepDetail(w) { details.set(key(w), { w, at: Date.now() }); }

// What a worker can do changed (an agent attached): read it again.
export function forgetDetails(w) {
	detailList = null;
	if (w) details.delete(key(w)); else details.clear();
}

async function detailOf(t) {
	const d = details.get(key(t));
	if (d && Date.now() - d.at < FRESH_MS) return d.w;
	const w = await api('GET', onHost('/api/v1/workers/' + encodeURIComponent(t.id), t));
	if (remote(t)) w.host = t.host;
	keepDetail(w);
	return w;
}

// The details of workers ts, null for each that could not be had: one
// by one for a few (or of other hosts), the whole list with ?detail=1
// for many.
export async function detailsOf(ts) {
	if (ts.length <= 8 || ts.some(remote)) return Promise.all(ts.map(w => detailOf(w).catch(() => null)));
	if (!detailList || Date.now() - detailList.at > FRESH_MS) {
		try {
			const j = await api('GET', '/api/v1/workers?detail=1');
			detailList = { at: Date.now(), byId: new Map((j.workers || []).map(w => [w.id, w])) };
		} catch (e) {
			return ts.map(() => null);
		}
	}
	return ts.map(w => detailList.byId.get(w.id) || null);
}

// The operator's commands (each host has its own nprofd.conf) of the
// targets' hosts, by name; this host's when there is no target.
export async function commandsOf(ts) {
	const hs = ts.length ? [...new Set(ts.map(w => remote(w) ? w.host : ''))] : [''];
	const lists = await Promise.all(hs.map(async host => {
		if (!commands.has(host)) {
			let list = [];
			try {
				list = (await api('GET', onHost('/api/v1/commands', { host }))).commands || [];
			} catch (e) { /* none offered */ }
			commands.set(host, list);
		}
		return commands.get(host);
	}));
	const byName = new Map();
	for (const c of lists.flat()) if (!byName.has(c.name)) byName.set(c.name, c);
	return [...byName.values()];
}

// The worker an instance (or artifact) ran on, named as well as known.
export function workerName(i) {
	const w = workers.byId.get(key({ id: i.worker, host: i.host }));
	return w ? `${w.name} (${i.pid})` : `pid ${i.pid}`;
}
