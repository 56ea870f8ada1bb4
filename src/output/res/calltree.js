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
function finish(func, total, self, parent, n, preorder) {
	const kidCount = new Uint32Array(n), kidStart = new Uint32Array(n), kids = new Uint32Array(n);
	const depth = new Uint32Array(n), left = new Float64Array(n);
	for (let i = 1; i < n; i++) kidCount[parent[i]]++;
	for (let i = 1, s = 0; i < n; i++) { s += kidCount[i - 1]; kidStart[i] = s; }
	let maxDepth = 0;
	if (preorder) {
		// From the writer: parents before children, siblings in name
		// order, so one pass places everything: a node starts where its
		// sibling before it ends, or at its parent's left edge. kidCount
		// counts the children placed so far, and ends as it was.
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
	const fill = new Uint32Array(n);
	for (let i = 1; i < n; i++) { const p = parent[i]; kids[kidStart[p] + fill[p]++] = i; }
	// Function ids are numbered in name order by the writer.
	// Most nodes have a few children: insertion sort in place, without
	// the subarray and comparator calls a million small sorts would cost.
	const byFunc = (x, y) => func[x] - func[y];
	for (let i = 0; i < n; i++) {
		const s = kidStart[i], e = s + kidCount[i];
		if (e - s > 16) {
			kids.subarray(s, e).sort(byFunc);
			continue;
		}
		for (let a = s + 1; a < e; a++) {
			const x = kids[a], fx = func[x];
			let b = a - 1;
			while (b >= s && func[kids[b]] > fx) { kids[b + 1] = kids[b]; b--; }
			kids[b + 1] = x;
		}
	}
	// Breadth first from the root: parents are placed before children.
	const order = new Uint32Array(n);
	for (let k = 0, end = 1; k < end; k++) {
		const i = order[k];
		let x = left[i];
		for (let c = kidStart[i], e = c + kidCount[i]; c < e; c++) {
			const j = kids[c];
			depth[j] = depth[i] + 1;
			if (depth[j] > maxDepth) maxDepth = depth[j];
			left[j] = x;
			x += total[j];
			order[end++] = j;
		}
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
	return finish(func.subarray(0, n), total.subarray(0, n), self.subarray(0, n), parent.subarray(0, n), n, true);
}

// The same samples merged from the other end of each stack: every node
// with self value is where stacks ended, so walking up from it gives the
// stack reversed. Frames the writer left out (minwidth) are absent here.
// Level by level: the walkers standing in one reversed node are grouped by
// the function of the next forward node up, with an array indexed by
// function id instead of a hash of (parent, function) — a hash with
// millions of keys made this take seconds on 100,000 stacks.
function invert(t) {
	let cap = 1024, n = 1;
	let func = new Int32Array(cap), total = new Float64Array(cap), self = new Float64Array(cap), parent = new Uint32Array(cap);
	const grow = (A, old) => { const x = new A(cap); x.set(old); return x; };
	let m = 0, nfunc = 0;
	for (let i = 1; i < t.n; i++) {
		if (t.self[i]) m++;
		if (t.func[i] >= nfunc) nfunc = t.func[i] + 1;
	}
	// A walker: the forward node it looks at next, its weight, and the
	// reversed node it stands in. Walkers stay sorted by that node.
	let at = new Int32Array(m), w = new Float64Array(m), grp = new Int32Array(m);
	let nat = new Int32Array(m), nw = new Float64Array(m), ngrp = new Int32Array(m);
	const stamp = new Int32Array(nfunc).fill(-1), childOf = new Int32Array(nfunc);
	const count = new Int32Array(m + 1);
	func[0] = -1; total[0] = t.total[0]; self[0] = t.self[0];
	let len = 0;
	for (let i = 1; i < t.n; i++)
		if (t.self[i]) { at[len] = i; w[len] = t.self[i]; grp[len] = 0; len++; }
	while (len > 0) {
		let nlen = 0;
		for (let a = 0; a < len;) {
			const g = grp[a];
			let b = a;
			while (b < len && grp[b] === g) b++;
			// Pass 1: a child of g per distinct function, and how many
			// walkers go to each.
			const first = n;
			for (let k = a; k < b; k++) {
				const x = at[k];
				if (x === 0) { self[g] += w[k]; continue; }
				const f = t.func[x];
				if (stamp[f] !== g) {
					stamp[f] = g;
					if (n === cap) {
						cap *= 2;
						func = grow(Int32Array, func); total = grow(Float64Array, total);
						self = grow(Float64Array, self); parent = grow(Uint32Array, parent);
					}
					childOf[f] = n;
					func[n] = f; parent[n] = g; count[n - first] = 0;
					n++;
				}
				const c = childOf[f];
				total[c] += w[k];
				count[c - first]++;
			}
			// Pass 2: the walkers step up, sorted by child.
			for (let c = first, s = nlen; c < n; c++) { const k = count[c - first]; count[c - first] = s; s += k; }
			for (let k = a; k < b; k++) {
				const x = at[k];
				if (x === 0) continue;
				const c = childOf[t.func[x]], to = count[c - first]++;
				nat[to] = t.parent[x]; nw[to] = w[k]; ngrp[to] = c;
				nlen++;
			}
			a = b;
		}
		[at, nat] = [nat, at]; [w, nw] = [nw, w]; [grp, ngrp] = [ngrp, grp];
		len = nlen;
	}
	return finish(func.subarray(0, n), total.subarray(0, n), self.subarray(0, n), parent.subarray(0, n), n, false);
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
