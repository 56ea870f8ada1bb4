// The host filter (docs/cluster.md): with several hosts, each page that
// lists things (workers, instances, dump files, the host view) shows
// this host's, every host's or one host's. One choice for the whole
// page, so that a host picked on one list holds on the next. An item of
// another host (a worker, an instance, an artifact) carries its host and
// is known as HOST/ID; every request about it names the host (?host=),
// and this daemon passes it to that host's daemon. Without a cluster
// there is no filter, and keys are ids, as before.
import { api } from './api.js';
import { h, append, clear } from './dom.js';
import { forgetOnEnd } from './session.js';

export const hosts = {
	self: null,		// this daemon's name in its cluster; null: no cluster
	others: [],		// the other hosts registered, by name
	choice: '',		// '' this host, '*' every host, or one host's name
};
const filters = [];		// { sel, every } of each page's <select>

// The choice lasts as long as the tab (a reload keeps it), not the
// sign-in: another user may sign in next, and starts on this host.
const STORED = 'nprof.host';
try { hosts.choice = sessionStorage.getItem(STORED) || ''; } catch (e) { /* no storage: this host */ }
export function choose(choice) {
	hosts.choice = choice || '';
	try {
		if (hosts.choice) sessionStorage.setItem(STORED, hosts.choice); else sessionStorage.removeItem(STORED);
	} catch (e) { /* kept for this page only */ }
}
forgetOnEnd(() => choose(''));

export const remote = x => !!(x && x.host && hosts.self && x.host !== hosts.self);
export const key = x => remote(x) ? x.host + '/' + x.id : String(x.id);
// path, with ?host= when x (anything with a host) is another host's
export const onHost = (path, x) => remote(x) ?
	path + (path.includes('?') ? '&' : '?') + 'host=' + encodeURIComponent(x.host) : path;
// A list's query for the choice (what GET /api/v1/workers and the others
// fan out on): '' or "host=...".
export const hostQuery = () => hosts.choice ? 'host=' + encodeURIComponent(hosts.choice) : '';

// Reads the registry (GET /api/v1/hosts asks no host) and refreshes
// every filter.
export async function load() {
	let j;
	try { j = await api('GET', '/api/v1/hosts'); } catch (e) { return; }
	hosts.self = j.cluster ? j.cluster.name : null;
	hosts.others = hosts.self ? (j.hosts || []).map(x => x.name).filter(n => n !== hosts.self) : [];
	for (const f of filters) fill(f);
	for (const t of document.querySelectorAll('table.grid')) t.classList.toggle('hosts', !!hosts.self);
}

function fill({ sel, every }) {
	sel.hidden = !hosts.self;
	if (!hosts.self) return;
	const want = ['', ...(every ? ['*'] : []), ...hosts.others];
	if ([...sel.options].map(o => o.value).join('\n') !== want.join('\n'))
		append(clear(sel), want.map(v => h('option', { value: v },
			v === '' ? `this host (${hosts.self})` : v === '*' ? 'every host' : v)));
	sel.value = want.includes(hosts.choice) ? hosts.choice : '';
}

// sel shows and sets the choice; changed() runs after the user changes
// it. every: whether "every host" is one of its options.
export function filter(sel, changed, every = true) {
	const f = { sel, every };
	filters.push(f);
	sel.addEventListener('change', () => {
		choose(sel.value);
		for (const g of filters) fill(g);
		changed();
	});
	fill(f);
}
