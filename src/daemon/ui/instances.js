// Instances (Flink's profiling table) with a live countdown, one instance
// with its artifacts viewed in the page (the flame graph and the call tree
// in a sandboxed iframe; a thread dump rendered here), and "My dump files".
// With several hosts (hosts.js), each list follows the host filter, and
// an instance or file of another host carries its host into every link
// and request about it.
'use strict';
(function () {
const { h, $, api, fmt, setText, showErr, clear } = NP;
const { remote, key, on: onHost } = NP.hosts;

// What nprofd converts each stored format into (docs/api.md, Artifacts).
const CONVERT = {
	pprof: ['flamegraph', 'tree', 'svg', 'speedscope', 'collapsed', 'jfr', 'dot', 'summary', 'traces', 'flat'],
	threads: ['text'],
};
const VIEWS = { pprof: ['flamegraph', 'tree'], threads: ['threads'] };
const artUrl = (a, f, inline) => onHost('/api/v1/artifacts/' + encodeURIComponent(a.id) +
	(f || inline ? '?' + [f ? 'format=' + encodeURIComponent(f) : '', inline ? 'inline=1' : '']
		.filter(Boolean).join('&') : ''), a);
// inst: { id, host }; a: an artifact's id
const viewHash = (inst, a, v) => onHost(`#/instances/${encodeURIComponent(inst.id)}/${encodeURIComponent(a)}/${v}`, inst);
const instHash = i => onHost('#/instances/' + encodeURIComponent(i.id), i);
const workerHash = (i, wid) => onHost('#/workers/' + encodeURIComponent(wid), i);

// An instance as the API gave it, asked of host (undefined: this one):
// it and its artifacts carry their host.
function placed(i, host) {
	if (host && !i.host) i.host = host;
	for (const a of i.artifacts || []) a.host = i.host;
	return i;
}

// ---- what is known of instances, and the ones being watched -----------------------

const known = new Map();	// key (HOST/ID or ID) -> instance, the latest seen
const watchers = new Map();	// "HOST/ID" -> { id, host, cbs: [callback] }
let watchTimer = null;

NP.resets.push(() => {
	watchers.clear();
	known.clear();
	clearInterval(watchTimer);
	watchTimer = null;
	for (const id of ['f-groups', 'f-count', 'i-count', 'id-summary', 'id-viewer', 'wd-instances']) clear($(id));
	$('id-viewer').dataset.key = '';
	idId = null;
});

function remember(list) { for (const i of list) known.set(key(placed(i)), i); }

// The ids of the profiles running on worker w (of its host).
NP.instancesRunningOn = w => [...known.values()]
	.filter(i => i.worker === w.id && remote(i) === remote(w) && (!remote(w) || i.host === w.host) &&
		i.status === 'RUNNING' && (i.kind || 'profile') === 'profile').map(i => i.id);

// Calls cb with the instance each second until it is no longer RUNNING;
// host: another host's instance (docs/cluster.md), asked of it.
NP.trackInstance = function (id, cb, host) {
	const k = (host || '') + '/' + id;
	if (!watchers.has(k)) watchers.set(k, { id, host, cbs: [] });
	watchers.get(k).cbs.push(cb);
	if (!watchTimer) watchTimer = setInterval(watch, 1000);
};
let watching = false;	// one round at a time: a slow one is not overtaken
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

// Seconds an instance still has to run.
function remaining(i) {
	const end = Date.parse(i.created) + (i.duration || 0) * 1000;
	return Math.max(0, (end - Date.now()) / 1000);
}
function statusText(i) {
	if (i.status !== 'RUNNING') return i.status;
	if ((i.kind || 'profile') !== 'profile' || !i.duration) return 'RUNNING';
	return `RUNNING · ${fmt.secs(Math.ceil(remaining(i)))} left`;
}
function workerName(i) {
	const w = NP.workers && NP.workers.byId.get(key({ id: i.worker, host: i.host }));
	return w ? `${w.name} (${i.pid})` : `pid ${i.pid}`;
}
function what(i) {
	const k = i.kind || 'profile';
	return k === 'profile' ? i.mode : k === 'stacks' ? 'thread dump' : k === 'heapdump' ? 'heap snapshot' :
		k === 'coredump' ? 'core file' : k;
}

// Links to view an instance's artifacts in the page and to download them
// in every format nprofd converts them to.
function viewLinks(inst) {
	const span = h('span.arts');
	for (const a of inst.artifacts || []) {
		const el = h('span.art', { title: `${a.name}, ${fmt.bytes(a.size)}${a.complete === false ? ', incomplete' : ''}` });
		for (const v of VIEWS[a.format] || [])
			el.appendChild(h('a.vlink', { href: viewHash(inst, a.id, v) }, v === 'threads' ? 'threads' : v));
		el.appendChild(downloads(a));
		span.appendChild(el);
	}
	return span;
}
NP.viewLinks = viewLinks;

function downloads(a) {
	const fmts = CONVERT[a.format] || [];
	const main = h('a.dl', { href: artUrl(a), download: '', title: `download ${a.name} as stored (${a.format})` },
		`↓ ${a.format}`);
	if (!fmts.length) return main;
	return h('span.dls', main, h('details.more',
		h('summary', { title: 'download in another format' }, '▾'),
		h('div.menu', fmts.map(f => h('a', { href: artUrl(a, f), download: '' }, f)))));
}

// ---- a table of instances: polled at most once a second while one runs ------------

const tables = new Map();	// box -> state

// instanceTable(box, {worker, status, host}) shows and polls; (box, null)
// stops it. host: '' this host, '*' every host, or one.
NP.instanceTable = function (box, filter) {
	let t = tables.get(box);
	if (!filter) { if (t) { clearTimeout(t.timer); clearInterval(t.tick); tables.delete(box); } return; }
	if (!t) {
		const err = h('p.err', { role: 'alert' });
		const body = h('tbody');
		const table = h('table.grid', { class: NP.hosts.self ? 'hosts' : '' }, h('thead', h('tr', ['Id', 'Host',
			'Worker', 'What', 'Duration', 'Status', 'Message', 'Triggered', 'Finished', 'Owner', 'Artifacts', '']
			.map(c => h('th', { class: c === 'Host' ? 'c-host' : '' }, c)))), body);
		NP.append(clear(box), [err, h('div.tablewrap.short', table)]);
		t = { body, err, rows: new Map(), timer: null, tick: null, filter, picked: [] };
		tables.set(box, t);
		// Two ticked at most: a third unticks the first.
		body.addEventListener('change', e => {
			if (!e.target.classList.contains('pick')) return;
			const id = e.target.closest('tr').dataset.id;
			t.picked = t.picked.filter(x => x !== id);
			if (e.target.checked) t.picked.push(id);
			while (t.picked.length > 2) {
				const old = t.picked.shift(), r = [...t.rows.values()].find(x => x.tr.dataset.id === old);
				if (r) r.pick.checked = false;
			}
			if (t.onPick) t.onPick(t.picked);
		});
		t.tick = setInterval(() => countdown(t), 1000);
	}
	t.filter = filter;
	clearTimeout(t.timer);
	pollTable(box, t);
};

async function pollTable(box, t) {
	if (tables.get(box) !== t) return;
	if (document.hidden) {
		t.timer = setTimeout(() => pollTable(box, t), 1000);
		return;
	}
	const q = new URLSearchParams({ limit: '200' });
	if (t.filter.worker) q.set('worker', t.filter.worker);
	if (t.filter.status) q.set('status', t.filter.status);
	if (t.filter.host) q.set('host', t.filter.host);
	let running = false;
	try {
		const j = await api('GET', '/api/v1/instances?' + q);
		const list = j.instances || [];
		remember(list);
		renderTable(t, list);
		running = list.some(i => i.status === 'RUNNING');
		showErr(t.err, '');
		if (t.onList) t.onList(list);
	} catch (e) {
		showErr(t.err, e);
	}
	if (tables.get(box) !== t) return;
	t.timer = setTimeout(() => pollTable(box, t), running ? 1000 : 5000);
}

function countdown(t) {
	for (const r of t.rows.values())
		if (r.i.status === 'RUNNING') setText(r.status, statusText(r.i));
}

function renderTable(t, list) {
	const seen = new Set();
	let prev = null;
	for (const i of list) {
		seen.add(key(i));
		let r = t.rows.get(key(i));
		if (!r) { r = makeRow(); t.rows.set(key(i), r); }
		updateRow(r, i);
		// Newest first, as given; move a row only when it is out of place.
		const want = prev ? prev.nextSibling : t.body.firstChild;
		if (want !== r.tr) t.body.insertBefore(r.tr, want);
		prev = r.tr;
	}
	for (const [id, r] of t.rows) if (!seen.has(id)) { r.tr.remove(); t.rows.delete(id); }
	if (!list.length && !t.body.querySelector('.empty'))
		t.body.appendChild(h('tr.empty', h('td', { colspan: '12' }, 'No instances yet.')));
	else if (list.length) for (const e of t.body.querySelectorAll('.empty')) e.remove();
}

// The instance's complete profile (pprof) artifact, if it has one: what
// Compare compares.
function profileOf(i) {
	return (i.artifacts || []).find(a => a.format === 'pprof' && a.complete) || null;
}

function makeRow() {
	const c = {};
	const tds = ['id', 'host', 'worker', 'what', 'duration', 'status', 'message', 'created', 'finished', 'user', 'arts', 'stop']
		.map(k => (c[k] = h('td', { class: 'c-' + k })));
	const r = { tr: h('tr', tds), c, sig: '' };
	r.pick = h('input', { type: 'checkbox', class: 'pick', title: 'tick two profiles to compare them' });
	r.status = h('span.status');
	c.status.appendChild(r.status);
	r.err = h('span.err.inline');
	return r;
}

function updateRow(r, i) {
	r.i = i;
	r.tr.dataset.id = key(i);
	r.tr.dataset.status = i.status;
	// Rebuild the cells only when the instance changed.
	const sig = JSON.stringify([i.status, i.message, i.finished, i.artifacts, i.new_worker]);
	setText(r.status, statusText(i));
	r.status.className = 'status s-' + i.status;
	if (sig === r.sig) return;
	r.sig = sig;
	const c = r.c;
	NP.append(clear(c.id), [r.pick, h('a', { href: instHash(i) }, i.id)]);
	r.pick.disabled = !profileOf(i);
	setText(c.host, i.host || '');
	NP.append(clear(c.worker), [h('a', { href: workerHash(i, i.worker), title: i.worker },
		workerName(i)), i.service ? h('span.hint', ' ' + i.service) : null]);
	setText(c.what, what(i));
	setText(c.duration, i.duration ? fmt.secs(i.duration) : '');
	setText(c.message, (i.message || '') + (i.new_worker ? ` new worker ${i.new_worker}` : ''));
	c.message.title = i.message || '';
	setText(c.created, fmt.time(i.created));
	c.created.title = i.created || '';
	setText(c.finished, fmt.time(i.finished));
	c.finished.title = i.finished || '';
	setText(c.user, i.user || '');
	NP.append(clear(c.arts), [viewLinks(i)]);
	clear(c.stop);
	if (i.status === 'RUNNING' && (i.kind || 'profile') === 'profile') {
		const b = h('button.small', { type: 'button', title: 'end it now; what it recorded is kept (STOPPED)' }, 'Stop');
		b.addEventListener('click', () => NP.once('stop:' + i.id, [b], async () => {
			showErr(r.err, '');
			try {
				await api('POST', onHost(`/api/v1/instances/${encodeURIComponent(i.id)}/stop`, i));
				setText(r.status, 'STOPPING');
			} catch (e) { showErr(r.err, e); }
		}));
		NP.append(c.stop, [b, r.err]);
	}
}

// ---- the instances view ------------------------------------------------------------------

NP.views.instances = {
	el: $('view-instances'),
	async enter({ query }) {
		const worker = query.get('worker') || '', status = query.get('status') || '';
		// a link to a worker's history on another host names it
		if (query.has('host')) NP.hosts.choose(query.get('host'));
		await NP.hosts.load();
		fillWorkers(worker);
		$('i-status').value = status;
		showErr($('i-err'), '');
		NP.instanceTable($('i-list'), { worker, status, host: NP.hosts.choice });
		const t = tables.get($('i-list'));
		t.onList = list => { setText($('i-count'), `${list.length} shown`); fillWorkers($('i-worker').value, list); };
		t.onPick = picked => { $('i-compare').disabled = picked.length !== 2; };
		t.onPick(t.picked);
	},
	leave() { NP.instanceTable($('i-list'), null); },
};

// Compare: the two ticked instances' profiles, the older one as before.
// Both of one host: that host's daemon compares them (?host=); of two
// hosts, this daemon fetches each from its host (before_host,
// after_host) and compares them here.
$('i-compare').addEventListener('click', () => {
	const t = tables.get($('i-list'));
	if (!t || t.picked.length !== 2) return;
	const [a, b] = t.picked.map(k => known.get(k)).sort((x, y) =>
		Date.parse(x.created) - Date.parse(y.created) || Number(x.id) - Number(y.id));
	const pa = a && profileOf(a), pb = b && profileOf(b);
	if (!pa || !pb) return;
	const hostOf = i => i.host || NP.hosts.self;
	const path = `#/compare/${encodeURIComponent(pa.id)}/${encodeURIComponent(pb.id)}`;
	showErr($('i-err'), '');
	if (hostOf(a) === hostOf(b)) NP.go(onHost(path, a));
	else NP.go(path + '?' + new URLSearchParams({ before_host: hostOf(a), after_host: hostOf(b) }));
});

// The comparison's URL: where: { host } (both of one other host), or
// { before_host, after_host } (of two hosts).
const diffUrl = (before, after, f, inline, where) => {
	const q = new URLSearchParams(Object.assign({ before, after, format: f }, inline ? { inline: '1' } : {}));
	if (where.before_host) { q.set('before_host', where.before_host); q.set('after_host', where.after_host); }
	return onHost('/api/v1/diff?' + q, { host: where.host });
};

NP.views.compare = {
	el: $('view-compare'),
	tab: 'instances',
	async enter({ before, after, query }) {
		const err = $('c-err'), q = k => (query && query.get(k)) || undefined;
		const where = { host: q('host'), before_host: q('before_host'), after_host: q('after_host') };
		if (!where.before_host || !where.after_host) where.before_host = where.after_host = undefined;
		const hosts = [where.before_host || where.host, where.after_host || where.host];
		if (hosts.some(Boolean) && !NP.hosts.self) await NP.hosts.load();	// opened by its URL
		showErr(err, '');
		setText($('c-title'), `compare: profile ${before}` + (where.before_host ? ` of ${where.before_host}` : '') +
			` (before) → ${after}` + (where.after_host ? ` of ${where.after_host}` : '') + ' (after)' +
			(where.host ? ` on ${where.host}` : ''));
		NP.append(clear($('c-links')), [h('span.dls', ['flamegraph', 'flat', 'collapsed'].map(f =>
			h('a', { href: diffUrl(before, after, f, false, where), download: '' }, '↓ ' + f)))]);
		const box = clear($('c-viewer'));
		// The comparison takes a while: it starts at once, and both
		// profiles are checked meanwhile (cheap); a frame would show an
		// error as raw JSON, so a wrong id replaces it with one line here.
		box.appendChild(h('iframe.viewer', { src: diffUrl(before, after, 'flamegraph', true, where),
			sandbox: 'allow-scripts allow-downloads', title: 'differential flame graph' }));
		const refuse = e => { clear(box); showErr(err, e); };
		Promise.all([before, after].map((id, k) => api('GET', onHost(`/api/v1/artifacts/${encodeURIComponent(id)}?info=1`,
			{ host: hosts[k] }))))
			.then(arts => {
				const bad = arts.find(a => a.format !== 'pprof');
				if (bad) refuse(`artifact ${bad.id} is a ${bad.format}, not a profile`);
			}, refuse);
	},
	leave() { clear($('c-viewer')); },
};

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
	for (const w of (NP.workers && NP.workers.list) || []) add(w, `${w.name} (${w.pid})`);
	for (const i of list || []) add({ id: i.worker, host: i.host }, workerName(i));
	const chosen = { id: sel, host: NP.hosts.choice === '*' ? '' : NP.hosts.choice };
	if (sel) add(chosen, sel);
	s.value = sel ? key(chosen) : '';
}
function filterChanged() {
	const o = $('i-worker').selectedOptions[0], q = new URLSearchParams();
	if (o && o.value) {
		q.set('worker', o.dataset.id);
		if (o.dataset.host) q.set('host', o.dataset.host);
		else if (NP.hosts.choice) NP.hosts.choose('');
	}
	if ($('i-status').value) q.set('status', $('i-status').value);
	NP.go('#/instances' + (q.toString() ? '?' + q : ''));
}
NP.hosts.filter($('i-host'), () => {
	// another host's workers are not this one's
	NP.go('#/instances' + ($('i-status').value ? '?status=' + encodeURIComponent($('i-status').value) : ''));
});
$('i-worker').addEventListener('change', filterChanged);
$('i-status').addEventListener('change', filterChanged);

// ---- one instance, and its artifacts viewed in the page --------------------------------

let idId = null;
NP.views.instance = {
	el: $('view-instance'),
	tab: 'instances',
	async enter({ id, rest, query }) {
		const err = $('id-err'), host = (query && query.get('host')) || undefined;
		if (host && !NP.hosts.self) await NP.hosts.load();	// opened by its URL
		const where = { id, host }, k = key(where);
		showErr(err, '');
		const again = idId === k;
		idId = k;
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
			NP.trackInstance(id, n => { if (idId === k) { summary(n); if (n.status !== 'RUNNING') this.enter({ id, rest, query }); } }, host);
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
	leave() { idId = null; clear($('id-viewer')); $('id-viewer').dataset.key = ''; },
};

function summary(i) {
	const rows = [['Host', remote(i) ? i.host : ''], ['Worker', h('a', { href: workerHash(i, i.worker) }, workerName(i))],
		['What', what(i) + (i.interval ? ` every ${i.interval}` : '')], ['Status', h('span.status',
			{ class: 's-' + i.status }, statusText(i))], ['Message', i.message],
		['Duration', i.duration ? fmt.secs(i.duration) : ''], ['Triggered', fmt.time(i.created)],
		['Finished', fmt.time(i.finished)], ['Owner', i.user], ['Service', i.service],
		['New worker', i.new_worker ? h('a', { href: workerHash(i, i.new_worker) }, i.new_worker) : ''],
		['Artifacts', (i.artifacts || []).length ? viewLinks(i) : 'none']];
	setText($('id-title'), `${i.id}: ${what(i)} of ${workerName(i)}`);
	NP.append(clear($('id-summary')), [h('dl.facts', rows.filter(([, v]) => v)
		.map(([k, v]) => [h('dt', k), h('dd', v)]))]);
}

function viewer(inst, a, v) {
	const box = $('id-viewer');
	const tabs = h('div.tabs', (VIEWS[a.format] || []).map(x =>
		h('a', { href: viewHash(inst, a.id, x), class: x === v ? 'active' : '' }, x)),
		h('span.hint', ` ${a.name} · ${fmt.bytes(a.size)}`), downloads(a));
	if (box.dataset.key === `${key(a)}/${v}`) return;
	box.dataset.key = `${key(a)}/${v}`;
	if (v === 'flamegraph' || v === 'tree') {
		// nprof's own page, in a sandbox of its own (CSP sandbox from nprofd).
		const f = h('iframe.viewer', { src: artUrl(a, v, true), sandbox: 'allow-scripts allow-downloads',
			title: `${v} of ${a.name}` });
		f.id = 'viewer-frame';
		NP.append(clear(box), [tabs, f]);
	} else if (v === 'threads') {
		const out = h('div.threads', 'Loading the thread dump…');
		out.id = 'threads';
		NP.append(clear(box), [tabs, out]);
		threadDump(a, out);
	} else {
		NP.append(clear(box), [tabs, h('p', 'No in-page view of this format: download it.')]);
	}
}

// ---- a thread dump, readable: identical stacks grouped ----------------------------------

async function threadDump(a, out) {
	let td;
	try {
		const text = await NP.fetchText(artUrl(a));
		try { td = JSON.parse(text); } catch (e) {
			NP.append(clear(out), [h('pre.text', text)]);
			return;
		}
	} catch (e) {
		NP.append(clear(out), [h('p.err.on', e.message)]);
		return;
	}
	const threads = td.threads || [];
	const groups = new Map();
	for (const t of threads) {
		const stack = (t.frames || []).map(f => f.function).join('\n') + '|' + (t.state || '');
		if (!groups.has(stack)) groups.set(stack, []);
		groups.get(stack).push(t);
	}
	const list = [...groups.values()].sort((x, y) => y.length - x.length);
	const states = {};
	for (const t of threads) states[t.state_name || t.state] = (states[t.state_name || t.state] || 0) + 1;
	const head = h('div.tdhead',
		h('b', `${td.comm || ''} (pid ${td.pid})`),
		` · ${threads.length} threads in ${list.length} distinct stacks · `,
		Object.entries(states).map(([s, n]) => `${n} ${s}`).join(', '),
		td.method ? ` · taken by ${td.method}` : '',
		td.pause_max_ns !== undefined ? ` · longest pause ${(td.pause_max_ns / 1e6).toFixed(2)} ms` : '',
		td.time_ns ? ` · at ${fmt.time(new Date(td.time_ns / 1e6).toISOString())}` : '');
	const filter = h('input', { type: 'search', placeholder: 'Filter threads or functions', class: 'tdfilter',
		'aria-label': 'Filter threads or functions' });
	const body = h('div.groups', list.map(g => group(g)));
	filter.addEventListener('input', () => {
		const q = filter.value.toLowerCase();
		for (const el of body.children) el.hidden = q && !el.textContent.toLowerCase().includes(q);
	});
	NP.append(clear(out), [head, filter, body]);
}

// The function a thread blocks in: the innermost frame of the program
// itself (not libc, not the kernel) when the thread is not running.
function blockingIndex(t) {
	if (t.on_cpu || t.state === 'R') return -1;
	const fr = t.frames || [];
	let i = fr.findIndex(f => f.kind === 'user' || f.kind === 'inlined');
	if (i < 0) i = fr.findIndex(f => f.kind !== 'kernel');
	return i;
}

function group(ts) {
	const t0 = ts[0], bi = blockingIndex(t0), fr = t0.frames || [];
	const sc = t0.syscall && t0.syscall.name;
	const names = h('div.tnames', ts.map(t => h('span.tname', { title: `tid ${t.tid}` },
		h('b', t.name || '?'), ` ${t.tid} `, h('span.state', { class: 'st-' + (t.state || '') }, t.state_name || t.state))));
	const frames = h('ol.frames', { start: '0' }, fr.map((f, k) => h('li', { class: (k === bi ? 'blocking ' : '') + 'k-' + f.kind },
		h('span.fn', f.function), f.file ? h('span.src', ` ${f.file}:${f.line}`) : '',
		f.module ? h('span.mod', ` ${f.module.split('/').pop()}+${f.offset}`) : '',
		k === bi ? h('span.tag', 'blocked here') : '')));
	const tail = t0.truncated ? h('p.hint', `stack truncated (${t0.walk_end || '?'})`) : null;
	const err = t0.error ? h('p.err.on', t0.error) : null;
	return h('section.tgroup',
		h('h3', h('span.count', `${ts.length}×`), ' ', t0.state_name || t0.state || '',
			sc ? h('span.sc', ` in ${sc}()`) : '', bi >= 0 ? h('span.hint', ` — blocked in ${fr[bi].function}`) : ''),
		names, err, frames, tail);
}

// ---- my dump files --------------------------------------------------------------------------

NP.views.files = {
	el: $('view-files'),
	async enter() {
		await NP.hosts.load();
		loadFiles();
	},
};
NP.hosts.filter($('f-host'), loadFiles);

async function loadFiles() {
	const err = $('f-err'), q = NP.hosts.query();
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
		const w = NP.workers && NP.workers.byId.get(wk);
		const bytes = list.reduce((s, a) => s + (a.size || 0), 0);
		total += bytes;
		n += list.length;
		const gerr = h('p.err', { role: 'alert' });
		const rows = list.map(a => fileRow(a, instOf(a), gerr));
		out.push(h('section.fgroup', { dataset: { worker: wk } },
			h('h2', remote(a0) ? h('span.hint', a0.host + ': ') : '',
				w ? `${w.name} (pid ${w.pid})` : i0 ? `pid ${i0.pid}` : wid,
				i0 && i0.service ? h('span.hint', ' ' + i0.service) : '',
				h('span.hint', ` · ${list.length} file${list.length > 1 ? 's' : ''}, ${fmt.bytes(bytes)}` +
					(w ? '' : ' · exited')),
				' ', h('a.small', { href: onHost('#/instances?worker=' + encodeURIComponent(wid), a0) }, 'history')),
			gerr,
			h('table.grid', h('thead', h('tr', ['File', 'From', 'Format', 'Size', 'Created', 'View', 'Download', '']
				.map(c => h('th', c)))), h('tbody', rows))));
	}
	setText($('f-count'), `${n} file${n === 1 ? '' : 's'}, ${fmt.bytes(total)}`);
	NP.append(clear($('f-groups')), out.length ? out : [h('p', 'No files yet: thread dumps, heap snapshots, ' +
		'profiles and core files appear here.')]);
}

function fileRow(a, inst, gerr) {
	const del = h('button.small.danger', { type: 'button', title: 'delete this file from nprofd' }, 'Delete');
	const i = { id: a.instance, host: a.host };
	const tr = h('tr', { dataset: { id: key(a) } },
		h('td', a.name, a.complete === false ? h('span.hint', ' (incomplete)') : ''),
		h('td', h('a', { href: instHash(i) }, inst ? what(inst) : a.instance)),
		h('td', a.format), h('td.num', fmt.bytes(a.size)), h('td', { title: a.created || '' }, fmt.time(a.created)),
		h('td', (VIEWS[a.format] || []).map(v => h('a.vlink', { href: viewHash(i, a.id, v) }, v))),
		h('td', downloads(a)), h('td', del));
	del.addEventListener('click', async () => {
		if (NP.busy('del:' + a.id)) return;
		const yes = await NP.confirm('Delete this file?', h('p', `${a.name} (${fmt.bytes(a.size)}) is removed ` +
			'from nprofd for good.'), 'Delete');
		if (!yes) return;
		NP.once('del:' + a.id, [del], async () => {
			showErr(gerr, '');
			try {
				await api('DELETE', onHost('/api/v1/artifacts/' + encodeURIComponent(a.id), a));
				tr.remove();
			} catch (e) { showErr(gerr, `${a.name}: ${e.message}`); }
		});
	});
	return tr;
}
})();
