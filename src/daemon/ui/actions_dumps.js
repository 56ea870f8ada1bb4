// The actions panel's dumps: a thread dump, a heap snapshot, heap
// profiling on and off (through the agent), a core file.
import { heapInterval } from './action_rules.js';

// profile: the profiling controls (their interval field sets heap
// profiling's when it holds a size).
export function dumpButtons(run, profile) {
	const buttons = new Map(['stacks', 'heapdump', 'heap-on', 'heap-off', 'coredump'].map(k => [k, run.actionButton(k)]));
	const on = (key, path, body, text) => buttons.get(key).addEventListener('click', () =>
		run.each(key, buttons.get(key), run.act(path, typeof body === 'function' ? body() : body, text)));
	on('stacks', 'stacks', undefined, 'thread dump');
	on('heapdump', 'heapdump', undefined, 'heap snapshot');
	on('heap-on', 'heap', () => {
		const interval = heapInterval(profile.interval.value);
		return Object.assign({ action: 'enable' }, interval ? { interval } : {});
	}, 'heap profiling on');
	on('heap-off', 'heap', { action: 'disable' }, 'heap profiling off');
	on('coredump', 'coredump', undefined, 'core file');
	return { buttons };
}
