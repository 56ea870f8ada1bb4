// What the page knows of instances: the latest seen of each (the
// instance tables remember what they list), and the running ones being
// watched each second until they end.
import { api } from './api.js';
import { remote, key, onHost } from './hosts.js';
import { forgetOnEnd } from './session.js';
import { isProfile } from './status.js';

export const known = new Map();	// key (HOST/ID or ID) -> instance, the latest seen
const watchers = new Map();	// "HOST/ID" -> { id, host, cbs: [callback] }
let watchTimer = null;
let watching = false;		// one round at a time: a slow one is not overtaken

forgetOnEnd(() => {
	watchers.clear();
	known.clear();
	clearInterval(watchTimer);
	watchTimer = null;
});

// An instance as the API gave it, asked of host (undefined: this one):
// it and its artifacts carry their host.
export function placed(i, host) {
	if (host && !i.host) i.host = host;
	for (const a of i.artifacts || []) a.host = i.host;
	return i;
}

export function remember(list) { for (const i of list) known.set(key(placed(i)), i); }

// The ids of the profiles running on worker w (of its host).
export const runningOn = w => [...known.values()]
	.filter(i => i.worker === w.id && remote(i) === remote(w) && (!remote(w) || i.host === w.host) &&
		i.status === 'RUNNING' && isProfile(i)).map(i => i.id);

// Calls cb with the instance each second until it is no longer RUNNING;
// host: another host's instance (docs/cluster.md), asked of it.
export function track(id, cb, host) {
	const k = (host || '') + '/' + id;
	if (!watchers.has(k)) watchers.set(k, { id, host, cbs: [] });
	watchers.get(k).cbs.push(cb);
	if (!watchTimer) watchTimer = setInterval(watch, 1000);
}

async function watch() {
	// A tab in the background asks nothing; the next second after it is
	// shown again catches up.
	if (document.hidden || watching) return;
	watching = true;
	for (const [k, w] of [...watchers]) {
		try {
			const i = placed(await api('GET', onHost('/api/v1/instances/' + encodeURIComponent(w.id), w)), w.host);
			known.set(key(i), i);
			for (const cb of w.cbs) cb(i);
			if (i.status !== 'RUNNING') watchers.delete(k);
		} catch (e) {
			if (e.status === 404) watchers.delete(k);
		}
	}
	watching = false;
	if (!watchers.size) { clearInterval(watchTimer); watchTimer = null; }
}
