// calltree.js: what the flame graph (flame.html) and the call tree
// (tree.html) share: reading the profile the writer embedded, the colours
// of frame kinds, and building the call trees (forward and reversed).
// Each template loads it from a script element (src="calltree.js"), so
// the files open as they are in a browser; scripts/embed inlines it at
// build time, so every page nprof writes stands alone.
'use strict';
const timings = { start: performance.now() };
// The JSON the writer put in script element id, between its /*MARKER*/
// comments; only the template itself still has the markers.
function embedded(id, marker) {
	let text = document.getElementById(id).textContent;
	const a = text.indexOf('/*' + marker + '*/'), b = text.lastIndexOf('/*/' + marker + '*/');
	if (a >= 0 && b > a) text = text.slice(a + marker.length + 4, b);
	return JSON.parse(text);
}
const DATA = embedded('data', 'DATA');
timings.parsed = performance.now();

// Hue, hue spread, saturation, lightness per frame kind (profile.h order).
const PALETTE = [[8, 22, 78, 60], [42, 14, 80, 56], [205, 16, 55, 64], [178, 12, 48, 56],
	[105, 25, 45, 56], [270, 10, 28, 74], [0, 0, 0, 74]];
const KIND_NAMES = ['user code', 'library', 'kernel', 'inlined', 'JIT', 'thread', 'no symbol'];

const $ = id => document.getElementById(id);
const names = DATA.names, nfuncs = names.length;
function kindOf(f) { return f < 0 ? -1 : DATA.funcs[f * 4 + 3]; }

/* ---- Trees ----
 * A tree is a set of typed arrays indexed by node: func, total, self,
 * parent, depth, left (value offset from the root's left edge) and the
 * children in name order (kids, from kidStart, kidCount long). */
function finish(func, total, self, parent, n) {
	const kidCount = new Uint32Array(n), kidStart = new Uint32Array(n), kids = new Uint32Array(n);
	const depth = new Uint32Array(n), left = new Float64Array(n);
	for (let i = 1; i < n; i++) kidCount[parent[i]]++;
	for (let i = 1, s = 0; i < n; i++) { s += kidCount[i - 1]; kidStart[i] = s; }
	// Every builder numbers parents before children and siblings in name
	// order (function ids are in name order), so one pass places
	// everything: a node starts where its sibling before it ends, or at
	// its parent's left edge. kidCount counts the children placed so far,
	// and ends as it was.
	let maxDepth = 0;
	kidCount.fill(0);
	for (let i = 1; i < n; i++) {
		const p = parent[i], k = kidStart[p] + kidCount[p]++;
		depth[i] = depth[p] + 1;
		if (depth[i] > maxDepth) maxDepth = depth[i];
		left[i] = k > kidStart[p] ? left[kids[k - 1]] + total[kids[k - 1]] : left[p];
		kids[k] = i;
	}
	return { n, func, total, self, parent, depth, left, kids, kidStart, kidCount, maxDepth };
}

// nodes: pre-order, [func, total, children] each; children < 0 means
// -(children + 1) with the value of the children left out following.
function decode(nodes) {
	const max = Math.floor(nodes.length / 3);
	const func = new Int32Array(max), total = new Float64Array(max), self = new Float64Array(max), parent = new Uint32Array(max);
	const stack = [], remaining = [];
	let n = 0;
	for (let k = 0; k < nodes.length; n++) {
		const i = n;
		func[i] = nodes[k++]; total[i] = nodes[k++];
		let kids = nodes[k++];
		self[i] = total[i];
		if (kids < 0) { kids = -kids - 1; self[i] -= nodes[k++]; }
		if (stack.length) {
			const p = stack[stack.length - 1];
			parent[i] = p;
			self[p] -= total[i];
			if (--remaining[remaining.length - 1] === 0) { stack.pop(); remaining.pop(); }
		}
		if (kids > 0) { stack.push(i); remaining.push(kids); }
	}
	return finish(func.subarray(0, n), total.subarray(0, n), self.subarray(0, n), parent.subarray(0, n), n);
}

// The same samples merged from the other end of each stack: every node
// with self value is where stacks ended, so walking up from it gives the
// stack reversed. Frames the writer left out (minwidth) are absent here.
// Level by level: the walkers standing in one reversed node are grouped by
// the function of the next forward node up, with an array indexed by
// function id instead of a hash of (parent, function) — a hash with
// millions of keys made this take seconds on 100,000 stacks.
function invert(t) {
	// A walker makes at most one node per frame it walks, so the frames
	// under every stack's end bound the node count.
	let m = 0, nfunc = 0, cap = 1;
	for (let i = 1; i < t.n; i++) {
		if (t.self[i]) { m++; cap += t.depth[i]; }
		if (t.func[i] >= nfunc) nfunc = t.func[i] + 1;
	}
	const func = new Int32Array(cap), total = new Float64Array(cap), self = new Float64Array(cap), parent = new Uint32Array(cap);
	// Each forward node's function and parent side by side: a walker's
	// step up costs one cache miss, not two. The root's function is -1.
	const up = new Int32Array(2 * t.n);
	up[0] = -1;
	for (let i = 1; i < t.n; i++) { up[2 * i] = t.func[i]; up[2 * i + 1] = t.parent[i]; }
	// A walker: the function of the forward node it stands on, that
	// node's parent, its weight, and the reversed node it stands in.
	// Walkers stay sorted by that reversed node.
	let wf = new Int32Array(m), wp = new Int32Array(m), w = new Float64Array(m), grp = new Int32Array(m);
	let nf = new Int32Array(m), np = new Int32Array(m), nw = new Float64Array(m), ngrp = new Int32Array(m);
	let len = 0;
	for (let i = 1; i < t.n; i++)
		if (t.self[i]) { wf[len] = up[2 * i]; wp[len] = up[2 * i + 1]; w[len] = t.self[i]; len++; }
	// Per function, within the group at hand: how many walkers stand on
	// it, then where they go next; stamp says which group an entry is of.
	const stamp = new Int32Array(nfunc).fill(-1), childOf = new Int32Array(nfunc);
	const count = new Int32Array(nfunc), seen = new Int32Array(nfunc);
	func[0] = -1; total[0] = t.total[0]; self[0] = t.self[0];
	let n = 1;
	while (len > 0) {
		let nlen = 0;
		for (let a = 0; a < len;) {
			const g = grp[a];
			let b = a;
			while (b < len && grp[b] === g) b++;
			// Pass 1: the functions the walkers of g stand on, and how
			// many stand on each; a walker at the root ends in g.
			let nseen = 0;
			for (let k = a; k < b; k++) {
				const f = wf[k];
				if (f < 0) { self[g] += w[k]; continue; }
				if (stamp[f] !== g) { stamp[f] = g; count[f] = 0; seen[nseen++] = f; }
				count[f]++;
			}
			// g's children in name order, so the tree needs no sorting.
			if (nseen > 16) seen.subarray(0, nseen).sort();
			else for (let i = 1; i < nseen; i++) {
				const x = seen[i];
				let j = i - 1;
				while (j >= 0 && seen[j] > x) { seen[j + 1] = seen[j]; j--; }
				seen[j + 1] = x;
			}
			for (let i = 0; i < nseen; i++) {
				const f = seen[i];
				childOf[f] = n; func[n] = f; parent[n] = g;
				const c = count[f];
				count[f] = nlen; nlen += c;
				n++;
			}
			// Pass 2: each walker steps up into its child's slot.
			for (let k = a; k < b; k++) {
				const f = wf[k];
				if (f < 0) continue;
				const c = childOf[f], to = count[f]++, x = wp[k];
				total[c] += w[k];
				nf[to] = up[2 * x]; np[to] = up[2 * x + 1]; nw[to] = w[k]; ngrp[to] = c;
			}
			a = b;
		}
		[wf, nf] = [nf, wf]; [wp, np] = [np, wp]; [w, nw] = [nw, w]; [grp, ngrp] = [ngrp, grp];
		len = nlen;
	}
	return finish(func.subarray(0, n), total.subarray(0, n), self.subarray(0, n), parent.subarray(0, n), n);
}

/* ---- Formatting ---- */
const unit = DATA.unit, valueType = DATA.valueType || 'samples';
function fmtValue(v) {
	if (unit === 'nanoseconds') {
		if (v >= 1e9) return (v / 1e9).toFixed(2) + ' s';
		if (v >= 1e6) return (v / 1e6).toFixed(2) + ' ms';
		if (v >= 1e3) return (v / 1e3).toFixed(2) + ' \u00b5s';
		return v + ' ns';
	}
	if (unit === 'bytes') {
		const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
		let k = 0;
		while (v >= 1024 && k < u.length - 1) { v /= 1024; k++; }
		return (k ? v.toFixed(2) : v) + ' ' + u[k];
	}
	return v.toLocaleString('en-US') + ' ' + valueType;
}
function pct(v, of) { return of > 0 ? (100 * v / of).toFixed(2) + '%' : '\u2013'; }

// The trees built so far, by direction ('fwd', 'rev'); the page starts
// with the one the writer chose. A diff's (DATA.stacks) is weighed by the
// diff's own data: flame.html builds it.
const trees = {};
if (DATA.nodes) trees[DATA.reverse ? 'rev' : 'fwd'] = decode(DATA.nodes);
timings.decoded = performance.now();
