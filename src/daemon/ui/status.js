// An instance in words: what it is, its status and, while it runs, the
// time it has left. Pure: the clock is an argument (tests/ui/).
import { secs } from './fmt.js';
import { KINDS } from './nouns.js';

export const isProfile = i => (i.kind || 'profile') === 'profile';

// Seconds an instance still has to run at now (ms since the epoch).
export function remaining(i, now = Date.now()) {
	const end = Date.parse(i.created) + (i.duration || 0) * 1000;
	return Math.max(0, (end - now) / 1000);
}

// RUNNING · 25s left for a running profile of a known duration.
export function statusText(i, now = Date.now()) {
	if (i.status !== 'RUNNING') return i.status;
	if (!isProfile(i) || !i.duration) return 'RUNNING';
	return `RUNNING · ${secs(Math.ceil(remaining(i, now)))} left`;
}

export function what(i) {
	const k = i.kind || 'profile';
	return k === 'profile' ? i.mode : KINDS[k] || k;
}

// "3 workers: service gsplit*": whom a service's profile (an instance
// with a selector) recorded.
export function groupName(i) {
	const sel = Object.entries(i.selector || {}).map(([k, v]) => `${k} ${[].concat(v).join(', ')}`).join('; ');
	return `${i.members ?? '?'} workers: ${sel}`;
}
