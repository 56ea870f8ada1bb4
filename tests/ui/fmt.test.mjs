// fmt.js: durations, times, sizes and percentages as the page writes them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { secs, time, bytes, pct, workerLabel } from '../../src/daemon/ui/fmt.js';

test('secs: the two largest units, zero-padded below the first', () => {
	assert.equal(secs(0), '0s');
	assert.equal(secs(59.4), '59s');
	assert.equal(secs(59.6), '1m 00s');
	assert.equal(secs(125), '2m 05s');
	assert.equal(secs(3600), '1h 00m');
	assert.equal(secs(3 * 3600 + 7 * 60 + 9), '3h 07m');
	assert.equal(secs(2 * 86400 + 3 * 3600 + 59), '2d 3h');
});

test('secs: nothing for no number, never negative', () => {
	assert.equal(secs(null), '');
	assert.equal(secs(undefined), '');
	assert.equal(secs(NaN), '');
	assert.equal(secs(-5), '0s');
});

test("time: today's as HH:MM:SS, another day's with its date", () => {
	const now = new Date(2026, 4, 17, 12, 0, 0);
	assert.equal(time(new Date(2026, 4, 17, 9, 5, 7).toISOString(), now), '09:05:07');
	assert.equal(time(new Date(2026, 4, 16, 23, 59, 1).toISOString(), now), '2026-05-16 23:59:01');
	assert.equal(time(new Date(2025, 11, 3, 0, 0, 0).toISOString(), now), '2025-12-03 00:00:00');
});

test('time: nothing for nothing, what is not a time as given', () => {
	assert.equal(time(''), '');
	assert.equal(time(null), '');
	assert.equal(time('soon'), 'soon');
});

test('bytes: binary units, one decimal below 10', () => {
	assert.equal(bytes(0), '0 B');
	assert.equal(bytes(1023), '1023 B');
	assert.equal(bytes(1536), '1.5 KiB');
	assert.equal(bytes(20 * 1024 * 1024), '20 MiB');
	assert.equal(bytes(null), '');
});

test('pct: one decimal below 10', () => {
	assert.equal(pct(3.14159), '3.1');
	assert.equal(pct(42.7), '43');
	assert.equal(pct(undefined), '');
});

test('workerLabel: name, pid and service when it has one', () => {
	assert.equal(workerLabel({ name: 'split', pid: 42 }), 'split (pid 42)');
	assert.equal(workerLabel({ name: 'split', pid: 42, service: 'web' }), 'split (pid 42, web)');
});
