// threads.js: a thread dump's threads grouped by stack and state.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { groupThreads, stateCounts, blockingIndex } from '../../src/daemon/ui/threads.js';

const fr = (...names) => names.map(n => ({ function: n, kind: n.startsWith('k_') ? 'kernel' :
	n.startsWith('libc_') ? 'library' : 'user' }));
const worker = tid => ({ tid, name: 'worker', state: 'S', state_name: 'sleeping',
	frames: fr('k_futex_wait', 'libc_pthread_cond_wait', 'take_job', 'main_loop') });

test('threads with one stack and state are one group, the largest first', () => {
	const spin = { tid: 9, name: 'spin', state: 'R', state_name: 'running', frames: fr('burn', 'main') };
	const groups = groupThreads([spin, worker(1), worker(2), worker(3)]);
	assert.deepEqual(groups.map(g => g.map(t => t.tid)), [[1, 2, 3], [9]]);
});

test('the same stack in another state is another group', () => {
	const stopped = Object.assign(worker(4), { state: 'T', state_name: 'stopped' });
	assert.equal(groupThreads([worker(1), stopped]).length, 2);
});

test('no threads, no groups', () => {
	assert.deepEqual(groupThreads([]), []);
});

test('stateCounts: threads by state name', () => {
	const spin = { tid: 9, state: 'R', state_name: 'running', frames: [] };
	assert.deepEqual(stateCounts([worker(1), worker(2), spin]), { sleeping: 2, running: 1 });
	assert.deepEqual(stateCounts([{ state: 'D' }]), { D: 1 });
});

test("a blocked thread blocks in its program's innermost frame, not libc's or the kernel's", () => {
	assert.equal(blockingIndex(worker(1)), 2);
});

test('a thread of library frames only blocks in the innermost outside the kernel', () => {
	assert.equal(blockingIndex({ state: 'S', frames: fr('k_poll', 'libc_poll', 'libc_start') }), 1);
});

test('a running thread blocks nowhere', () => {
	assert.equal(blockingIndex({ state: 'R', frames: fr('burn') }), -1);
	assert.equal(blockingIndex({ state: 'S', on_cpu: true, frames: fr('burn') }), -1);
});
