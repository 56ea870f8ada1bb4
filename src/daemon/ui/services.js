// The Services view: a service's continuous profiles (what its schedules
// recorded) as a timeline of one mode over the last hour or day, drawn
// from GET /api/v1/profiles/series and filled in as it polls; a range
// dragged on it shows that range's flame graph (GET /api/v1/profiles),
// and two ranges kept as before and after open the compare view. The
// numbers (bars, ranges, queries) are series.js's.
import { api } from './api.js';
import { h, $, append, clear, setText, showErr } from './dom.js';
import { MODES } from './nouns.js';
import { secs, time } from './fmt.js';
import { go, showing } from './router.js';
import { SPANS, spanRange, seriesUrl, profileUrl, compareHash, whyNoCompare, bars, rangeAt, spanAt,
	serviceNames } from './series.js';
import { hosts, hostQuery, load as loadHosts, filter as hostFilter } from './hosts.js';

// The timeline's drawing box (a viewBox: the SVG scales to the page).
const W = 1000, H = 120;
// Often enough that a recording a schedule ends shows within a poll,
// seldom enough that a day's timeline costs nothing to keep open.
const POLL_MS = 4000;
const SVG = 'http://www.w3.org/2000/svg';

// What the view shows; kept while the page lives, so that coming back
// shows the service left.
const state = {
	sel: { service: '', mode: 'cpu' },
	span: 'hour',
	series: null,		// the last reply drawn
	range: null,		// the range dragged, { from, until } ms
	before: null, after: null,
	timer: 0, busy: false,
};

const svg = (tag, attrs) => {
	const el = document.createElementNS(SVG, tag);
	for (const k in attrs) el.setAttribute(k, attrs[k]);
	return el;
};
const rangeWords = r => `${time(new Date(r.from).toISOString())} – ${time(new Date(r.until).toISOString())}`;

// The choice, with the host the page's host filter names.
const sel = () => ({ ...state.sel, host: hosts.choice || undefined });

async function loadServices() {
	const q = hostQuery() ? '?' + hostQuery() : '';
	const [w, s] = await Promise.all([api('GET', '/api/v1/workers' + q),
		api('GET', '/api/v1/schedules' + q).catch(() => ({ schedules: [] })), loadHosts()]);
	const names = serviceNames(w.workers, s.schedules), box = $('s-service');
	if (!state.sel.service || !names.includes(state.sel.service)) {
		// a service a schedule records, first: its timeline has bars
		const scheduled = (s.schedules || []).map(x => x.selector && x.selector.service).find(n => names.includes(n));
		state.sel.service = scheduled || names[0] || '';
	}
	if ([...box.options].map(o => o.value).join('\n') !== names.join('\n'))
		append(clear(box), names.map(n => h('option', { value: n }, n)));
	box.value = state.sel.service;
	const modes = $('s-mode');
	if (modes.options.length !== Object.keys(MODES).length)
		append(clear(modes), Object.keys(MODES).map(m => h('option', { value: m, title: MODES[m] }, m)));
	modes.value = state.sel.mode;
}

function draw() {
	const s = state.series, box = $('s-timeline');
	const { bars: bs, max } = bars(s, W, H - 14);
	const g = svg('svg', { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', id: 's-svg',
		role: 'img', 'aria-label': `${s.service} ${s.mode} over time` });
	g.appendChild(svg('rect', { class: 'tl-bg', x: 0, y: 0, width: W, height: H }));
	for (const [r, cls] of [[state.before, 'tl-before'], [state.after, 'tl-after'], [state.range, 'tl-sel']]) {
		if (!r) continue;
		const at = spanAt(s, W, r);
		g.appendChild(svg('rect', { class: cls, x: at.x, y: 0, width: Math.max(1, at.w), height: H }));
	}
	for (const b of bs) {
		const el = svg('rect', { class: 'tl-bar', x: b.x, y: H - b.h, width: Math.max(0.5, b.w - 0.3), height: b.h });
		el.appendChild(svg('title', {})).textContent = `${time(new Date(b.t).toISOString())}: ${b.value} ${s.unit}`;
		g.appendChild(el);
	}
	box.replaceChildren(g);
	box.dataset.bars = bs.length;
	setText($('s-count'), `${s.recordings} recordings, ${bs.length} bars of ${secs(s.step)}` +
		(max ? `, highest ${max} ${s.unit}` : ''));
	dragOn(g);
}

// A drag across the timeline picks a range (pointer events: mouse, pen
// and touch alike); the flame graph of it follows.
function dragOn(g) {
	const xOf = e => { const b = g.getBoundingClientRect(); return (e.clientX - b.left) / b.width * W; };
	let x0 = null;
	g.addEventListener('pointerdown', e => { x0 = xOf(e); g.setPointerCapture(e.pointerId); });
	g.addEventListener('pointerup', e => {
		if (x0 === null) return;
		const r = rangeAt(state.series, W, x0, xOf(e));
		x0 = null;
		if (r) pick(r);
	});
}

function pick(r) {
	state.range = r;
	setText($('s-range'), rangeWords(r));
	$('s-before').disabled = $('s-after').disabled = false;
	draw();
	showErr($('s-err'), '');
	$('s-viewer').replaceChildren(h('iframe.viewer', { id: 's-frame', src: profileUrl(sel(), r, 'flamegraph', true),
		sandbox: 'allow-scripts allow-downloads', title: `flame graph of ${state.sel.service}, ${rangeWords(r)}` }));
}

async function refresh() {
	if (state.busy || !state.sel.service) return;
	state.busy = true;
	try {
		const asked = sel();
		const s = await api('GET', seriesUrl(asked, spanRange(state.span, Date.now())));
		// the choice may have changed while it came: drawn only if not
		if (s.service === state.sel.service && s.mode === state.sel.mode && asked.host === sel().host &&
			showing(servicesView)) {
			state.series = s;
			draw();
			showErr($('s-err'), s.recordings ? '' : `No ${s.mode} recording of ${s.service} in the last ${state.span}: ` +
				'a schedule records one (nprof schedule create, or POST /api/v1/schedules).');
		}
	} catch (e) {
		showErr($('s-err'), e);
	} finally {
		state.busy = false;
	}
}

function changed() {
	state.sel.service = $('s-service').value;
	state.sel.mode = $('s-mode').value;
	state.span = $('s-span').value;
	state.range = state.before = state.after = null;
	setText($('s-range'), '');
	$('s-before').disabled = $('s-after').disabled = $('s-compare').disabled = true;
	clear($('s-viewer'));
	refresh();
}

for (const id of ['s-service', 's-mode', 's-span']) $(id).addEventListener('change', changed);
for (const side of ['before', 'after'])
	$('s-' + side).addEventListener('click', () => {
		state[side] = state.range;
		const why = whyNoCompare(sel());
		$('s-compare').disabled = !(state.before && state.after) || !!why;
		$('s-compare').title = why ? 'Unavailable: ' + why : 'a differential flame graph of the two ranges';
		draw();
	});
$('s-compare').addEventListener('click', () => go(compareHash(sel(), state.before, state.after)));
// The page's host filter: this host's services, one host's, or every
// host's summed (a new choice draws anew).
hostFilter($('s-host'), () => loadServices().then(changed, e => showErr($('s-err'), e)));
append(clear($('s-span')), Object.keys(SPANS).map(k => h('option', { value: k }, 'last ' + k)));

export const servicesView = {
	el: $('view-services'),
	async enter({ query }) {
		if (query.get('service')) state.sel.service = query.get('service');
		if (query.get('mode')) state.sel.mode = query.get('mode');
		$('s-span').value = state.span;
		showErr($('s-err'), '');
		try { await loadServices(); } catch (e) { showErr($('s-err'), e); return; }
		if (!state.sel.service) {
			showErr($('s-err'), 'No service to show: none of your workers is part of one (GET /api/v1/workers).');
			return;
		}
		await refresh();
		clearInterval(state.timer);
		state.timer = setInterval(refresh, POLL_MS);
	},
	leave() { clearInterval(state.timer); state.timer = 0; },
};
