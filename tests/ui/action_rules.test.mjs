// action_rules.js: which controls of the actions panel the selected
// workers allow, and the reason shown on one they do not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decide, selectedText, heapInterval, commandBody, NO_TARGET, NOTHING_RUNS }
	from '../../src/daemon/ui/action_rules.js';
import { readFileSync } from 'node:fs';
import { fill } from '../../src/daemon/ui/nouns.js';

// The nouns as nprofd serves them (meta.json is held to src/daemon/core/nouns.c
// by daemon_nouns_test).
fill(JSON.parse(readFileSync(new URL('./meta.json', import.meta.url))));

const ALL = ['stacks', 'heapdump', 'heap', 'coredump', 'restart', 'attach', 'detach'];
const split = { id: '42-1', pid: 42, name: 'split', modes: ['cpu', 'wall'], actions: ALL };
const plain = { id: '43-1', pid: 43, name: 'plain', modes: ['cpu'], actions: ['stacks', 'coredump', 'attach'] };
const plainDetail = Object.assign({}, plain, { unavailable: {
	modes: { wall: 'needs the agent or root' },
	actions: { heapdump: 'no agent loaded', heap: 'no agent loaded', restart: 'no supervisor', detach: 'no agent loaded' } } });
const base = { modes: ['cpu', 'wall'], mode: 'cpu', commands: [], runs: () => false };

test('nothing selected: every button says to select a worker first', () => {
	const d = decide(Object.assign({}, base, { targets: [], details: [], commands: [{ name: 'gc' }] }));
	assert.equal(d.start, NO_TARGET);
	assert.equal(d.stop, NO_TARGET);
	for (const r of d.actions.values()) assert.equal(r, NO_TARGET);
	assert.equal(d.commands.get('gc'), NO_TARGET);
	assert.equal(d.modes.get('wall'), '', 'no mode is marked unavailable for no one');
	assert.deepEqual(d.why, []);
});

test('one worker that can do everything: everything enabled, Stop only while a profile runs', () => {
	const d = decide(Object.assign({}, base, { targets: [split], details: [split] }));
	assert.equal(d.start, '');
	assert.equal(d.stop, NOTHING_RUNS);
	for (const [k, r] of d.actions) assert.equal(r, '', k);
	assert.equal(decide(Object.assign({}, base, { targets: [split], details: [split], runs: () => true })).stop, '');
});

test("a control is disabled when one target cannot use it, with that worker's reason", () => {
	const d = decide(Object.assign({}, base, { targets: [split, plain], details: [split, plainDetail], mode: 'wall' }));
	assert.equal(d.start, 'plain (pid 43): needs the agent or root');
	assert.equal(d.modes.get('wall'), 'plain (pid 43): needs the agent or root');
	assert.equal(d.modes.get('cpu'), '');
	assert.equal(d.actions.get('heapdump'), 'plain (pid 43): no agent loaded');
	assert.equal(d.actions.get('heap-on'), 'plain (pid 43): no agent loaded', 'heap on and off need "heap"');
	assert.equal(d.actions.get('heap-off'), 'plain (pid 43): no agent loaded');
	assert.equal(d.actions.get('restart'), 'plain (pid 43): no supervisor');
	assert.equal(d.actions.get('stacks'), '');
	assert.equal(d.actions.get('attach'), '');
});

test('a reason nprofd does not give: not available; no details at all: the worker has gone', () => {
	const quiet = Object.assign({}, plain, { unavailable: {} });
	let d = decide(Object.assign({}, base, { targets: [plain], details: [quiet] }));
	assert.equal(d.actions.get('restart'), 'plain (pid 43): not available');
	d = decide(Object.assign({}, base, { targets: [plain], details: [null] }));
	assert.equal(d.actions.get('restart'), 'plain (pid 43): the worker has gone');
	assert.equal(d.actions.get('stacks'), '', "without details, the list's own actions count");
});

test('the reasons in words: each action once, and the chosen mode only', () => {
	const d = decide(Object.assign({}, base, { targets: [plain], details: [plainDetail], mode: 'cpu' }));
	assert.deepEqual(d.why.map(([k]) => k), ['heapdump', 'heap', 'restart', 'detach']);
	const w = decide(Object.assign({}, base, { targets: [plain], details: [plainDetail], mode: 'wall' }));
	assert.deepEqual(w.why[0], ['wall', 'plain (pid 43): needs the agent or root']);
});

test("an operator command is offered when every target's actions name it", () => {
	const cmds = [{ name: 'gc' }, { name: 'flush' }];
	const withGc = Object.assign({}, split, { actions: [...ALL, 'commands/gc'] });
	const d = decide(Object.assign({}, base, { targets: [withGc], details: [withGc], commands: cmds }));
	assert.equal(d.commands.get('gc'), '');
	assert.equal(d.commands.get('flush'), 'split (pid 42): not available');
	assert.deepEqual(d.why, [['commands/flush', 'split (pid 42): not available']]);
});

test('who is selected: the first four named', () => {
	assert.equal(selectedText([]), 'Select workers in the table to act on them.');
	assert.equal(selectedText([split]), '1 selected: split (pid 42)');
	const five = [1, 2, 3, 4, 5].map(n => ({ name: 'w' + n, pid: n }));
	assert.equal(selectedText(five), '5 selected: w1 (pid 1); w2 (pid 2); w3 (pid 3); w4 (pid 4); …');
});

test('heap profiling takes the interval field when it holds a size, not a time', () => {
	assert.equal(heapInterval('512k'), '512k');
	assert.equal(heapInterval(' 1MiB '), '1MiB');
	assert.equal(heapInterval('4096'), '4096');
	assert.equal(heapInterval('10ms'), undefined);
	assert.equal(heapInterval(''), undefined);
});

test("a command gets the duration chosen, unless past its timeout", () => {
	assert.deepEqual(commandBody({ name: 'gc' }, '30', 's'), { duration: '30s' });
	assert.deepEqual(commandBody({ name: 'gc' }, '2', 'm'), { duration: '120s' });
	assert.deepEqual(commandBody({ name: 'gc', timeout: 60 }, '2', 'm'), {});
	assert.deepEqual(commandBody({ name: 'gc' }, '', 's'), { duration: '10s' });
});
