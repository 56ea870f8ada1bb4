// The hash router: #/view/arg...?k=v picks a view. A view is
// { el, tab, enter(params), leave() }: its section, the nav tab it
// belongs to, what it does when shown and when left. main.js gives the
// table of views; views only navigate (go), so none imports another.
import { session } from './session.js';

let views = {};
let current = null;		// the view shown

export function start(table) {
	views = table;
	window.addEventListener('hashchange', route);
}

function parseHash() {
	const h = location.hash.replace(/^#\/?/, '');
	const [p, q] = h.split('?');
	const parts = p.split('/').filter(Boolean).map(decodeURIComponent);
	return { parts, query: new URLSearchParams(q || '') };
}

export function go(hash) {
	if (location.hash === hash) route(); else location.hash = hash;
}

export function show(name, params) {
	const v = views[name] || views.missing;
	if (current && current !== v && current.leave) current.leave();
	for (const el of document.querySelectorAll('section.view')) el.hidden = el !== v.el;
	for (const a of document.querySelectorAll('#nav a'))
		a.classList.toggle('active', a.dataset.view === (v.tab || name));
	current = v;
	if (v.enter) v.enter(params);
}

// Leaves the view shown, showing none (signing out).
export function leave() {
	if (current && current.leave) current.leave();
	current = null;
}

export const showing = v => current === v;

export function route() {
	if (!session()) { show('signin', {}); return; }
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
	case 'services': show('services', { query }); break;
	case 'files': show('files', { query }); break;
	case 'host': show('host', { query }); break;
	default: show('missing', {});
	}
}
