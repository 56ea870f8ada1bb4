// The web UI's modules (src/daemon/ui/*.js) as a graph: every import
// names a file there and names it exports; no module imports itself
// through others (no cycle); every module is reached from main.js, the
// page's one script; none uses a global of the page's own (window.NP);
// docs/design.md names each one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = join(root, 'src/daemon/ui');
const files = readdirSync(dir).filter(f => f.endsWith('.js')).sort();
const text = Object.fromEntries(files.map(f => [f, readFileSync(join(dir, f), 'utf8')]));

// f's imports: [{ from, names }], names as the exporting module has them.
function importsOf(f) {
	const out = [];
	for (const m of text[f].matchAll(/^import\s*\{([^}]*)\}\s*from\s*'([^']+)';/gm))
		out.push({ from: m[2], names: m[1].split(',').map(s => s.trim().split(/\s+as\s+/)[0]).filter(Boolean) });
	for (const m of text[f].matchAll(/^import\s+(?!\{)(.*?)\s*from\s*'([^']+)';/gm))
		out.push({ from: m[2], names: ['*bare* ' + m[1]] });
	return out;
}
function exportsOf(f) {
	return new Set([...text[f].matchAll(/^export\s+(?:async\s+)?(?:const|let|function|class)\s+([A-Za-z_$][\w$]*)/gm)]
		.map(m => m[1]));
}
const graph = Object.fromEntries(files.map(f => [f, importsOf(f).map(i => i.from.replace(/^\.\//, ''))]));

test('every import is a named import of a module beside it, of a name it exports', () => {
	for (const f of files)
		for (const { from, names } of importsOf(f)) {
			assert.match(from, /^\.\/[a-z_]+\.js$/, `${f} imports ${from}: a module of src/daemon/ui/, by ./NAME.js`);
			const to = from.slice(2);
			assert.ok(files.includes(to), `${f} imports ${to}, which exists`);
			const ex = exportsOf(to);
			for (const n of names) assert.ok(ex.has(n), `${f} imports ${n} from ${to}, which exports it`);
		}
});

test('no import cycle', () => {
	const state = {};	// file -> 'open' while on the path, 'done' after
	const visit = (f, path) => {
		if (state[f] === 'done') return;
		assert.notEqual(state[f], 'open', 'a cycle: ' + [...path, f].join(' -> '));
		state[f] = 'open';
		for (const g of graph[f]) visit(g, [...path, f]);
		state[f] = 'done';
	};
	for (const f of files) visit(f, []);
});

test('every module is reached from main.js', () => {
	const seen = new Set();
	const walk = f => { if (seen.has(f)) return; seen.add(f); graph[f].forEach(walk); };
	walk('main.js');
	assert.deepEqual(files.filter(f => !seen.has(f)), []);
});

test('no global of the page: no NP, nothing set on window', () => {
	for (const f of files) {
		assert.doesNotMatch(text[f], /\bNP\b/, `${f} names no NP`);
		assert.doesNotMatch(text[f], /\bwindow\.\w+\s*=[^=]/, `${f} sets nothing on window`);
	}
});

test('index.html loads main.js alone, as a module', () => {
	const html = readFileSync(join(dir, 'index.html'), 'utf8');
	assert.deepEqual([...html.matchAll(/<script[^>]*>/g)].map(m => m[0]),
		['<script type="module" src="/ui/main.js">']);
});

test('docs/design.md names every module', () => {
	const doc = readFileSync(join(root, 'docs/design.md'), 'utf8');
	for (const f of files) assert.ok(doc.includes(f), `docs/design.md names ${f}`);
});
