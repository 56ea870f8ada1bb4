// nouns.js: the page's menus as nprofd's GET /api/v1/meta (meta.json,
// held to src/daemon/core/nouns.c by daemon_nouns_test) makes them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fill, MODES, FORMATS, ACTIONS, STATES, CONVERT, VIEWS, KINDS } from '../../src/daemon/ui/nouns.js';

const meta = JSON.parse(readFileSync(new URL('./meta.json', import.meta.url)));

test('the mode menu: every mode that needs no PMU, with its description', () => {
	fill(meta);
	assert.deepEqual(Object.keys(MODES), ['cpu', 'itimer', 'wall', 'offcpu', 'alloc', 'heap', 'lock',
		'page-faults', 'context-switches']);
	assert.match(MODES.alloc, /Needs the agent/);
});

test('the download formats of a profile: the in-page views first, then the profile, then the rest', () => {
	fill(meta);
	assert.deepEqual(FORMATS.slice(0, 3), ['flamegraph', 'tree', 'pprof']);
	assert.deepEqual([...FORMATS].sort(), ['pprof', ...CONVERT.pprof].sort());
	assert.equal(new Set(FORMATS).size, FORMATS.length, 'each once');
});

test('conversions and views by stored format', () => {
	fill(meta);
	assert.ok(CONVERT.pprof.includes('flamegraph') && CONVERT.pprof.includes('jfr'));
	assert.ok(CONVERT.threads.includes('text'));
	assert.deepEqual(CONVERT.core, []);
	assert.deepEqual(VIEWS.pprof, ['flamegraph', 'tree']);
	assert.deepEqual(VIEWS.threads, ['threads']);
});

test('the actions panel: one button per action, heap profiling as two', () => {
	fill(meta);
	assert.deepEqual(ACTIONS.map(a => a.key), ['stacks', 'heapdump', 'heap-on', 'heap-off', 'coredump',
		'restart', 'attach', 'detach']);
	assert.equal(ACTIONS.find(a => a.key === 'heap-on').need, 'heap');
	assert.ok(ACTIONS.find(a => a.key === 'restart').danger);
	assert.equal(ACTIONS.find(a => a.key === 'stacks').label, 'Thread dump');
});

test('a new action or format in nprofd is one in the page', () => {
	const more = structuredClone(meta);
	more.actions.push({ name: 'gcore', label: 'Gcore', description: 'a core file by gdb',
		instance_kind: 'gcore', needs_agent: false, refuses_agent: false, danger: false });
	more.formats.push({ name: 'otlp', from: 'pprof', view: false, diff: false, extension: 'otlp',
		content_type: 'application/x-protobuf', description: 'OpenTelemetry profiles' });
	fill(more);
	assert.equal(ACTIONS.at(-1).key, 'gcore');
	assert.equal(KINDS.gcore, 'gcore');
	assert.ok(CONVERT.pprof.includes('otlp') && FORMATS.includes('otlp'));
	fill(meta);
	assert.ok(!CONVERT.pprof.includes('otlp'), 'filled again, from scratch');
});

test('states and kinds', () => {
	fill(meta);
	assert.deepEqual(STATES, ['RUNNING', 'FINISHED', 'STOPPED', 'FAILED']);
	assert.deepEqual(KINDS, { stacks: 'thread dump', heapdump: 'heap snapshot', coredump: 'core file',
		restart: 'restart' });
});
