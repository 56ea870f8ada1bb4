// worker_filter.js: what the workers view's filter keeps, and the
// container cell.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { workerMatches, containerCell } from '../../src/daemon/ui/worker_filter.js';

const ID = '3f4b1c2d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f809';
const pod = { pid: 4301, name: 'nginx', service: '3f4b1c2d5e6f', service_source: 'container', user: 'root',
	cmdline: 'nginx: worker process', unit: 'cri-containerd-' + ID + '.scope', container: ID.slice(0, 12),
	container_id: ID, container_runtime: 'containerd', pod_uid: '7c8d2f1e-3a4b-4c5d-9e6f-0a1b2c3d4e5f',
	qos_class: 'burstable' };
const svc = { pid: 4242, name: 'api', service: 'api.service', user: 'alice', cmdline: '/usr/bin/api --port 8080',
	unit: 'api.service', container_id: '', pod_uid: '', qos_class: '' };

test('no filter keeps every worker', () => {
	assert.ok(workerMatches(pod, ''));
	assert.ok(workerMatches(svc, '   '));
});

test('free words: every word held by some field, case aside', () => {
	assert.ok(workerMatches(svc, 'API 8080'));
	assert.ok(workerMatches(svc, 'alice api.service'));
	assert.ok(!workerMatches(svc, 'alice nginx'));
	assert.ok(workerMatches(pod, '3f4b1c'), 'the container id');
	assert.ok(workerMatches(pod, '7c8d2f1e'), 'the pod uid');
	assert.ok(workerMatches(pod, '4301'), 'the pid');
});

test('container: and pod: take the start of the id, and only a container\'s', () => {
	assert.ok(workerMatches(pod, 'container:3f4b1c2d5e6f'));
	assert.ok(workerMatches(pod, 'container:' + ID));
	assert.ok(!workerMatches(pod, 'container:4b1c'), 'not the middle');
	assert.ok(workerMatches(pod, 'container:'), 'empty: any container');
	assert.ok(!workerMatches(svc, 'container:'), 'no container: not kept');
	assert.ok(workerMatches(pod, 'pod:7c8d'));
	assert.ok(!workerMatches(svc, 'pod:'));
});

test('service:, unit:, user:, qos: hold that field alone', () => {
	assert.ok(workerMatches(svc, 'service:api'));
	assert.ok(!workerMatches(pod, 'service:api'));
	assert.ok(workerMatches(svc, 'unit:api.service'));
	assert.ok(workerMatches(pod, 'unit:cri-containerd'));
	assert.ok(workerMatches(svc, 'user:alice') && !workerMatches(pod, 'user:alice'));
	assert.ok(workerMatches(pod, 'qos:burstable') && !workerMatches(pod, 'qos:burst'));
	assert.ok(!workerMatches(svc, 'qos:burstable'));
	assert.ok(workerMatches(pod, 'qos:burstable container:3f4b nginx'), 'keyed and free together');
});

test('an unknown key is a free word', () => {
	assert.ok(workerMatches({ cmdline: 'run --x:y' }, 'x:y'));
	assert.ok(!workerMatches(svc, 'x:y'));
});

test('the container cell: the short id, the rest in its title', () => {
	assert.deepEqual(containerCell(pod), { text: '3f4b1c2d5e6f', title: 'container ' + ID +
		', runtime containerd, pod 7c8d2f1e-3a4b-4c5d-9e6f-0a1b2c3d4e5f, QoS burstable' });
	assert.deepEqual(containerCell(svc), { text: '', title: '' });
	assert.deepEqual(containerCell({ pod_uid: '0123456789abcdef0123456789abcdef', qos_class: 'guaranteed' }),
		{ text: 'pod 01234567', title: 'pod 0123456789abcdef0123456789abcdef, QoS guaranteed' });
});
