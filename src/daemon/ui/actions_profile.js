// The actions panel's profiling controls: the mode (each with what it
// records, marked when a target cannot use it), duration, interval and
// format, Start on every target, Start as one profile of them all, and
// Stop of their running profiles.
import { api } from './api.js';
import { h, setText } from './dom.js';
import { workerLabel } from './fmt.js';
import { MODES, FORMATS } from './nouns.js';
import { onHost } from './hosts.js';
import { runningOn } from './instance_store.js';

const TOGETHER = 'One profile of the selected workers, a root per process (one for each host)';

export function profileControls(run) {
	const id = k => run.box.id + '-' + k;
	const mode = h('select', { 'aria-label': 'Mode', id: id('mode') },
		Object.keys(MODES).map(m => h('option', { value: m, title: MODES[m] }, m)));
	const modeWhy = h('span.hint.modewhy');
	const dur = h('input', { type: 'number', min: '1', value: '30', 'aria-label': 'Duration', class: 'n', id: id('duration') });
	const unit = h('select', { 'aria-label': 'Duration unit', id: id('unit') },
		h('option', { value: 's' }, 'seconds'), h('option', { value: 'm' }, 'minutes'));
	const interval = h('input', { placeholder: 'mode default', 'aria-label': 'Interval', class: 'iv', id: id('interval'),
		title: 'The sampling interval: a time (10ms, 1ms) or, for alloc and heap, a size (512k)' });
	const format = h('select', { 'aria-label': 'Format', id: id('format'),
		title: 'The format its download defaults to (every format stays available)' },
		FORMATS.map(f => h('option', { value: f }, f)));
	const start = run.button('start', 'Start', { class: 'primary' });
	const together = run.button('together', 'Start as one profile', { title: TOGETHER });
	const stop = run.button('stop', 'Stop',
		{ title: 'Stop the running profiling instances of the selected workers (they keep what they recorded)' });

	// The request's body but its target(s).
	const settings = () => {
		const body = { mode: mode.value, duration: (dur.value || '30') + unit.value, format: format.value };
		if (interval.value.trim()) body.interval = interval.value.trim();
		return body;
	};
	start.addEventListener('click', () => run.each('start', start, async w => {
		const body = Object.assign({ worker: w.id }, settings());
		const i = await api('POST', onHost('/api/v1/instances', w), body);
		run.note(`${body.mode} for ${body.duration} on ${workerLabel(w)}:`, i, w);
	}));
	// A service profile (POST /api/v1/instances with a selector) of the
	// targets of each host: one result, a root per process.
	together.addEventListener('click', () => run.eachHost('together', together, async ws => {
		const body = Object.assign({ selector: { workers: ws.map(w => w.id) } }, settings());
		const i = await api('POST', onHost('/api/v1/instances', ws[0]), body);
		run.note(`${body.mode} for ${body.duration} of ${ws.length} workers as one profile:`, i, ws[0]);
	}));
	stop.addEventListener('click', () => run.each('stop', stop, async w => {
		for (const i of runningOn(w)) {
			await api('POST', onHost(`/api/v1/instances/${encodeURIComponent(i)}/stop`, w));
			run.note(`stopped on ${workerLabel(w)}:`, { id: i, status: 'STOPPED' }, w);
		}
	}));

	// The targets' modes: one nprof does not describe (a hardware event)
	// gets its option too.
	function addModes(ts) {
		const seen = new Set();
		for (const w of ts) for (const m of w.modes || []) seen.add(m);
		for (const m of seen) if (!MODES[m] && ![...mode.options].some(o => o.value === m))
			mode.appendChild(h('option', { value: m, title: 'hardware event ' + m }, m));
	}

	// d: what action_rules.decide() says.
	function update(d) {
		for (const o of mode.options) {
			const no = d.modes.get(o.value);
			o.textContent = o.value + (no ? ' (unavailable)' : '');
			o.title = (MODES[o.value] || o.title.split('\nUnavailable: ')[0]) + (no ? '\nUnavailable: ' + no : '');
		}
		setText(modeWhy, MODES[mode.value] || '');
		mode.title = MODES[mode.value] || '';
		run.setButton(start, d.start, 'start');
		run.setButton(together, d.start || (run.targets().length < 2 ? 'select two workers or more' : ''),
			'together', TOGETHER);
		run.setButton(stop, d.stop, 'stop');
	}

	return {
		rows: [h('div.row', h('label', 'Mode ', mode), modeWhy),
			h('div.row', h('label', 'Duration ', dur, unit), h('label', 'Interval ', interval),
				h('label', 'Format ', format), start, together, stop)],
		mode, dur, unit, interval, addModes, update,
		modes: () => [...mode.options].map(o => o.value),
		runs: w => runningOn(w).length > 0,
	};
}
