// What the actions panel offers the selected workers, and why not:
// each control is enabled only when every target can use it, and the
// first target that cannot names the reason. Pure: the panel (actions.js)
// draws what decide() returns; node's tests (tests/ui/) check it.
import { ACTIONS } from './nouns.js';
import { workerLabel } from './fmt.js';

export const NO_TARGET = 'select a worker first';
export const NOTHING_RUNS = 'no profiling instance runs on the selected workers';

// targets: the worker objects selected; details: for each, its GET
// /api/v1/workers/ID (with "unavailable") or null when it could not be
// had; modes: the mode select's values, mode the one chosen; commands:
// the operator's commands offered ({ name }); runs(w): whether a
// profile of w's runs. Returns each control's reason ('' when enabled),
// and the reasons to list in words
// ([name, reason]: every action's, the chosen mode's).
export function decide({ targets: ts, details, modes, mode, commands, runs }) {
	const reasons = new Map();	// "mode:NAME" or "action:NAME" -> reason, in the order met
	const denied = (kind, name) => {
		for (let i = 0; i < ts.length; i++) {
			const w = ts[i], d = details[i];
			if (((d || w)[kind] || []).includes(name)) continue;
			const un = d && d.unavailable && d.unavailable[kind] && d.unavailable[kind][name];
			const why = `${w.name} (pid ${w.pid}): ` + (un || (d ? 'not available' : 'the worker has gone'));
			reasons.set((kind === 'modes' ? 'mode:' : 'action:') + name, why);
			return why;
		}
		return '';
	};
	const none = !ts.length;
	const modeWhy = new Map(modes.map(m => [m, none ? '' : denied('modes', m)]));
	const actions = new Map(ACTIONS.map(a => [a.key, none ? NO_TARGET : denied('actions', a.need || a.key)]));
	const cmds = new Map(commands.map(c => [c.name, none ? NO_TARGET : denied('actions', 'commands/' + c.name)]));
	return {
		modes: modeWhy,
		start: none ? NO_TARGET : modeWhy.get(mode) || '',
		stop: none ? NO_TARGET : ts.some(runs) ? '' : NOTHING_RUNS,
		actions,
		commands: cmds,
		why: [...reasons].filter(([k]) => !k.startsWith('mode:') || k === 'mode:' + mode)
			.map(([k, r]) => [k.replace(/^(mode|action):/, ''), r]),
	};
}

// Who the panel acts on, in words: the first four named.
export function selectedText(ts) {
	return !ts.length ? 'Select workers in the table to act on them.' :
		`${ts.length} selected: ` + ts.slice(0, 4).map(workerLabel).join('; ') + (ts.length > 4 ? '; …' : '');
}

// The heap sampling interval the interval field gives heap profiling:
// a size (512k), or none when it holds a time (10ms: a profile's).
export function heapInterval(text) {
	const v = text.trim();
	return /^\d+(\.\d+)?\s*[kmg]?i?b?$/i.test(v) ? v : undefined;
}

// An operator command's body: the duration chosen (amount, unit 's' or
// 'm'), when the command's timeout allows it; else nprofd's default.
export function commandBody(c, amount, unit) {
	const secs = (+amount || 10) * (unit === 'm' ? 60 : 1);
	return c.timeout && secs > c.timeout ? {} : { duration: secs + 's' };
}
