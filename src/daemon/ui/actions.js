// The actions panel on the workers targets() returns (the selection, or
// one worker on its page). Its parts, one concern each: profiling
// (actions_profile.js), dumps (actions_dumps.js), the agent
// (actions_agent.js), restart (actions_restart.js), the operator's
// commands (actions_commands.js); what they share in actions_run.js;
// what each control allows, and why not, decided in action_rules.js.
import { h, append, clear, setText } from './dom.js';
import { ACTIONS } from './nouns.js';
import { forgetOnEnd } from './session.js';
import { detailsOf, commandsOf } from './worker_store.js';
import { decide, selectedText } from './action_rules.js';
import { runner } from './actions_run.js';
import { profileControls } from './actions_profile.js';
import { dumpButtons } from './actions_dumps.js';
import { agentButtons } from './actions_agent.js';
import { restartButton } from './actions_restart.js';
import { commandButtons } from './actions_commands.js';

// What a user did and was told is not the next one's.
forgetOnEnd(() => {
	for (const el of document.querySelectorAll('ul.log, ul.why, .actions .err')) clear(el);
});

// Builds a panel in box; returns { refresh }, to call when the targets
// may have changed.
export function actionsPanel(box, targets) {
	const run = runner(box, targets, refresh);
	const profile = profileControls(run);
	const commands = commandButtons(run, profile);
	const buttons = new Map([dumpButtons(run, profile), restartButton(run), agentButtons(run)]
		.flatMap(part => [...part.buttons]));
	const who = h('span.hint');
	const why = h('ul.why.small');

	append(clear(box), [h('div.actions',
		h('div.row', who),
		profile.rows,
		h('div.row', ACTIONS.map(a => buttons.get(a.key)), commands.box),
		run.err, why, run.log)]);

	async function refresh() {
		const ts = targets();
		setText(who, selectedText(ts));
		const [details, cmds] = await Promise.all([detailsOf(ts), commandsOf(ts)]);
		profile.addModes(ts);
		const d = decide({ targets: ts, details, modes: profile.modes(), mode: profile.mode.value,
			commands: cmds, runs: profile.runs });
		profile.update(d);
		for (const a of ACTIONS) run.setButton(buttons.get(a.key), d.actions.get(a.key), a.key, a.what);
		commands.update(cmds, d);
		append(clear(why), d.why.map(([name, r]) => h('li', h('b', name + ': '), r)));
	}
	profile.mode.addEventListener('change', refresh);
	return { refresh };
}
