// The actions panel's dumps: a thread dump, a heap snapshot, heap
// profiling on and off (through the agent), a core file.
import { heapInterval } from './action_rules.js';

// profile: the profiling controls (their interval field sets heap
// profiling's when it holds a size).
export function dumpButtons(run, profile) {
	const buttons = new Map(['stacks', 'heapdump', 'heap-on', 'heap-off', 'coredump'].map(k => [k, run.actionButton(k)]));
	// body(): the request's body, read at the click
	const on = (key, path, text, body = () => undefined) => buttons.get(key).addEventListener('click', () =>
		run.each(key, buttons.get(key), run.act(path, body(), text)));
	on('stacks', 'stacks', 'thread dump');
	on('heapdump', 'heapdump', 'heap snapshot');
	on('heap-on', 'heap', 'heap profiling on', () => {
		const interval = heapInterval(profile.interval.value);
		return Object.assign({ action: 'enable' }, interval ? { interval } : {});
	});
	on('heap-off', 'heap', 'heap profiling off', () => ({ action: 'disable' }));
	on('coredump', 'coredump', 'core file');
	return { buttons };
}
