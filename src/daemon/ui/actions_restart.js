// The actions panel's Restart: each target restarted by its supervisor,
// after the user confirms what that costs.
import { h, confirm } from './dom.js';
import { workerLabel } from './fmt.js';

export function restartButton(run) {
	const b = run.actionButton('restart');
	b.addEventListener('click', async () => {
		const ts = run.targets();
		if (!ts.length || run.busy('restart')) return;
		const yes = await confirm(`Restart ${ts.length} worker${ts.length > 1 ? 's' : ''}?`,
			h('div', h('p', 'nprofd asks each one\'s supervisor to restart it: the process is stopped ' +
				'(what it was doing is lost, its connections are dropped) and a new one is started, ' +
				'with a new pid. The instance ends when the new process is there.'),
				h('ul', ts.map(w => h('li', workerLabel(w), w.unit ? ` — unit ${w.unit}` : '')))),
			'Restart ' + (ts.length > 1 ? ts.length + ' workers' : ts[0].name));
		if (yes) run.each('restart', b, run.act('restart', undefined, 'restart'));
	});
	return { buttons: new Map([['restart', b]]) };
}
