// The workers view (Storm's executors): the table of workers, refreshed
// every 2 s in place (rows are kept by worker key and only changed cells
// are written, so selection, focus and scroll survive a refresh), and
// the actions panel on the selected ones.
import { api } from './api.js';
import { h, $, clear, setText, showErr, onIdle } from './dom.js';
import { bytes, secs, pct } from './fmt.js';
import { hosts, remote, key, hostQuery, load as loadHosts, filter as hostFilter } from './hosts.js';
import { forgetOnEnd } from './session.js';
import { showing } from './router.js';
import { workers as W, setList } from './worker_store.js';
import { actionsPanel } from './actions.js';
import { workerMatches, containerCell } from './worker_filter.js';

const COLS = ['host', 'pid', 'name', 'service', 'unit', 'container', 'user', 'cpu_percent', 'rss_bytes', 'threads', 'uptime', 'agent'];
const rows = new Map();		// id -> { tr, box, cells, w }
let sortKey = 'cpu_percent', sortDir = -1, timer = null, order = '', panel = null, filterText = '';

function cellText(w, k) {
	switch (k) {
	case 'cpu_percent': return pct(w.cpu_percent);
	case 'rss_bytes': return bytes(w.rss_bytes);
	case 'uptime': return secs(w.uptime);
	case 'agent': return w.agent ? 'yes' : '';
	case 'container': return containerCell(w).text;
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
	r.cells.service.title = 'select every worker of this service' +
		(w.service_source ? ` (named by its ${w.service_source})` : '');
	const c = containerCell(w).title;
	if (r.cells.container.title !== c) r.cells.container.title = c;
	r.tr.classList.toggle('agent', !!w.agent);
	const sel = W.selected.has(key(w));
	if (r.box.checked !== sel) r.box.checked = sel;
	r.tr.classList.toggle('sel', sel);
}

const matches = workerMatches;

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
const padTop = h('tr.pad', h('td', { colspan: String(COLS.length + 1) })),
	padBottom = h('tr.pad', h('td', { colspan: String(COLS.length + 1) }));
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
		const q = hostQuery();
		const [j] = await Promise.all([api('GET', '/api/v1/workers' + (q ? '?' + q : '')), ready]);
		const list = j.workers || [];
		if (hosts.self) for (const w of list) if (!w.host) w.host = hosts.self;
		setList(list);
		showErr($('w-err'), j.partial ? 'Some hosts did not answer: ' + (j.unanswered || [])
			.map(u => `${u.host} (${u.error})`).concat(j.error ? [j.error] : []).join('; ') : '');
		render();
	} catch (e) {
		showErr($('w-err'), e);
	}
}

export const workersView = {
	el: $('view-workers'),
	async enter({ query }) {
		const q = query.get('q');
		if (q !== null) { filterText = q; $('w-filter').value = q; }
		if (!panel) panel = actionsPanel($('w-actions'), () => [...W.selected].map(id => W.byId.get(id)).filter(Boolean));
		clearInterval(timer);
		timer = setInterval(() => { if (!document.hidden) poll(); }, 2000);
		await poll(loadHosts());
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
hostFilter($('w-host'), () => {
	W.selected.clear();
	poll().then(selectionChanged);
	loadHosts();
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
		else { sortKey = k; sortDir = ['name', 'service', 'unit', 'container', 'user'].includes(k) ? 1 : -1; }
		for (const o of document.querySelectorAll('#w-table th')) o.classList.remove('asc', 'desc');
		th.classList.add(sortDir > 0 ? 'asc' : 'desc');
		render();
	};
	th.addEventListener('click', sortBy);
	th.addEventListener('keydown', e => { if (e.key === 'Enter') sortBy(); });
	if (th.dataset.key === sortKey) th.classList.add('desc');
}
onIdle(() => { if (panel && showing(workersView)) panel.refresh(); });

// The list the next user sees is their own.
forgetOnEnd(render);
