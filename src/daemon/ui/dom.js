// Small DOM helpers: an element builder, errors shown by their control,
// the confirmation dialog, and one click at a time. The page's CSP allows
// no inline script or style, so styles are classes or element.style.

// h('a.link', {href: '#/x', title: 't'}, 'text', child...): an element.
// Keys starting with "on" are listeners; "class" and "dataset" as named.
export function h(spec, attrs, ...kids) {
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
	append(el, kids);
	return el;
}

export function append(el, kids) {
	for (const k of kids.flat(Infinity)) {
		if (k === null || k === undefined || k === false) continue;
		el.appendChild(k instanceof Node ? k : document.createTextNode(String(k)));
	}
	return el;
}

export const $ = id => document.getElementById(id);
export const clear = el => { while (el.firstChild) el.removeChild(el.firstChild); return el; };
// Sets an element's text only when it changed (no needless layout).
export const setText = (el, t) => { t = String(t); if (el.textContent !== t) el.textContent = t; };

// One error line near the control that caused it; '' clears it.
export function showErr(el, e) {
	if (!el) return;
	const t = !e ? '' : typeof e === 'string' ? e : e.message;
	setText(el, t);
	el.classList.toggle('on', !!t);
}

// The confirmation dialog: resolves true when the user confirms.
export function confirm(title, body, okLabel) {
	const d = $('confirm');
	setText($('confirm-title'), title);
	append(clear($('confirm-body')), [body]);
	setText($('confirm-ok'), okLabel || 'OK');
	return new Promise(resolve => {
		d.addEventListener('close', () => resolve(d.returnValue === 'ok'), { once: true });
		d.returnValue = 'cancel';
		d.showModal();
		$('confirm-cancel').focus();
	});
}

// Runs fn once at a time per key: a second click while the first is in
// flight does nothing, and the buttons given stay disabled meanwhile.
// After each, the idle listeners run (a panel re-enables its buttons).
const inFlight = new Set();
const idleListeners = [];
export async function once(key, buttons, fn) {
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
		for (const f of idleListeners) f();
	}
}
export const busy = key => inFlight.has(key);
export const onIdle = fn => { idleListeners.push(fn); };
