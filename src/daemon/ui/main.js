// nprof's web UI, the entry (index.html loads it as an ES module): the
// table of views for the router, then the session, if there is one.
// No framework, no build step, no global: each module imports what it
// uses, and no two import each other (docs/design.md draws the graph;
// tests/ui/imports.test.mjs proves it has no cycle).
import { $, showErr } from './dom.js';
import { api } from './api.js';
import { start } from './router.js';
import { signinView, signedIn, signedOut } from './signin.js';
import { workersView } from './workers.js';
import { workerView } from './worker.js';
import { instancesView } from './instances.js';
import { instanceView } from './instance.js';
import { compareView } from './compare.js';
import { servicesView } from './services.js';
import { filesView } from './files.js';
import { hostView } from './host.js';

start({
	signin: signinView,
	workers: workersView,
	worker: workerView,
	instances: instancesView,
	instance: instanceView,
	compare: compareView,
	services: servicesView,
	files: filesView,
	host: hostView,
	missing: { el: $('view-missing') },
});

// A module runs once the document is parsed (modules are deferred).
try {
	await signedIn(await api('GET', '/api/v1/session'));
} catch (e) {
	signedOut('');
	if (e.status !== 401) showErr($('signin-err'), e.status === 404 ?
		'This nprofd has no sign-in (POST /api/v1/session): use the CLI or an API token.' : e);
}
