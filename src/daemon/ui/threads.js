// A thread dump's threads, grouped for reading: threads with the same
// stack and state are one group, the largest first. Pure (tests/ui/).

export function groupThreads(threads) {
	const groups = new Map();
	for (const t of threads) {
		const stack = (t.frames || []).map(f => f.function).join('\n') + '|' + (t.state || '');
		if (!groups.has(stack)) groups.set(stack, []);
		groups.get(stack).push(t);
	}
	return [...groups.values()].sort((x, y) => y.length - x.length);
}

// How many threads are in each state, by the state's name.
export function stateCounts(threads) {
	const states = {};
	for (const t of threads) states[t.state_name || t.state] = (states[t.state_name || t.state] || 0) + 1;
	return states;
}

// The frame a thread blocks in: the innermost frame of the program
// itself (not libc, not the kernel) when the thread is not running; -1
// when it runs.
export function blockingIndex(t) {
	if (t.on_cpu || t.state === 'R') return -1;
	const fr = t.frames || [];
	let i = fr.findIndex(f => f.kind === 'user' || f.kind === 'inlined');
	if (i < 0) i = fr.findIndex(f => f.kind !== 'kernel');
	return i;
}
