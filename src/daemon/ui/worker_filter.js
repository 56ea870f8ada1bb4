// What the workers view's filter box keeps: words, each held by some
// field of the worker (pid, name, service, owner, command line, unit,
// host, container, pod), or KEY:VALUE, held by that field alone —
// service:, unit:, user:, host: (text in it), container: and pod: (the
// start of its id; a container's short or whole id), qos: (its class).
// The API takes the same as ?service=, ?container=, ?pod=, ?unit=,
// ?qos=. Pure: no DOM (tests/ui/worker_filter.test.mjs).

const FREE = ['pid', 'name', 'service', 'user', 'cmdline', 'unit', 'host', 'container_id', 'pod_uid'];
const KEYED = {
	service: (w, v) => low(w.service).includes(v),
	unit: (w, v) => low(w.unit).includes(v),
	user: (w, v) => low(w.user).includes(v),
	host: (w, v) => low(w.host).includes(v),
	container: (w, v) => !!w.container_id && w.container_id.startsWith(v),
	pod: (w, v) => !!w.pod_uid && w.pod_uid.startsWith(v),
	qos: (w, v) => low(w.qos_class) === v,
};

function low(v) {
	return v === undefined || v === null ? '' : String(v).toLowerCase();
}

// Whether worker w is kept by the filter text q (empty: every worker).
export function workerMatches(w, q) {
	const words = low(q).trim().split(/\s+/).filter(Boolean);
	return words.every(t => {
		const i = t.indexOf(':');
		const key = i > 0 ? t.slice(0, i) : '';
		if (key in KEYED) return KEYED[key](w, t.slice(i + 1));
		return FREE.some(k => low(w[k]).includes(t));
	});
}

// The container cell: its short id, and in its title the whole id, the
// runtime and the pod, each named; '' outside a container and a pod.
export function containerCell(w) {
	const text = w.container || (w.pod_uid ? 'pod ' + w.pod_uid.slice(0, 8) : '');
	const title = [w.container_id && 'container ' + w.container_id,
		w.container_runtime && 'runtime ' + w.container_runtime,
		w.pod_uid && 'pod ' + w.pod_uid, w.qos_class && 'QoS ' + w.qos_class].filter(Boolean).join(', ');
	return { text, title };
}
