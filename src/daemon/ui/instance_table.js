// A table of instances (Flink's profiling table) with a live countdown,
// polled at most once a second while one runs; the instances view and a
// worker's page each show one. Two profiles can be ticked, to compare.
import { api } from './api.js';
import { h, append, clear, setText, showErr, once } from './dom.js';
import { secs, time } from './fmt.js';
import { hosts, key, onHost } from './hosts.js';
import { remember } from './instance_store.js';
import { statusText, what, isProfile, groupName } from './status.js';
import { viewLinks, profileOf, instHash, workerHash } from './artifacts.js';
import { workerName } from './worker_store.js';

const tables = new Map();	// box -> state

// The state of the table in box: { picked: [keys ticked], onList(list),
// onPick(picked) } the view may set.
export const tableIn = box => tables.get(box);

// instanceTable(box, {worker, status, host}) shows and polls; (box, null)
// stops it. host: '' this host, '*' every host, or one.
export function instanceTable(box, filter) {
	let t = tables.get(box);
	if (!filter) { if (t) { clearTimeout(t.timer); clearInterval(t.tick); tables.delete(box); } return; }
	if (!t) {
		const err = h('p.err', { role: 'alert' });
		const body = h('tbody');
		const table = h('table.grid', { class: hosts.self ? 'hosts' : '' }, h('thead', h('tr', ['Id', 'Host',
			'Worker', 'What', 'Duration', 'Status', 'Message', 'Triggered', 'Finished', 'Owner', 'Artifacts', '']
			.map(c => h('th', { class: c === 'Host' ? 'c-host' : '' }, c)))), body);
		append(clear(box), [err, h('div.tablewrap.short', table)]);
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
	poll(box, t);
}

async function poll(box, t) {
	if (tables.get(box) !== t) return;
	if (document.hidden) {
		t.timer = setTimeout(() => poll(box, t), 1000);
		return;
	}
	const q = new URLSearchParams({ limit: '200' });
	// A service's profile is one row: its members are on its page (and
	// on each worker's).
	if (t.filter.worker) q.set('worker', t.filter.worker);
	else q.set('parent', 'none');
	if (t.filter.status) q.set('status', t.filter.status);
	if (t.filter.host) q.set('host', t.filter.host);
	let running = false;
	const asked = t.filter;
	try {
		const j = await api('GET', '/api/v1/instances?' + q);
		// the filter changed while the answer was on its way: the new
		// filter's poll draws the table (and goes on polling), not this
		if (tables.get(box) !== t || t.filter !== asked) return;
		const list = j.instances || [];
		remember(list);
		render(t, list);
		running = list.some(i => i.status === 'RUNNING');
		showErr(t.err, '');
		if (t.onList) t.onList(list);
	} catch (e) {
		if (tables.get(box) !== t || t.filter !== asked) return;
		showErr(t.err, e);
	}
	if (tables.get(box) !== t) return;
	t.timer = setTimeout(() => poll(box, t), running ? 1000 : 5000);
}

function countdown(t) {
	for (const r of t.rows.values())
		if (r.i.status === 'RUNNING') setText(r.status, statusText(r.i));
}

function render(t, list) {
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
	append(clear(c.id), [r.pick, h('a', { href: instHash(i) }, i.id)]);
	r.pick.disabled = !profileOf(i);
	setText(c.host, i.host || '');
	if (i.selector)
		append(clear(c.worker), [h('span', { title: 'every worker the selector took, at once' },
			groupName(i)), i.service ? h('span.hint', ' ' + i.service) : null]);
	else
		append(clear(c.worker), [h('a', { href: workerHash(i, i.worker), title: i.worker },
			workerName(i)), i.service ? h('span.hint', ' ' + i.service) : null]);
	setText(c.what, what(i));
	setText(c.duration, i.duration ? secs(i.duration) : '');
	setText(c.message, (i.message || '') + (i.new_worker ? ` new worker ${i.new_worker}` : ''));
	c.message.title = i.message || '';
	setText(c.created, time(i.created));
	c.created.title = i.created || '';
	setText(c.finished, time(i.finished));
	c.finished.title = i.finished || '';
	setText(c.user, i.user || '');
	append(clear(c.arts), [viewLinks(i)]);
	clear(c.stop);
	if (i.status === 'RUNNING' && isProfile(i)) {
		const b = h('button.small', { type: 'button', title: 'end it now; what it recorded is kept (STOPPED)' }, 'Stop');
		b.addEventListener('click', () => once('stop:' + i.id, [b], async () => {
			showErr(r.err, '');
			try {
				await api('POST', onHost(`/api/v1/instances/${encodeURIComponent(i.id)}/stop`, i));
				setText(r.status, 'STOPPING');
			} catch (e) { showErr(r.err, e); }
		}));
		append(c.stop, [b, r.err]);
	}
}
