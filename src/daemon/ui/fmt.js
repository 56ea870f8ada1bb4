// Numbers and times in words for the page. Pure: no DOM, no clock but
// the one given, so that node's tests (tests/ui/) can run them.

export function bytes(n) {
	if (n === null || n === undefined) return '';
	const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
	let i = 0;
	while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
	return (i === 0 ? n : n.toFixed(n < 10 ? 1 : 0)) + ' ' + u[i];
}

// A duration in its two largest units: 3s, 2m 05s, 1h 00m, 2d 3h.
export function secs(s) {
	if (s === null || s === undefined || isNaN(s)) return '';
	s = Math.max(0, Math.round(s));
	const d = Math.floor(s / 86400), hh = Math.floor(s % 86400 / 3600);
	const m = Math.floor(s % 3600 / 60), ss = s % 60;
	if (d) return `${d}d ${hh}h`;
	if (hh) return `${hh}h ${String(m).padStart(2, '0')}m`;
	if (m) return `${m}m ${String(ss).padStart(2, '0')}s`;
	return `${ss}s`;
}

export function pct(p) { return p === null || p === undefined ? '' : p.toFixed(p < 10 ? 1 : 0); }

// A time of today (now's day, local time) as HH:MM:SS, another day's
// with its date; what is not a time, as given.
export function time(iso, now = new Date()) {
	if (!iso) return '';
	const t = new Date(iso);
	if (isNaN(t)) return iso;
	const p = n => String(n).padStart(2, '0');
	const hms = `${p(t.getHours())}:${p(t.getMinutes())}:${p(t.getSeconds())}`;
	return t.toDateString() === now.toDateString() ? hms :
		`${t.getFullYear()}-${p(t.getMonth() + 1)}-${p(t.getDate())} ${hms}`;
}

// A worker as the page names it: split (pid 42, web).
export function workerLabel(w) { return `${w.name} (pid ${w.pid}${w.service ? ', ' + w.service : ''})`; }
