// The nouns the page offers — profiling modes, download formats, worker
// actions, instance states, what each stored format converts to — as
// nprofd names them in GET /api/v1/meta (src/daemon/core/nouns.c): a new mode,
// action or format there is one here without a change to the page.
// Filled once, after sign-in and before any view draws (load); the
// views read them as they draw. Pure data: no DOM.

// Mode name -> what it records, in the mode menu's order (the hardware
// events, which need a PMU, are offered only by the workers that can).
export const MODES = {};
// The formats a profile's download may default to.
export const FORMATS = [];
// The actions on a worker, in the panel's order. key: the button's (and
// its id's); need: the name nprofd gives the action in a worker's
// "actions" when it differs from key (heap profiling is two buttons).
export const ACTIONS = [];
// The states of an instance, as the instances view filters them.
export const STATES = [];
// Stored format -> what nprofd converts it into, and the views of it the
// page draws itself.
export const CONVERT = {};
export const VIEWS = {};
// An instance's kind in words (a profile is named by its mode).
export const KINDS = {};

// Fills the tables from meta, GET /api/v1/meta's reply.
export function fill(meta) {
	for (const o of [MODES, CONVERT, VIEWS, KINDS]) for (const k of Object.keys(o)) delete o[k];
	for (const a of [FORMATS, ACTIONS, STATES]) a.length = 0;
	for (const m of meta.modes) if (!m.needs_pmu) MODES[m.name] = m.description;
	const stored = meta.formats.filter(f => !f.from);
	for (const s of stored) {
		CONVERT[s.name] = meta.formats.filter(f => f.from === s.name).map(f => f.name);
		VIEWS[s.name] = meta.formats.filter(f => f.view && (f.from === s.name || f.name === s.name))
			.map(f => f.name);
	}
	// what the page shows first, the profile as recorded, then the rest
	FORMATS.push(...VIEWS.pprof.filter(f => f !== 'pprof'), 'pprof');
	FORMATS.push(...CONVERT.pprof.filter(f => !FORMATS.includes(f)));
	for (const a of meta.actions) {
		const what = a.description;
		if (a.name === 'heap') {
			ACTIONS.push({ key: 'heap-on', need: 'heap', label: a.label + ' on', what: 'switch the agent\'s heap profiling on' },
				{ key: 'heap-off', need: 'heap', label: a.label + ' off', what: 'switch the agent\'s heap profiling off' });
		} else {
			ACTIONS.push(Object.assign({ key: a.name, label: a.label, what }, a.danger ? { danger: true } : {}));
		}
		if (a.instance_kind) KINDS[a.instance_kind] = a.label.toLowerCase();
	}
	STATES.push(...meta.instance_states.map(s => s.name));
}

let loaded = null;

// get(path): the API's JSON reply. Once per page: the nouns of one
// nprofd do not change while it runs.
export function load(get) {
	if (!loaded) loaded = get('/api/v1/meta').then(fill, e => { loaded = null; throw e; });
	return loaded;
}
