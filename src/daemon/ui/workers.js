// The workers table (Storm's executors), the actions panel on the
// selected workers, and one worker's page. The table is refreshed every
// 2 s in place: rows are kept by worker id and only changed cells are
// written, so selection, focus and scroll survive a refresh.
'use strict';
(function () {
const { h, $, api, fmt, setText, showErr, clear } = NP;

// Modes and what each records, shown on hover (title) and beside the select.
const MODES = {
	'cpu': 'CPU time: samples threads while they run on a CPU (perf_events cpu-clock). Where the CPU goes.',
	'itimer': 'CPU time through setitimer signals (ITIMER_PROF), for hosts where perf_events is denied. Coarser; needs no perf access.',
	'wall': 'Wall-clock time of every thread, running, waiting for a CPU or blocked (sleeping, waiting on I/O or locks), each stack ending in its state. Through the agent when loaded; without it, from the scheduler (admins: it needs root).',
	'offcpu': 'Off-CPU time: where threads wait (blocked, sleeping, preempted), in nanoseconds, from every context switch. Needs root: admins only.',
	'alloc': 'Allocations: samples malloc and friends every N bytes allocated, with their stacks. Where memory is allocated. Needs the agent.',
	'heap': 'Live heap: sampled allocations still not freed at the end; what holds memory now (leaks, growth). Needs the agent.',
	'lock': 'Lock contention: time threads spend waiting for pthread mutexes, by the stack that waited. Needs the agent.',
	'page-faults': 'Page faults (software event): where the process touches memory that is not mapped in yet.',
	'context-switches': 'Context switches (software event): where threads leave the CPU, blocking or preempted.',
};
const FORMATS = ['flamegraph', 'tree', 'pprof', 'collapsed', 'speedscope', 'jfr', 'svg'];
const ACTIONS = [
	{ key: 'stacks', label: 'Thread dump', what: 'the stack of every thread now (nprof stacks)' },
	{ key: 'heapdump', label: 'Heap snapshot', what: 'the live heap through the agent, as a profile' },
	{ key: 'heap-on', need: 'heap', label: 'Heap profiling on', what: 'switch the agent\'s heap profiling on' },
	{ key: 'heap-off', need: 'heap', label: 'Heap profiling off', what: 'switch the agent\'s heap profiling off' },
	{ key: 'coredump', label: 'Core file', what: 'a core file of the running process, for gdb (it keeps running)' },
	{ key: 'restart', label: 'Restart', what: 'restart through its supervisor', danger: true },
	{ key: 'attach', label: 'Attach agent', what: 'load nprof\'s agent into the running process (nprof attach): ' +
		'itimer, wall, alloc, heap and lock then work on it, without a restart' },
	{ key: 'detach', label: 'Detach agent', what: 'end the agent\'s sessions and hooks in the process (nprof detach)' },
];
NP.MODES = MODES;

// ---- the shared state: the last list, the selection, the details -------------------

const W = NP.workers = {
	list: [],			// the last GET /api/v1/workers, as given
	byId: new Map(),
	selected: new Set(),		// worker keys (hosts.js), kept across refreshes
	details: new Map(),		// key -> GET /api/v1/workers/ID (with unavailable), and when
	commands: new Map(),	// host ('' this one) -> its GET /api/v1/commands
};

// Several hosts (hosts.js): a worker of another host is HOST/ID here.
const { remote, key, on: onHost } = NP.hosts;

NP.resets.push(() => {
	W.list = [];
	W.byId = new Map();
	W.selected.clear();
	W.details.clear();
	W.commands.clear();
	detailList = null;
	render();
	for (const el of document.querySelectorAll('ul.log, ul.why, .actions .err')) clear(el);
});

async function detailOf(t) {
	const d = W.details.get(key(t));
	if (d && Date.now() - d.at < 10000) return d.w;
	const w = await api('GET', onHost('/api/v1/workers/' + encodeURIComponent(t.id), t));
	if (remote(t)) w.host = t.host;
	W.details.set(key(t), { w, at: Date.now() });
	return w;
}

let detailList = null;	// { at, byId } of GET /api/v1/workers?detail=1
async function details(ts) {
	if (ts.length <= 8 || ts.some(remote)) return Promise.all(ts.map(w => detailOf(w).catch(() => null)));
	if (!detailList || Date.now() - detailList.at > 10000) {
		try {
			const j = await api('GET', '/api/v1/workers?detail=1');
			detailList = { at: Date.now(), byId: new Map((j.workers || []).map(w => [w.id, w])) };
		} catch (e) {
			return ts.map(() => null);
		}
	}
	return ts.map(w => detailList.byId.get(w.id) || null);
}

function label(w) { return `${w.name} (pid ${w.pid}${w.service ? ', ' + w.service : ''})`; }
NP.workerLabel = label;

// ---- the actions panel: on the workers targets() returns -----------------------------

// Builds a panel in box; targets() gives the worker objects to act on.
function actionsPanel(box, targets) {
	const modeSel = h('select', { 'aria-label': 'Mode' },
		Object.keys(MODES).map(m => h('option', { value: m, title: MODES[m] }, m)));
	modeSel.id = box.id + '-mode';
	const modeWhy = h('span.hint.modewhy');
	const dur = h('input', { type: 'number', min: '1', value: '30', 'aria-label': 'Duration', class: 'n' });
	dur.id = box.id + '-duration';
	const unit = h('select', { 'aria-label': 'Duration unit' },
		h('option', { value: 's' }, 'seconds'), h('option', { value: 'm' }, 'minutes'));
	unit.id = box.id + '-unit';
	const interval = h('input', { placeholder: 'mode default', 'aria-label': 'Interval', class: 'iv',
		title: 'The sampling interval: a time (10ms, 1ms) or, for alloc and heap, a size (512k)' });
	interval.id = box.id + '-interval';
	const format = h('select', { 'aria-label': 'Format',
		title: 'The format its download defaults to (every format stays available)' },
		FORMATS.map(f => h('option', { value: f }, f)));
	format.id = box.id + '-format';
	const start = h('button.primary', { type: 'button' }, 'Start');
	start.id = box.id + '-start';
	const stop = h('button', { type: 'button', title: 'Stop the running profiling instances of the selected workers (they keep what they recorded)' }, 'Stop');
	stop.id = box.id + '-stop';
	const buttons = new Map();
	for (const a of ACTIONS) {
		const b = h('button', { type: 'button', class: a.danger ? 'danger' : '' }, a.label);
		b.id = box.id + '-' + a.key;
		buttons.set(a.key, b);
	}
	const cmdBox = h('span.cmds');
	const err = h('p.err', { role: 'alert' });
	err.id = box.id + '-err';
	const why = h('ul.why.small');
	const log = h('ul.log');
	log.id = box.id + '-log';
	const who = h('span.hint');

	NP.append(clear(box), [h('div.actions',
		h('div.row', who),
		h('div.row',
			h('label', 'Mode ', modeSel), modeWhy),
		h('div.row',
			h('label', 'Duration ', dur, unit),
			h('label', 'Interval ', interval),
			h('label', 'Format ', format),
			start, stop),
		h('div.row', [...buttons.values()], cmdBox),
		err, why, log)]);

	// What the targets allow: each control enabled only when every target
	// can use it, its title saying why not.
	let reasons = new Map();	// control key -> reason
	async function refresh() {
		const ts = targets();
		setText(who, ts.length ? `${ts.length} selected: ` +
			ts.slice(0, 4).map(label).join('; ') + (ts.length > 4 ? '; …' : '') :
			'Select workers in the table to act on them.');
		// Details (with the reasons) of the targets, fetched once in a while:
		// one by one for a few, the whole list with ?detail=1 for many.
		const det = await details(ts);
		const un = (d, kind, k) => d && d.unavailable && d.unavailable[kind] && d.unavailable[kind][k];
		reasons = new Map();
		const denied = (key, kind, name) => {
			for (let i = 0; i < ts.length; i++) {
				const w = ts[i], d = det[i];
				const list = (d || w)[kind] || [];
				if (!list.includes(name)) {
					reasons.set(key, `${w.name} (pid ${w.pid}): ` + (un(d, kind, name) ||
						(d ? 'not available' : 'the worker has gone')));
					return true;
				}
			}
			return false;
		};
		// Modes: options a target cannot use are marked.
		const seen = new Set();
		for (const w of ts) for (const m of w.modes || []) seen.add(m);
		for (const m of seen) if (!MODES[m] && ![...modeSel.options].some(o => o.value === m))
			modeSel.appendChild(h('option', { value: m, title: 'hardware event ' + m }, m));
		for (const o of modeSel.options) {
			const no = ts.length > 0 && denied('mode:' + o.value, 'modes', o.value);
			o.textContent = o.value + (no ? ' (unavailable)' : '');
			o.title = (MODES[o.value] || o.title) + (no ? '\nUnavailable: ' + reasons.get('mode:' + o.value) : '');
		}
		const m = modeSel.value;
		const modeNo = reasons.get('mode:' + m);
		setText(modeWhy, MODES[m] || '');
		modeSel.title = MODES[m] || '';
		setBtn(start, !ts.length ? 'select a worker first' : modeNo || '', 'start');
		setBtn(stop, !ts.length ? 'select a worker first' :
			!NP.instancesRunningOn || !ts.some(w => NP.instancesRunningOn(w).length) ?
				'no profiling instance runs on the selected workers' : '', 'stop');
		for (const a of ACTIONS) {
			const name = a.need || a.key;
			setBtn(buttons.get(a.key), !ts.length ? 'select a worker first' :
				denied('action:' + name, 'actions', name) ? reasons.get('action:' + name) : '', a.key,
				a.what);
		}
		// The operator's commands: those of the targets' hosts.
		const cmds = await commandsOf(ts);
		for (const b of cmdBox.children) b.hidden = !cmds.some(c => c.name === b.dataset.cmd);
		for (const c of cmds) {
			let b = cmdBox.querySelector(`[data-cmd="${CSS.escape(c.name)}"]`);
			if (!b) {
				b = h('button', { type: 'button', dataset: { cmd: c.name } }, c.name);
				b.id = box.id + '-cmd-' + c.name;
				b.addEventListener('click', () => command(c, b));
				cmdBox.appendChild(b);
			}
			const no = !ts.length ? 'select a worker first' :
				denied('action:commands/' + c.name, 'actions', 'commands/' + c.name) ?
					reasons.get('action:commands/' + c.name) : '';
			setBtn(b, no, 'cmd:' + c.name, c.description || '');
		}
		// The reasons, in words, under the buttons.
		const lines = [...reasons.entries()].filter(([k]) => !k.startsWith('mode:') || k === 'mode:' + m)
			.map(([k, r]) => h('li', h('b', k.replace(/^(mode|action):/, '') + ': '), r));
		NP.append(clear(why), lines);
	}
	function setBtn(b, reason, key, desc) {
		b.disabled = !!reason || NP.busy(box.id + key);
		b.title = reason ? 'Unavailable: ' + reason : desc || '';
	}

	// A line of the log; an instance's with its link, its status followed
	// until it ends, then its files.
	function note(text, inst, w) {
		const li = h('li', h('span.t', fmt.time(new Date().toISOString())), ' ', text);
		if (inst && inst.id) {
			const host = remote(w) ? w.host : undefined;
			const st = h('span.status', { class: 's-' + inst.status }, inst.status);
			NP.append(li, [' ', h('a', { href: onHost('#/instances/' + encodeURIComponent(inst.id), w) },
				'instance ' + inst.id), host ? ` on ${host} ` : ' ', st]);
			if (inst.status === 'RUNNING' && NP.trackInstance)
				NP.trackInstance(inst.id, i => {
					st.className = 'status s-' + i.status;
					setText(st, i.status + (i.new_worker ? ` — came back as pid ${i.new_worker.split('-')[0]}` :
						i.message ? ': ' + i.message : ''));
					if (i.new_worker) st.title = i.message || '';
					if (i.status !== 'RUNNING' && i.artifacts && i.artifacts.length && NP.viewLinks)
						NP.append(li, [' ', NP.viewLinks(i)]);
				}, host);
		}
		log.insertBefore(li, log.firstChild);
		while (log.children.length > 8) log.removeChild(log.lastChild);
	}

	// Runs one request per target; each failure is one line naming the worker.
	async function each(key, b, fn) {
		const ts = targets();
		await NP.once(box.id + key, [b], async () => {
			showErr(err, '');
			const errs = [];
			await Promise.all(ts.map(async w => {
				try { await fn(w); } catch (e) { errs.push(`${w.name} (pid ${w.pid}): ${e.message}`); }
			}));
			showErr(err, errs.join(' · '));
		});
		refresh();
	}

	start.addEventListener('click', () => each('start', start, async w => {
		const body = { worker: w.id, mode: modeSel.value, duration: (dur.value || '30') + unit.value,
			format: format.value };
		if (interval.value.trim()) body.interval = interval.value.trim();
		const i = await api('POST', onHost('/api/v1/instances', w), body);
		note(`${body.mode} for ${body.duration} on ${label(w)}:`, i, w);
	}));
	stop.addEventListener('click', () => each('stop', stop, async w => {
		for (const id of NP.instancesRunningOn(w)) {
			await api('POST', onHost(`/api/v1/instances/${encodeURIComponent(id)}/stop`, w));
			note(`stopped on ${label(w)}:`, { id, status: 'STOPPED' }, w);
		}
	}));
	const act = (key, path, body, text) => async w => {
		const r = await api('POST', onHost(`/api/v1/workers/${encodeURIComponent(w.id)}/${path}`, w), body);
		if (r && r.id) note(`${text} of ${label(w)}:`, r, w);
		else note(`${text} of ${label(w)}: ${r && r.output ? r.output.trim() : 'done'}`);
	};
	buttons.get('stacks').addEventListener('click', () =>
		each('stacks', buttons.get('stacks'), act('stacks', 'stacks', undefined, 'thread dump')));
	buttons.get('heapdump').addEventListener('click', () =>
		each('heapdump', buttons.get('heapdump'), act('heapdump', 'heapdump', undefined, 'heap snapshot')));
	buttons.get('heap-on').addEventListener('click', () =>
		each('heap-on', buttons.get('heap-on'), act('heap-on', 'heap',
			// The interval field when it holds a size (512k); a time is for profiles.
			Object.assign({ action: 'enable' }, /^\d+(\.\d+)?\s*[kmg]?i?b?$/i.test(interval.value.trim()) ?
				{ interval: interval.value.trim() } : {}),
			'heap profiling on')));
	buttons.get('heap-off').addEventListener('click', () =>
		each('heap-off', buttons.get('heap-off'), act('heap-off', 'heap', { action: 'disable' }, 'heap profiling off')));
	// Attach and detach change what a worker can do: its details again.
	for (const k of ['attach', 'detach'])
		buttons.get(k).addEventListener('click', () => each(k, buttons.get(k), async w => {
			await act(k, k, undefined, 'nprof ' + k)(w);
			detailList = null;
			W.details.delete(key(w));
		}));
	buttons.get('coredump').addEventListener('click', () =>
		each('coredump', buttons.get('coredump'), act('coredump', 'coredump', undefined, 'core file')));
	buttons.get('restart').addEventListener('click', async () => {
		const ts = targets();
		if (!ts.length || NP.busy(box.id + 'restart')) return;
		const yes = await NP.confirm(`Restart ${ts.length} worker${ts.length > 1 ? 's' : ''}?`,
			h('div', h('p', 'nprofd asks each one\'s supervisor to restart it: the process is stopped ' +
				'(what it was doing is lost, its connections are dropped) and a new one is started, ' +
				'with a new pid. The instance ends when the new process is there.'),
				h('ul', ts.map(w => h('li', label(w), w.unit ? ` — unit ${w.unit}` : '')))),
			'Restart ' + (ts.length > 1 ? ts.length + ' workers' : ts[0].name));
		if (yes) each('restart', buttons.get('restart'), act('restart', 'restart', undefined, 'restart'));
	});
	// A command gets the duration above when its timeout allows it, else
	// nprofd's default.
	async function command(c, b) {
		const secs = (+dur.value || 10) * (unit.value === 'm' ? 60 : 1);
		const body = c.timeout && secs > c.timeout ? {} : { duration: secs + 's' };
		each('cmd:' + c.name, b, act('cmd', 'commands/' + encodeURIComponent(c.name), body, c.name));
	}
	modeSel.addEventListener('change', refresh);
	return { refresh };
}
NP.actionsPanel = actionsPanel;

// The operator's commands (each host has its own nprofd.conf) of the
// targets' hosts, by name; this host's when there is no target.
async function commandsOf(ts) {
	const hosts = ts.length ? [...new Set(ts.map(w => remote(w) ? w.host : ''))] : [''];
	const lists = await Promise.all(hosts.map(async host => {
		if (!W.commands.has(host)) {
			let list = [];
			try {
				list = (await api('GET', onHost('/api/v1/commands', { host }))).commands || [];
			} catch (e) { /* none offered */ }
			W.commands.set(host, list);
		}
		return W.commands.get(host);
	}));
	const byName = new Map();
	for (const c of lists.flat()) if (!byName.has(c.name)) byName.set(c.name, c);
	return [...byName.values()];
}

// ---- the workers table ---------------------------------------------------------------------

const COLS = ['host', 'pid', 'name', 'service', 'user', 'cpu_percent', 'rss_bytes', 'threads', 'uptime', 'agent'];
const rows = new Map();		// id -> { tr, box, cells, w }
let sortKey = 'cpu_percent', sortDir = -1, timer = null, order = '', panel = null, filterText = '';

function cellText(w, k) {
	switch (k) {
	case 'cpu_percent': return fmt.pct(w.cpu_percent);
	case 'rss_bytes': return fmt.bytes(w.rss_bytes);
	case 'uptime': return fmt.secs(w.uptime);
	case 'agent': return w.agent ? 'yes' : '';
	default: return w[k] === undefined || w[k] === null ? '' : String(w[k]);
	}
}

function makeRow(w) {
	const box = h('input', { type: 'checkbox', 'aria-label': 'select ' + w.pid });
	box.addEventListener('change', () => {
		if (box.checked) W.selected.add(key(w)); else W.selected.delete(key(w));
		r.tr.classList.toggle('sel', box.checked);
		selectionChanged();
	});
	const cells = {};
	const tds = [h('td.c-check', box)];
	for (const k of COLS) {
		const td = h('td', { class: 'c-' + k + (['pid', 'cpu_percent', 'rss_bytes', 'threads', 'uptime'].includes(k) ? ' num' : '') });
		if (k === 'pid' || k === 'name') {
			const a = h('a', { href: '#/workers/' + encodeURIComponent(w.id) +
				(remote(w) ? '?host=' + encodeURIComponent(w.host) : '') });
			td.appendChild(a);
			cells[k] = a;
		} else if (k === 'service') {
			const a = h('button.link', { type: 'button', title: 'select every worker of this service' });
			a.addEventListener('click', () => selectService(r.w.service, true));
			td.appendChild(a);
			cells[k] = a;
		} else {
			cells[k] = td;
		}
		tds.push(td);
	}
	const tr = h('tr', tds);
	tr.dataset.id = key(w);
	const r = { tr, box, cells, w };
	return r;
}

function updateRow(r, w) {
	r.w = w;
	for (const k of COLS) setText(r.cells[k], cellText(w, k));
	r.cells.name.title = w.cmdline || '';
	r.tr.classList.toggle('agent', !!w.agent);
	const sel = W.selected.has(key(w));
	if (r.box.checked !== sel) r.box.checked = sel;
	r.tr.classList.toggle('sel', sel);
}

function matches(w, q) {
	if (!q) return true;
	return q.split(/\s+/).every(t => [String(w.pid), w.name, w.service, w.user, w.cmdline, w.unit, w.host]
		.some(v => v && String(v).toLowerCase().includes(t)));
}

function sorted(list) {
	const k = sortKey, d = sortDir;
	return list.slice().sort((a, b) => {
		let x = a[k], y = b[k];
		if (typeof x === 'string' || typeof y === 'string') {
			x = (x || '').toLowerCase(); y = (y || '').toLowerCase();
		} else { x = +x || 0; y = +y || 0; }
		return x < y ? -d : x > y ? d : a.pid - b.pid;
	});
}

// Writes the table from W.list. Only the rows in and near the scrolled
// window are in the document (two spacer rows stand for the others), so
// thousands of workers cost a few dozen rows of layout; rows are made
// once per worker and kept, their cells written only when they change.
let shown = [], rowH = 0;
const padTop = h('tr.pad', h('td', { colspan: '10' })), padBottom = h('tr.pad', h('td', { colspan: '10' }));
function render() {
	const q = filterText.toLowerCase().trim();
	const seen = new Set(W.list.map(key));
	for (const [id, r] of rows) if (!seen.has(id)) { r.tr.remove(); rows.delete(id); }
	let dropped = false;
	for (const id of [...W.selected]) if (!seen.has(id)) { W.selected.delete(id); dropped = true; }
	shown = sorted(W.list.filter(w => matches(w, q)));
	order = '';
	renderWindow();
	setText($('w-count'), `${shown.length} of ${W.list.length}`);
	const all = $('w-all');
	all.checked = shown.length > 0 && shown.every(w => W.selected.has(key(w)));
	all.indeterminate = !all.checked && shown.some(w => W.selected.has(key(w)));
	renderServices();
	if (dropped) selectionChanged();
}

function renderWindow() {
	const wrap = $('w-wrap'), body = $('w-body');
	const hgt = rowH || 26;
	const view = wrap.clientHeight || window.innerHeight;
	const first = Math.max(0, Math.floor(wrap.scrollTop / hgt) - 15);
	const last = Math.min(shown.length, first + Math.ceil(view / hgt) + 30);
	const trs = [];
	for (let i = first; i < last; i++) {
		const w = shown[i];
		let r = rows.get(key(w));
		if (!r) { r = makeRow(w); rows.set(key(w), r); }
		updateRow(r, w);
		trs.push(r.tr);
	}
	padTop.firstChild.style.height = first * hgt + 'px';
	padBottom.firstChild.style.height = (shown.length - last) * hgt + 'px';
	const now = first + ':' + shown.slice(first, last).map(key).join(',');
	if (now !== order) {
		order = now;
		const frag = document.createDocumentFragment();
		frag.appendChild(padTop);
		for (const tr of trs) frag.appendChild(tr);
		frag.appendChild(padBottom);
		// Rows no longer in the window leave the document (they stay made).
		for (const el of [...body.children]) if (el.parentNode === body) el.remove();
		body.appendChild(frag);
	}
	// The real row height, once there is a row to measure.
	if (!rowH && trs.length && trs[0].offsetHeight) {
		rowH = trs[0].offsetHeight;
		if (rowH !== hgt) { order = ''; renderWindow(); }
	}
}
let scrollQueued = false;
$('w-wrap').addEventListener('scroll', () => {
	if (scrollQueued) return;
	scrollQueued = true;
	requestAnimationFrame(() => { scrollQueued = false; renderWindow(); });
});

function renderServices() {
	const box = $('w-services'), counts = new Map();
	for (const w of W.list) if (w.service) counts.set(w.service, (counts.get(w.service) || 0) + 1);
	const names = [...counts.keys()].sort();
	const sig = names.map(n => n + counts.get(n)).join('|');
	if (box.dataset.key !== sig) {
		box.dataset.key = sig;
		clear(box);
		for (const n of names.slice(0, 40)) {
			const b = h('button.chip', { type: 'button', dataset: { service: n },
				title: `select every worker of ${n} (again: unselect them)` }, `${n} (${counts.get(n)})`);
			b.addEventListener('click', () => {
				const ids = W.list.filter(w => w.service === n).map(key);
				selectService(n, !ids.every(id => W.selected.has(id)));
			});
			box.appendChild(b);
		}
	}
	for (const b of box.children) {
		const ids = W.list.filter(w => w.service === b.dataset.service).map(key);
		b.classList.toggle('on', ids.length > 0 && ids.every(id => W.selected.has(id)));
	}
}

function selectService(name, on) {
	for (const w of W.list) if (w.service === name) { if (on) W.selected.add(key(w)); else W.selected.delete(key(w)); }
	render();
	selectionChanged();
}

function selectionChanged() {
	renderServices();
	if (panel) panel.refresh();
}

// ready: what must be known before the list is placed (the host
// registry, read at entry), asked for meanwhile rather than first.
async function poll(ready) {
	try {
		const q = NP.hosts.query();
		const [j] = await Promise.all([api('GET', '/api/v1/workers' + (q ? '?' + q : '')), ready]);
		W.list = j.workers || [];
		if (NP.hosts.self) for (const w of W.list) if (!w.host) w.host = NP.hosts.self;
		W.byId = new Map(W.list.map(w => [key(w), w]));
		showErr($('w-err'), j.partial ? 'Some hosts did not answer: ' + (j.unanswered || [])
			.map(u => `${u.host} (${u.error})`).concat(j.error ? [j.error] : []).join('; ') : '');
		render();
	} catch (e) {
		showErr($('w-err'), e);
	}
}

NP.views.workers = {
	el: $('view-workers'),
	async enter({ query }) {
		const q = query.get('q');
		if (q !== null) { filterText = q; $('w-filter').value = q; }
		if (!panel) panel = actionsPanel($('w-actions'), () => [...W.selected].map(id => W.byId.get(id)).filter(Boolean));
		clearInterval(timer);
		timer = setInterval(() => { if (!document.hidden) poll(); }, 2000);
		await poll(NP.hosts.load());
		panel.refresh();
	},
	leave() { clearInterval(timer); timer = null; },
};

$('w-filter').addEventListener('input', () => {
	filterText = $('w-filter').value;
	render();
	// Keep the filter in the URL, without a new history entry.
	const hash = '#/workers' + (filterText ? '?q=' + encodeURIComponent(filterText) : '');
	history.replaceState(null, '', hash);
});
NP.hosts.filter($('w-host'), () => {
	W.selected.clear();
	poll().then(selectionChanged);
	NP.hosts.load();
});
$('w-all').addEventListener('change', () => {
	const q = filterText.toLowerCase().trim(), on = $('w-all').checked;
	for (const w of W.list) if (matches(w, q)) { if (on) W.selected.add(key(w)); else W.selected.delete(key(w)); }
	render();
	selectionChanged();
});
$('w-clear').addEventListener('click', () => { W.selected.clear(); render(); selectionChanged(); });
for (const th of document.querySelectorAll('#w-table th[data-key]')) {
	th.tabIndex = 0;
	th.title = 'sort';
	const sortBy = () => {
		const k = th.dataset.key;
		if (sortKey === k) sortDir = -sortDir;
		else { sortKey = k; sortDir = ['name', 'service', 'user'].includes(k) ? 1 : -1; }
		for (const o of document.querySelectorAll('#w-table th')) o.classList.remove('asc', 'desc');
		th.classList.add(sortDir > 0 ? 'asc' : 'desc');
		render();
	};
	th.addEventListener('click', sortBy);
	th.addEventListener('keydown', e => { if (e.key === 'Enter') sortBy(); });
	if (th.dataset.key === sortKey) th.classList.add('desc');
}
NP.onIdle = () => { if (panel && NP.current === NP.views.workers) panel.refresh(); };

// ---- one worker ------------------------------------------------------------------------------

let wdPanel = null, wdWorker = null, wdTimer = null;
NP.views.worker = {
	el: $('view-worker'),
	tab: 'workers',
	async enter({ id, query }) {
		const err = $('wd-err'), host = query && query.get('host');
		if (host && !NP.hosts.self) await NP.hosts.load();	// opened by its URL
		const where = { id, host: host || undefined };
		showErr(err, '');
		setText($('wd-title'), id);
		clear($('wd-facts'));
		clear($('wd-why'));
		wdWorker = null;
		if (!wdPanel) wdPanel = actionsPanel($('wd-actions'), () => wdWorker ? [wdWorker] : []);
		const load = async () => {
			try {
				const w = await api('GET', onHost('/api/v1/workers/' + encodeURIComponent(id), where));
				if (remote(where)) w.host = host;
				W.details.set(key(w), { w, at: Date.now() });
				wdWorker = w;
				showFacts(w);
				showErr(err, '');
			} catch (e) {
				wdWorker = null;
				showErr(err, e.status === 410 ? 'This worker has exited: ' + e.message : e);
			}
			wdPanel.refresh();
		};
		await load();
		clearInterval(wdTimer);
		wdTimer = setInterval(() => { if (!document.hidden) load(); }, 5000);
		if (NP.instanceTable) NP.instanceTable($('wd-instances'), { worker: id, host: remote(where) ? host : '' });
	},
	leave() {
		clearInterval(wdTimer);
		if (NP.instanceTable) NP.instanceTable($('wd-instances'), null);
	},
};

function showFacts(w) {
	setText($('wd-title'), label(w));
	const f = [['Host', w.host], ['Id', w.id], ['Pid', w.pid], ['Name', w.name], ['Command line', w.cmdline],
		['Owner', `${w.user} (uid ${w.uid})`], ['Service', w.service], ['Unit', w.unit],
		['Cgroup', w.cgroup], ['Container', w.container], ['CPU %', fmt.pct(w.cpu_percent)],
		['RSS', fmt.bytes(w.rss_bytes)], ['Threads', w.threads], ['Uptime', fmt.secs(w.uptime)],
		['Agent', w.agent ? 'loaded' : 'not loaded'], ['Modes', (w.modes || []).join(', ')],
		['Actions', (w.actions || []).join(', ')]];
	NP.append(clear($('wd-facts')), f.filter(([, v]) => v !== undefined && v !== null && v !== '')
		.map(([k, v]) => [h('dt', k), h('dd', String(v))]));
	const un = w.unavailable || {}, lis = [];
	for (const kind of ['modes', 'actions'])
		for (const [k, r] of Object.entries(un[kind] || {})) lis.push(h('li', h('b', k + ': '), r));
	NP.append(clear($('wd-why')), lis.length ? lis : [h('li', 'Everything is available.')]);
}
})();
