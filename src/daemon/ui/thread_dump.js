// A thread dump, readable: identical stacks grouped (threads.js), the
// largest first, each with the frame its threads block in; a filter on
// thread and function names.
import { h, append, clear } from './dom.js';
import { time } from './fmt.js';
import { fetchText } from './api.js';
import { groupThreads, stateCounts, blockingIndex } from './threads.js';

// Fetches the dump at url into out.
export async function threadDump(url, out) {
	let td;
	try {
		const text = await fetchText(url);
		try { td = JSON.parse(text); } catch (e) {
			append(clear(out), [h('pre.text', text)]);
			return;
		}
	} catch (e) {
		append(clear(out), [h('p.err.on', e.message)]);
		return;
	}
	const threads = td.threads || [];
	const list = groupThreads(threads);
	const head = h('div.tdhead',
		h('b', `${td.comm || ''} (pid ${td.pid})`),
		` · ${threads.length} threads in ${list.length} distinct stacks · `,
		Object.entries(stateCounts(threads)).map(([s, n]) => `${n} ${s}`).join(', '),
		td.method ? ` · taken by ${td.method}` : '',
		td.pause_max_ns !== undefined ? ` · longest pause ${(td.pause_max_ns / 1e6).toFixed(2)} ms` : '',
		td.time_ns ? ` · at ${time(new Date(td.time_ns / 1e6).toISOString())}` : '');
	const filter = h('input', { type: 'search', placeholder: 'Filter threads or functions', class: 'tdfilter',
		'aria-label': 'Filter threads or functions' });
	const body = h('div.groups', list.map(g => group(g)));
	filter.addEventListener('input', () => {
		const q = filter.value.toLowerCase();
		for (const el of body.children) el.hidden = q && !el.textContent.toLowerCase().includes(q);
	});
	append(clear(out), [head, filter, body]);
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
