// The actions panel's agent buttons: load nprof's agent into a running
// worker (nprof attach) or end it there (nprof detach). Either changes
// what the worker can do, so its details are read again.
import { forgetDetails } from './worker_store.js';

export function agentButtons(run) {
	const buttons = new Map(['attach', 'detach'].map(k => [k, run.actionButton(k)]));
	for (const [k, b] of buttons)
		b.addEventListener('click', () => run.each(k, b, async w => {
			await run.act(k, undefined, 'nprof ' + k)(w);
			forgetDetails(w);
		}));
	return { buttons };
}
