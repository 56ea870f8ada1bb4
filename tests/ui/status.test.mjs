// status.js: an instance's status and countdown, and what it is.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statusText, remaining, what, isProfile, groupName } from '../../src/daemon/ui/status.js';
import { readFileSync } from 'node:fs';
import { fill } from '../../src/daemon/ui/nouns.js';

// The nouns as nprofd serves them (meta.json is held to src/daemon/core/nouns.c
// by daemon_nouns_test).
fill(JSON.parse(readFileSync(new URL('./meta.json', import.meta.url))));

const created = '2026-05-17T10:00:00.000Z';
const at = s => Date.parse(created) + s * 1000;

test('a running profile counts down the seconds it has left, rounded up', () => {
	const i = { status: 'RUNNING', created, duration: 90, mode: 'cpu' };
	assert.equal(statusText(i, at(0)), 'RUNNING · 1m 30s left');
	assert.equal(statusText(i, at(60.2)), 'RUNNING · 30s left');
	assert.equal(statusText(i, at(89.5)), 'RUNNING · 1s left');
	assert.equal(remaining(i, at(30)), 60);
});

test('past its end a running profile has 0s left, not a negative time', () => {
	const i = { status: 'RUNNING', created, duration: 3 };
	assert.equal(remaining(i, at(10)), 0);
	assert.equal(statusText(i, at(10)), 'RUNNING · 0s left');
});

test('no countdown without a duration, nor for a dump', () => {
	assert.equal(statusText({ status: 'RUNNING', created }, at(1)), 'RUNNING');
	assert.equal(statusText({ status: 'RUNNING', created, duration: 30, kind: 'stacks' }, at(1)), 'RUNNING');
});

test('an ended instance shows its state alone', () => {
	for (const s of ['FINISHED', 'STOPPED', 'FAILED'])
		assert.equal(statusText({ status: s, created, duration: 30 }, at(1)), s);
});

test('what: a profile by its mode, a dump by its kind in words', () => {
	assert.equal(what({ mode: 'wall' }), 'wall');
	assert.equal(what({ kind: 'profile', mode: 'cpu' }), 'cpu');
	assert.equal(what({ kind: 'stacks' }), 'thread dump');
	assert.equal(what({ kind: 'heapdump' }), 'heap snapshot');
	assert.equal(what({ kind: 'coredump' }), 'core file');
	assert.equal(what({ kind: 'restart' }), 'restart');
	assert.ok(isProfile({}) && !isProfile({ kind: 'stacks' }));
});

test("a service's profile is named by its members and its selector", () => {
	assert.equal(groupName({ selector: { service: 'nginx*' }, members: 3 }), '3 workers: service nginx*');
	assert.equal(groupName({ selector: { workers: ['1-2', '3-4'] }, members: 2 }), '2 workers: workers 1-2, 3-4');
	assert.equal(groupName({ selector: { unit: 'x' } }), '? workers: unit x');
});
