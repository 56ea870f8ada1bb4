// nprof's web UI, the core: calls to nprofd's API (docs/api.md) with the
// session's CSRF token, small DOM helpers, formatting, the hash router,
// sign-in and the host view. workers.js and instances.js add their views
// to NP.views. No framework, no build step; the page's CSP allows no
// inline script or style, so styles are classes or element.style.
'use strict';

const NP = window.NP = {
	session: null,		// GET /api/v1/session's object once signed in
	whoami: null,
	views: {},		// name -> { el, enter(params), leave() }
	current: null,		// the view shown
};

// ---- the API ------------------------------------------------------------------

class ApiError extends Error {
	constructor(status, message, field) {
		super(message);
		this.status = status;
		this.field = field;
	}
}
NP.ApiError = ApiError;

// One call: JSON in, JSON out; an error reply becomes an ApiError with
// its one line. A 401 on anything but the session itself means the
// session ended: back to the sign-in form.
NP.api = async function (method, path, body) {
	const headers = { Accept: 'application/json' };
	if (body !== undefined) headers['Content-Type'] = 'application/json';
	if (method !== 'GET' && NP.session && NP.session.csrf) headers['X-CSRF-Token'] = NP.session.csrf;
	let r;
	try {
		r = await fetch(path, { method, headers, credentials: 'same-origin', cache: 'no-store',
			body: body === undefined ? undefined : JSON.stringify(body) });
	} catch (e) {
		throw new ApiError(0, 'nprofd does not answer (' + e.message + '): is it running?');
	}
	let j = null;
	if ((r.headers.get('Content-Type') || '').includes('json')) {
		try { j = await r.json(); } catch (e) { j = null; }
	}
	if (!r.ok) {
		const msg = j && j.error ? j.error : `${r.status} ${r.statusText || 'error'}`;
		if (r.status === 401 && !path.startsWith('/api/v1/session') && NP.session) NP.signedOut(msg);
		throw new ApiError(r.status, msg, j && j.field);
	}
	return j;
};

// Text of an artifact (a thread dump), as stored or converted.
NP.fetchText = async function (path) {
	const r = await fetch(path, { credentials: 'same-origin', cache: 'no-store' });
	if (!r.ok) {
		let msg = `${r.status} ${r.statusText}`;
		try { const j = await r.json(); if (j.error) msg = j.error; } catch (e) { /* not JSON */ }
		throw new ApiError(r.status, msg);
	}
	return r.text();
};

// ---- DOM -----------------------------------------------------------------------

// h('a.link', {href: '#/x', title: 't'}, 'text', child...): an element.
// Keys starting with "on" are listeners; "class" and "dataset" as named.
NP.h = function (spec, attrs, ...kids) {
	const [tag, ...classes] = spec.split('.');
	const el = document.createElement(tag || 'div');
	if (classes.length) el.className = classes.join(' ');
	if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
		kids.unshift(attrs);
		attrs = null;
	}
	for (const k in attrs || {}) {
		const v = attrs[k];
		if (v === undefined || v === null || v === false) continue;
		if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
		else if (k === 'class') el.className += (el.className ? ' ' : '') + v;
		else if (k === 'dataset') Object.assign(el.dataset, v);
		else if (k in el && typeof v !== 'string') el[k] = v;
		else el.setAttribute(k, v === true ? '' : v);
	}
	NP.append(el, kids);
	return el;
};
NP.append = function (el, kids) {
	for (const k of kids.flat(Infinity)) {
		if (k === null || k === undefined || k === false) continue;
		el.appendChild(k instanceof Node ? k : document.createTextNode(String(k)));
	}
	return el;
};
NP.$ = id => document.getElementById(id);
NP.clear = el => { while (el.firstChild) el.removeChild(el.firstChild); return el; };
// Sets an element's text only when it changed (no needless layout).
NP.setText = (el, t) => { t = String(t); if (el.textContent !== t) el.textContent = t; };

// One error line near the control that caused it; '' clears it.
NP.showErr = function (el, e) {
	if (!el) return;
	const t = !e ? '' : typeof e === 'string' ? e : e.message;
	NP.setText(el, t);
	el.classList.toggle('on', !!t);
};

// The confirmation dialog: resolves true when the user confirms.
NP.confirm = function (title, body, okLabel) {
	const d = NP.$('confirm');
	NP.setText(NP.$('confirm-title'), title);
	NP.append(NP.clear(NP.$('confirm-body')), [body]);
	NP.setText(NP.$('confirm-ok'), okLabel || 'OK');
	return new Promise(resolve => {
		d.addEventListener('close', () => resolve(d.returnValue === 'ok'), { once: true });
		d.returnValue = 'cancel';
		d.showModal();
		NP.$('confirm-cancel').focus();
	});
};

// Runs fn once at a time per key: a second click while the first is in
// flight does nothing, and the buttons given stay disabled meanwhile.
const inFlight = new Set();
NP.once = async function (key, buttons, fn) {
	if (inFlight.has(key)) return undefined;
	inFlight.add(key);
	const bs = (buttons || []).filter(Boolean);
	const was = bs.map(b => b.disabled);
	bs.forEach(b => { b.disabled = true; b.classList.add('busy'); });
	try {
		return await fn();
	} finally {
		inFlight.delete(key);
		bs.forEach((b, i) => { b.classList.remove('busy'); b.disabled = was[i]; });
		if (NP.onIdle) NP.onIdle();
	}
};
NP.busy = key => inFlight.has(key);

// ---- formatting ------------------------------------------------------------------

NP.fmt = {
	bytes(n) {
		if (n === null || n === undefined) return '';
		const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
		let i = 0;
		while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
		return (i === 0 ? n : n.toFixed(n < 10 ? 1 : 0)) + ' ' + u[i];
	},
	secs(s) {
		if (s === null || s === undefined || isNaN(s)) return '';
		s = Math.max(0, Math.round(s));
		const d = Math.floor(s / 86400), hh = Math.floor(s % 86400 / 3600);
		const m = Math.floor(s % 3600 / 60), ss = s % 60;
		if (d) return `${d}d ${hh}h`;
		if (hh) return `${hh}h ${String(m).padStart(2, '0')}m`;
		if (m) return `${m}m ${String(ss).padStart(2, '0')}s`;
		return `${ss}s`;
	},
	pct(p) { return p === null || p === undefined ? '' : p.toFixed(p < 10 ? 1 : 0); },
	// A time of today as HH:MM:SS, another day's with its date.
	time(iso) {
		if (!iso) return '';
		const t = new Date(iso);
		if (isNaN(t)) return iso;
		const now = new Date(), p = n => String(n).padStart(2, '0');
		const hms = `${p(t.getHours())}:${p(t.getMinutes())}:${p(t.getSeconds())}`;
		return t.toDateString() === now.toDateString() ? hms :
			`${t.getFullYear()}-${p(t.getMonth() + 1)}-${p(t.getDate())} ${hms}`;
	},
};

// ---- the router: #/view/arg...?k=v ------------------------------------------------

function parseHash() {
	const h = location.hash.replace(/^#\/?/, '');
	const [p, q] = h.split('?');
	const parts = p.split('/').filter(Boolean).map(decodeURIComponent);
	return { parts, query: new URLSearchParams(q || '') };
}

NP.go = function (hash) {
	if (location.hash === hash) route(); else location.hash = hash;
};

function show(name, params) {
	const v = NP.views[name] || NP.views.missing;
	if (NP.current && NP.current !== v && NP.current.leave) NP.current.leave();
	for (const el of document.querySelectorAll('section.view')) el.hidden = el !== v.el;
	for (const a of document.querySelectorAll('#nav a'))
		a.classList.toggle('active', a.dataset.view === (v.tab || name));
	NP.current = v;
	if (v.enter) v.enter(params);
}

function route() {
	if (!NP.session) { show('signin', {}); return; }
	const { parts, query } = parseHash();
	const [top, id, ...rest] = parts;
	switch (top) {
	case undefined: case 'workers':
		if (id) show('worker', { id, query }); else show('workers', { query });
		break;
	case 'instances':
		if (id) show('instance', { id, rest, query }); else show('instances', { query });
		break;
	case 'compare': show('compare', { before: id, after: rest[0], query }); break;
	case 'files': show('files', { query }); break;
	case 'host': show('host', { query }); break;
	default: show('missing', {});
	}
}
NP.route = route;

// ---- sign-in -------------------------------------------------------------------------

function signedIn(s) {
	NP.session = s;
	NP.$('nav').hidden = false;
	NP.$('me').hidden = false;
	NP.setText(NP.$('me-name'), s.user + (s.admin ? ' (admin)' : ''));
	NP.$('me-name').title = `uid ${s.uid}` + (s.expires ? `, session until ${NP.fmt.time(s.expires)}` : '');
	route();
}

// What each module forgets at sign-out (another user may sign in next).
NP.resets = [() => {
	for (const id of ['host-me', 'host-facts', 'host-caps']) NP.clear(NP.$(id));
}];

NP.signedOut = function (why) {
	const was = !!NP.session;
	for (const f of NP.resets) f();
	NP.session = null;
	NP.whoami = null;
	NP.$('nav').hidden = true;
	NP.$('me').hidden = true;
	if (NP.current && NP.current.leave) NP.current.leave();
	NP.current = null;
	show('signin', {});
	NP.showErr(NP.$('signin-err'), was && why ? 'Signed out: ' + why : '');
};

NP.views.signin = {
	el: NP.$('view-signin'),
	enter() { setTimeout(() => NP.$('signin-user').focus(), 0); },
};
NP.views.missing = { el: NP.$('view-missing') };

NP.$('signin').addEventListener('submit', ev => {
	ev.preventDefault();
	const err = NP.$('signin-err');
	NP.once('signin', [NP.$('signin-submit')], async () => {
		NP.showErr(err, '');
		try {
			const s = await NP.api('POST', '/api/v1/session', {
				user: NP.$('signin-user').value.trim(), password: NP.$('signin-password').value });
			NP.$('signin-password').value = '';
			signedIn(s);
		} catch (e) {
			NP.showErr(err, e.status === 401 ? (e.message || 'wrong user or password') :
				e.status === 429 ? 'Too many attempts: ' + e.message : e);
		}
	});
});

NP.$('signout').addEventListener('click', () => {
	NP.once('signout', [NP.$('signout')], async () => {
		try { await NP.api('DELETE', '/api/v1/session'); } catch (e) { /* signed out anyway */ }
		NP.signedOut('');
	});
});

// ---- host -------------------------------------------------------------------------------

// GET /api/v1/host into the host view: the facts, and for perf, ptrace
// and the agent what nprofd says they mean for you. name: another host's
// (asked through this one), or undefined.
function renderHost(host, name) {
	const h = NP.h, facts = (...kv) => h('div.subs', kv.map(([k, v]) => h('span.sub', h('span.hint', k + ' '), v)));
	const yes = v => v ? 'yes' : 'no';
	NP.append(NP.clear(NP.$('host-facts')), [h('h2', name ? `Host ${name}` : 'This host'), h('dl.facts', [
		h('dt', 'Host name'), h('dd', host.name),
		h('dt', 'Kernel'), h('dd', `${host.kernel} (${host.machine})`),
		h('dt', 'CPUs'), h('dd', String(host.cpus)),
		h('dt', 'Up for'), h('dd', NP.fmt.secs(host.uptime_seconds)),
		h('dt', 'perf events'), h('dd', h('div.means', host.perf.means), facts(
			['perf_event_paranoid', String(host.perf.paranoid)], ['available', yes(host.perf.available)],
			['hardware events', yes(host.perf.hardware_events)])),
		h('dt', 'ptrace (thread dumps, core files)'), h('dd', h('div.means', host.ptrace.means), facts(
			['Yama ptrace_scope', host.ptrace.yama_scope < 0 ? 'none (no Yama)' : String(host.ptrace.yama_scope)])),
		h('dt', 'nprof\'s agent'), h('dd', h('div.means', host.agent.means), facts(
			['installed', yes(host.agent.installed)], ...(host.agent.library ? [['library', host.agent.library]] : []))),
	])]);
}
NP.renderHost = renderHost;

// The host view shows this host, or the one the host filter (hosts.js)
// names, or ?host=NAME: each fact asked of that host's own daemon.
let hostFilter = false;
NP.views.host = {
	el: NP.$('view-host'),
	async enter({ query }) {
		const err = NP.$('host-err'), h = NP.h, H = NP.hosts;
		NP.showErr(err, '');
		if (query && query.has('host')) H.choose(query.get('host'));
		if (!hostFilter) {
			hostFilter = true;
			H.filter(NP.$('h-host'), () => NP.go('#/host'), false);
		}
		await H.load();
		const where = { host: H.choice === '*' ? '' : H.choice }, name = H.remote(where) ? where.host : undefined;
		for (const id of ['host-me', 'host-facts', 'host-caps']) NP.clear(NP.$(id));
		try {
			const me = await NP.api('GET', H.on('/api/v1/whoami', where));
			if (!name) NP.whoami = me;
			NP.append(NP.clear(NP.$('host-me')), [
				h('dt', 'Host'), h('dd', name ? `${name} (through ${H.self})` : me.host || ''),
				h('dt', 'You are'), h('dd', `${me.user} (uid ${me.uid})`),
				h('dt', 'Role'), h('dd', me.admin ? `admin: you see and act on every worker of ${name ? 'host ' + name : 'this host'}` :
					'user: you see and act on your own processes only'),
				h('dt', 'Signed in via'), h('dd', name ? `this host, which asks ${name} for you` : me.via || ''),
			]);
		} catch (e) { NP.showErr(err, e); }
		try {
			renderHost(await NP.api('GET', H.on('/api/v1/host', where)), name);
		} catch (e) {
			NP.clear(NP.$('host-facts'));
			NP.showErr(err, e);
		}
		try {
			const [ws, cmds] = await Promise.all([NP.api('GET', H.on('/api/v1/workers?detail=1', where)),
				NP.api('GET', H.on('/api/v1/commands', where))]);
			renderCaps(ws.workers || [], cmds);
		} catch (e) { NP.showErr(err, e); }
	},
};

// What the workers the user can see allow, summed over them, with the
// reasons for what they do not.
function renderCaps(workers, cmds) {
	const h = NP.h, modes = new Map(), why = new Map();
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
	NP.append(NP.clear(NP.$('host-caps')), [
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

// ---- start --------------------------------------------------------------------------------

window.addEventListener('hashchange', route);
document.addEventListener('DOMContentLoaded', async () => {
	try {
		signedIn(await NP.api('GET', '/api/v1/session'));
	} catch (e) {
		NP.signedOut('');
		if (e.status !== 401) NP.showErr(NP.$('signin-err'), e.status === 404 ?
			'This nprofd has no sign-in (POST /api/v1/session): use the CLI or an API token.' : e);
	}
});
