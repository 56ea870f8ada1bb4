// The client of nprofd's API (docs/api.md): JSON in, JSON out, the
// session's CSRF token on every change, an error reply as an ApiError
// with its one line.
import { session, lost } from './session.js';

export class ApiError extends Error {
	constructor(status, message, field) {
		super(message);
		this.status = status;
		this.field = field;
	}
}

// A 401 on anything but the session itself means the session ended:
// the page signs out (session.js).
export async function api(method, path, body) {
	const headers = { Accept: 'application/json' };
	if (body !== undefined) headers['Content-Type'] = 'application/json';
	const s = session();
	if (method !== 'GET' && s && s.csrf) headers['X-CSRF-Token'] = s.csrf;
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
		if (r.status === 401 && !path.startsWith('/api/v1/session')) lost(msg);
		throw new ApiError(r.status, msg, j && j.field);
	}
	return j;
}

// Text of an artifact (a thread dump), as stored or converted.
export async function fetchText(path) {
	const r = await fetch(path, { credentials: 'same-origin', cache: 'no-store' });
	if (!r.ok) {
		let msg = `${r.status} ${r.statusText}`;
		try { const j = await r.json(); if (j.error) msg = j.error; } catch (e) { /* not JSON */ }
		throw new ApiError(r.status, msg);
	}
	return r.text();
}
