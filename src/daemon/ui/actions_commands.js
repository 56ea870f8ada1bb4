// The actions panel's operator commands (nprofd.conf [actions]): a
// button for each command the targets' hosts define, shown while one of
// them offers it.
import { h } from './dom.js';
import { commandBody } from './action_rules.js';

// profile: the profiling controls (a command gets their duration when
// its timeout allows it).
export function commandButtons(run, profile) {
	const box = h('span.cmds');

	function buttonOf(c) {
		let b = box.querySelector(`[data-cmd="${CSS.escape(c.name)}"]`);
		if (!b) {
			b = run.button('cmd-' + c.name, c.name, { dataset: { cmd: c.name } });
			b.addEventListener('click', () => run.each('cmd:' + c.name, b,
				run.act('commands/' + encodeURIComponent(c.name),
					commandBody(c, profile.dur.value, profile.unit.value), c.name)));
			box.appendChild(b);
		}
		return b;
	}

	// cmds: the targets' hosts' commands; d: what action_rules.decide() says.
	function update(cmds, d) {
		for (const b of box.children) b.hidden = !cmds.some(c => c.name === b.dataset.cmd);
		for (const c of cmds) run.setButton(buttonOf(c), d.commands.get(c.name), 'cmd:' + c.name, c.description || '');
	}

	return { box, update };
}
