/* jfr_write: a profile as one JFR chunk that the JDK's `jfr` tool, JDK
 * Mission Control and async-profiler's converters read.
 *
 * The chunk is built in memory: header, metadata, the events, then one
 * checkpoint holding every constant pool; the header's offsets are filled
 * last. Native frames become Java-shaped methods: the library's file name is
 * the class, its directory the package, the function the method (see
 * docs/jfr.md for the why). cpu, itimer and wall samples are written as
 * jdk.ExecutionSample, one event per sample, so every JFR tool shows them;
 * other events as nprof.Sample, one event per (stack, thread) with all of
 * the profile's values. One nprof.Profile event carries what JFR has no
 * place for (event name, interval, value types, which threads' stacks were
 * rooted in their thread pseudo-frame) so nprof can read its own files
 * back exactly. */
#include "output/jfr.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/hash.h"
#include "base/id_index.h"
#include "output/jfr_format.h"
#include "output/output.h"
#include "profile/events.h"

/* A written file larger than this is refused (-EFBIG): it would be a
 * recording nobody can open anyway. */
#define JFR_MAX_FILE_SIZE (1ull << 31)

struct jbuf {
	uint8_t *p;
	size_t len, cap;
	int err; /* first error; later appends are dropped */
};

static int jb_reserve(struct jbuf *b, size_t n)
{
	size_t ncap;
	uint8_t *np;

	if (b->err)
		return b->err;
	if (n > JFR_MAX_FILE_SIZE || b->len > JFR_MAX_FILE_SIZE - n)
		return b->err = -EFBIG;
	if (b->len + n <= b->cap)
		return 0;
	ncap = b->cap ? b->cap : 4096;
	while (ncap < b->len + n)
		ncap *= 2;
	np = realloc(b->p, ncap);
	if (!np)
		return b->err = -ENOMEM;
	b->p = np;
	b->cap = ncap;
	return 0;
}

static void jb_bytes(struct jbuf *b, const void *data, size_t n)
{
	if (jb_reserve(b, n) < 0)
		return;
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

static void jb_u8(struct jbuf *b, uint8_t v)
{
	jb_bytes(b, &v, 1);
}

static void jb_varint(struct jbuf *b, uint64_t v)
{
	if (jb_reserve(b, JFR_VARINT_MAX) < 0)
		return;
	b->len += jfr_varint_put(b->p + b->len, v);
}

static void jb_string_n(struct jbuf *b, const char *s, size_t n)
{
	if (!s) {
		jb_u8(b, JFR_STR_NULL);
		return;
	}
	if (!n) {
		jb_u8(b, JFR_STR_EMPTY);
		return;
	}
	jb_u8(b, JFR_STR_UTF8);
	jb_varint(b, n);
	jb_bytes(b, s, n);
}

static void jb_string(struct jbuf *b, const char *s)
{
	jb_string_n(b, s, s ? strlen(s) : 0);
}

/* Appends an event whose body (type id and fields) is in ev: the size
 * comes first and counts itself, so find the width where it fits. */
static void jb_event(struct jbuf *b, const struct jbuf *ev)
{
	uint64_t size = ev->len + 1;

	if (ev->err) {
		if (!b->err)
			b->err = ev->err;
		return;
	}
	while (jfr_varint_len(size) + ev->len != size)
		size = ev->len + jfr_varint_len(size);
	jb_varint(b, size);
	jb_bytes(b, ev->p, ev->len);
}

/* ---- Metadata: the type system, as JFR's element tree. ---- */

enum { F_CPOOL = 1, F_ARRAY = 2, F_TICKS = 4 };

struct mfield {
	const char *name;
	unsigned type;
	unsigned flags;
	const char *label;
};

struct mtype {
	const char *name;
	unsigned id;
	const char *super;
	bool simple;
	const char *label;
	const char *category; /* events only */
	const struct mfield *fields; /* ends with a NULL name */
};

#define FIELDS(...) ((const struct mfield[]){ __VA_ARGS__, { NULL, 0, 0, NULL } })
#define NOFIELDS ((const struct mfield[]){ { NULL, 0, 0, NULL } })
#define ANNOTATION "java.lang.annotation.Annotation"
#define EVENT "jdk.jfr.Event"

/* The field layouts follow the JDK's own (jdk.types.*), so tools that read
 * pools by position, like async-profiler's converter, read these too. */
static const struct mtype meta_types[] = {
	{ "boolean", JFR_T_BOOLEAN, NULL, false, NULL, NULL, NOFIELDS },
	{ "char", JFR_T_CHAR, NULL, false, NULL, NULL, NOFIELDS },
	{ "float", JFR_T_FLOAT, NULL, false, NULL, NULL, NOFIELDS },
	{ "double", JFR_T_DOUBLE, NULL, false, NULL, NULL, NOFIELDS },
	{ "byte", JFR_T_BYTE, NULL, false, NULL, NULL, NOFIELDS },
	{ "short", JFR_T_SHORT, NULL, false, NULL, NULL, NOFIELDS },
	{ "int", JFR_T_INT, NULL, false, NULL, NULL, NOFIELDS },
	{ "long", JFR_T_LONG, NULL, false, NULL, NULL, NOFIELDS },
	{ "java.lang.String", JFR_T_STRING, NULL, false, NULL, NULL, NOFIELDS },
	{ "java.lang.Class", JFR_T_CLASS, NULL, false, "Java Class", NULL,
	  FIELDS({ "classLoader", JFR_T_CLASS_LOADER, F_CPOOL, "Class Loader" },
		 { "name", JFR_T_SYMBOL, F_CPOOL, "Name" },
		 { "package", JFR_T_PACKAGE, F_CPOOL, "Package" },
		 { "modifiers", JFR_T_INT, 0, "Access Modifiers" },
		 { "hidden", JFR_T_BOOLEAN, 0, "Hidden" }) },
	{ "java.lang.Thread", JFR_T_THREAD, NULL, false, "Thread", NULL,
	  FIELDS({ "osName", JFR_T_STRING, 0, "OS Thread Name" },
		 { "osThreadId", JFR_T_LONG, 0, "OS Thread Id" },
		 { "javaName", JFR_T_STRING, 0, "Java Thread Name" },
		 { "javaThreadId", JFR_T_LONG, 0, "Java Thread Id" }) },
	{ "jdk.types.ClassLoader", JFR_T_CLASS_LOADER, NULL, false,
	  "Java Class Loader", NULL,
	  FIELDS({ "type", JFR_T_CLASS, F_CPOOL, "Type" },
		 { "name", JFR_T_SYMBOL, F_CPOOL, "Name" }) },
	{ "jdk.types.FrameType", JFR_T_FRAME_TYPE, NULL, true, "Frame type", NULL,
	  FIELDS({ "description", JFR_T_STRING, 0, "Description" }) },
	{ "jdk.types.ThreadState", JFR_T_THREAD_STATE, NULL, true,
	  "Java Thread State", NULL,
	  FIELDS({ "name", JFR_T_STRING, 0, "Name" }) },
	{ "jdk.types.StackTrace", JFR_T_STACK_TRACE, NULL, false, "Stacktrace", NULL,
	  FIELDS({ "truncated", JFR_T_BOOLEAN, 0, "Truncated" },
		 { "frames", JFR_T_STACK_FRAME, F_ARRAY, "Stack Frames" }) },
	{ "jdk.types.StackFrame", JFR_T_STACK_FRAME, NULL, false, NULL, NULL,
	  FIELDS({ "method", JFR_T_METHOD, F_CPOOL, "Java Method" },
		 { "lineNumber", JFR_T_INT, 0, "Line Number" },
		 { "bytecodeIndex", JFR_T_INT, 0, "Bytecode Index" },
		 { "type", JFR_T_FRAME_TYPE, F_CPOOL, "Frame Type" }) },
	{ "jdk.types.Method", JFR_T_METHOD, NULL, false, "Java Method", NULL,
	  FIELDS({ "type", JFR_T_CLASS, F_CPOOL, "Type" },
		 { "name", JFR_T_SYMBOL, F_CPOOL, "Name" },
		 { "descriptor", JFR_T_SYMBOL, F_CPOOL, "Descriptor" },
		 { "modifiers", JFR_T_INT, 0, "Access Modifiers" },
		 { "hidden", JFR_T_BOOLEAN, 0, "Hidden" }) },
	{ "jdk.types.Package", JFR_T_PACKAGE, NULL, false, "Package", NULL,
	  FIELDS({ "name", JFR_T_SYMBOL, F_CPOOL, "Name" }) },
	{ "jdk.types.Symbol", JFR_T_SYMBOL, NULL, true, "Symbol", NULL,
	  FIELDS({ "string", JFR_T_STRING, 0, "String" }) },
	{ "jdk.ExecutionSample", JFR_T_EXECUTION_SAMPLE, EVENT, false,
	  "Method Profiling Sample", "Profiling",
	  FIELDS({ "startTime", JFR_T_LONG, F_TICKS, "Start Time" },
		 { "sampledThread", JFR_T_THREAD, F_CPOOL, "Thread" },
		 { "stackTrace", JFR_T_STACK_TRACE, F_CPOOL, "Stack Trace" },
		 { "state", JFR_T_THREAD_STATE, F_CPOOL, "Thread State" }) },
	{ "nprof.Sample", JFR_T_NPROF_SAMPLE, EVENT, false, "nprof Sample",
	  "Profiling",
	  FIELDS({ "startTime", JFR_T_LONG, F_TICKS, "Start Time" },
		 { "sampledThread", JFR_T_THREAD, F_CPOOL, "Thread" },
		 { "stackTrace", JFR_T_STACK_TRACE, F_CPOOL, "Stack Trace" },
		 /* valueN is the Nth of nprof.Profile's valueTypes. Not
		  * a long[]: `jfr print` cannot print primitive arrays. */
		 { "value0", JFR_T_LONG, 0, "Value 0" },
		 { "value1", JFR_T_LONG, 0, "Value 1" },
		 { "value2", JFR_T_LONG, 0, "Value 2" },
		 { "value3", JFR_T_LONG, 0, "Value 3" }) },
	{ "nprof.Profile", JFR_T_NPROF_PROFILE, EVENT, false, "nprof Profile",
	  "Profiling",
	  FIELDS({ "startTime", JFR_T_LONG, F_TICKS, "Start Time" },
		 { "event", JFR_T_STRING, 0, "Event" },
		 { "interval", JFR_T_LONG, 0, "Interval" },
		 { "intervalUnit", JFR_T_STRING, 0, "Interval Unit" },
		 { "valueTypes", JFR_T_STRING, 0, "Value Types" },
		 { "pid", JFR_T_LONG, 0, "Process Id" },
		 { "command", JFR_T_STRING, 0, "Command" },
		 /* The threads with pool keys 1..threadRoots had every
		  * stack start with their pseudo-frame (-t), which the
		  * stack traces leave out: a reader puts it back from
		  * sampledThread. */
		 { "threadRoots", JFR_T_LONG, 0, "Threads With Root Frames" }) },
	{ "jdk.jfr.Label", JFR_T_LABEL, ANNOTATION, false, NULL, NULL,
	  FIELDS({ "value", JFR_T_STRING, 0, NULL }) },
	{ "jdk.jfr.Category", JFR_T_CATEGORY, ANNOTATION, false, NULL, NULL,
	  FIELDS({ "value", JFR_T_STRING, F_ARRAY, NULL }) },
	{ "jdk.jfr.Timestamp", JFR_T_TIMESTAMP, ANNOTATION, false, "Timestamp",
	  NULL, FIELDS({ "value", JFR_T_STRING, 0, NULL }) },
};

/* nprof.Sample has one field per profile value. */
_Static_assert(PROFILE_MAX_VALUES == 4, "nprof.Sample declares value0..value3");

#define META_MAX_STRINGS 256

struct meta {
	struct jbuf tree;
	char *strs[META_MAX_STRINGS];
	size_t nstrs;
	int err;
};

/* The string-table index of s, added when new. The table is small (the
 * names above), so a linear search is fine. */
static uint32_t meta_str(struct meta *m, const char *s)
{
	for (size_t i = 0; i < m->nstrs; i++)
		if (!strcmp(m->strs[i], s))
			return (uint32_t)i;
	if (m->nstrs == META_MAX_STRINGS) {
		m->err = -EFBIG;
		return 0;
	}
	m->strs[m->nstrs] = strdup(s);
	if (!m->strs[m->nstrs]) {
		m->err = -ENOMEM;
		return 0;
	}
	return (uint32_t)m->nstrs++;
}

/* Writes an element header: its name, nattr key/value pairs from kv, and
 * the number of children that the caller writes next. */
static void meta_elem(struct meta *m, const char *name, const char *const *kv,
		      unsigned nattr, unsigned nchildren)
{
	jb_varint(&m->tree, meta_str(m, name));
	jb_varint(&m->tree, nattr);
	for (unsigned i = 0; i < nattr; i++) {
		jb_varint(&m->tree, meta_str(m, kv[2 * i]));
		jb_varint(&m->tree, meta_str(m, kv[2 * i + 1]));
	}
	jb_varint(&m->tree, nchildren);
}

static void meta_annotation(struct meta *m, unsigned type, const char *key,
			    const char *value)
{
	char id[16];
	const char *kv[4] = { "class", id, key, value };

	snprintf(id, sizeof(id), "%u", type);
	meta_elem(m, "annotation", kv, value ? 2 : 1, 0);
}

static void meta_type(struct meta *m, const struct mtype *t)
{
	char id[16];
	const char *kv[8];
	unsigned nattr = 0, nfields = 0, nchildren;

	for (const struct mfield *f = t->fields; f->name; f++)
		nfields++;
	snprintf(id, sizeof(id), "%u", t->id);
	kv[2 * nattr] = "name", kv[2 * nattr++ + 1] = t->name;
	kv[2 * nattr] = "id", kv[2 * nattr++ + 1] = id;
	if (t->super)
		kv[2 * nattr] = "superType", kv[2 * nattr++ + 1] = t->super;
	if (t->simple)
		kv[2 * nattr] = "simpleType", kv[2 * nattr++ + 1] = "true";
	nchildren = nfields + (t->label != NULL) + (t->category != NULL);
	meta_elem(m, "class", kv, nattr, nchildren);
	if (t->label)
		meta_annotation(m, JFR_T_LABEL, "value", t->label);
	if (t->category)
		meta_annotation(m, JFR_T_CATEGORY, "value-0", t->category);
	for (const struct mfield *f = t->fields; f->name; f++) {
		char cls[16];
		const char *fkv[8] = { "name", f->name, "class", cls,
				       "constantPool", "true", "dimension", "1" };
		unsigned fattr = 2;

		snprintf(cls, sizeof(cls), "%u", f->type);
		/* constantPool and dimension are pairs 2 and 3; a field that
		 * is an array but not pooled moves dimension up. */
		if (f->flags & F_CPOOL)
			fattr++;
		if (f->flags & F_ARRAY) {
			if (!(f->flags & F_CPOOL))
				fkv[4] = "dimension", fkv[5] = "1";
			fattr++;
		}
		meta_elem(m, "field", fkv, fattr,
			  (f->label != NULL) + !!(f->flags & F_TICKS));
		if (f->label)
			meta_annotation(m, JFR_T_LABEL, "value", f->label);
		if (f->flags & F_TICKS)
			meta_annotation(m, JFR_T_TIMESTAMP, "value", "TICKS");
	}
}

static void write_metadata(struct jbuf *out, uint64_t ticks)
{
	static const char *const region[] = { "locale", "en_US", "gmtOffset", "0" };
	size_t ntypes = sizeof(meta_types) / sizeof(meta_types[0]);
	struct meta m = { 0 };
	struct jbuf ev = { 0 };

	meta_elem(&m, "root", NULL, 0, 2);
	meta_elem(&m, "metadata", NULL, 0, (unsigned)ntypes);
	for (size_t i = 0; i < ntypes; i++)
		meta_type(&m, &meta_types[i]);
	meta_elem(&m, "region", region, 2, 0);

	jb_varint(&ev, JFR_EVENT_METADATA);
	jb_varint(&ev, ticks); /* start time */
	jb_varint(&ev, 0);     /* duration */
	jb_varint(&ev, 1);     /* metadata id: one metadata per file */
	jb_varint(&ev, m.nstrs);
	for (size_t i = 0; i < m.nstrs; i++)
		jb_string(&ev, m.strs[i]);
	jb_bytes(&ev, m.tree.p, m.tree.len);
	if (m.err && !ev.err)
		ev.err = m.err;
	if (m.tree.err && !ev.err)
		ev.err = m.tree.err;
	jb_event(out, &ev);
	for (size_t i = 0; i < m.nstrs; i++)
		free(m.strs[i]);
	free(m.tree.p);
	free(ev.p);
}

/* ---- Constant pools: symbols, packages, classes, methods. ---- */

/* A symbol is a piece of a profile string (a module path's directory or
 * file name, a function name): no copies needed. */
struct sym {
	const char *s;
	uint32_t len;
};

struct pair {
	uint32_t a, b;
};

struct pools {
	struct sym *syms; /* key i + 1 */
	size_t nsyms, syms_cap;
	struct id_index sym_index;
	struct pair *classes; /* (name symbol, package symbol or 0); key i + 1 */
	size_t nclasses, classes_cap;
	struct id_index class_index;
	struct pair *methods; /* (class key, name symbol); key i + 1 */
	size_t nmethods, methods_cap;
	struct id_index method_index;
	uint32_t *frame_method; /* frame id -> method key; 0: left out */
	bool *pkg_used;		/* symbol key - 1 -> used as a package name */
	uint32_t *thread_key;	/* thread id -> thread pool key */
	uint32_t nrooted;	/* keys 1..nrooted: threads with thread roots */
};

static int sym_match(const void *ctx, uint32_t id, const void *key)
{
	const struct sym *a = &((const struct pools *)ctx)->syms[id], *b = key;

	return a->len == b->len && !memcmp(a->s, b->s, a->len);
}

static int sym_intern(struct pools *pl, const char *s, size_t len,
		      uint32_t *ret_key)
{
	struct sym k = { s, (uint32_t)len };
	uint64_t h = hash_bytes(s, len, 0);
	uint32_t id = id_index_find(&pl->sym_index, h, sym_match, pl, &k);

	if (id == ID_NONE) {
		if (array_reserve(&pl->syms, &pl->syms_cap, pl->nsyms + 1, sizeof(*pl->syms)) < 0)
			return -ENOMEM;
		id = (uint32_t)pl->nsyms;
		if (id_index_insert(&pl->sym_index, h, id) < 0)
			return -ENOMEM;
		pl->syms[pl->nsyms++] = k;
	}
	*ret_key = id + 1;
	return 0;
}

struct pair_ctx {
	const struct pair *arr;
};

static int pair_match(const void *ctx, uint32_t id, const void *key)
{
	const struct pair *a = &((const struct pair_ctx *)ctx)->arr[id], *b = key;

	return a->a == b->a && a->b == b->b;
}

static int pair_intern(struct pair **arr, size_t *n, size_t *cap,
		       struct id_index *x, struct pair k, uint32_t *ret_key)
{
	uint64_t h = hash_u64((uint64_t)k.a << 32 | k.b);
	struct pair_ctx ctx = { *arr };
	uint32_t id = id_index_find(x, h, pair_match, &ctx, &k);

	if (id == ID_NONE) {
		if (array_reserve(arr, cap, *n + 1, sizeof(**arr)) < 0)
			return -ENOMEM;
		id = (uint32_t)*n;
		if (id_index_insert(x, h, id) < 0)
			return -ENOMEM;
		(*arr)[(*n)++] = k;
	}
	*ret_key = id + 1;
	return 0;
}

/* The class a frame's method belongs to: its library's file name, in the
 * package of the library's directory; kernel and module-less frames get a
 * bracketed pseudo-class. */
static int frame_class(struct pools *pl, const struct frame *f, uint32_t *ret_key)
{
	const char *mod = f->module, *base;
	struct pair k = { 0, 0 };
	int r;

	if (f->kind == FRAME_KERNEL || !mod || !*mod) {
		const char *name = f->kind == FRAME_KERNEL ? JFR_CLASS_KERNEL
							   : JFR_CLASS_UNKNOWN;

		r = sym_intern(pl, name, strlen(name), &k.a);
	} else {
		base = strrchr(mod, '/');
		if (base && base[1]) {
			/* "/libc.so.6" lives in "/": keep the root visible. */
			size_t dlen = base == mod ? 1 : (size_t)(base - mod);

			r = sym_intern(pl, mod, dlen, &k.b);
			if (r < 0)
				return r;
			base++;
		} else {
			base = mod;
		}
		r = sym_intern(pl, base, strlen(base), &k.a);
	}
	if (r < 0)
		return r;
	return pair_intern(&pl->classes, &pl->nclasses, &pl->classes_cap,
			   &pl->class_index, k, ret_key);
}

static int pools_build(struct pools *pl, const struct profile *p)
{
	uint32_t key;
	int r;

	id_index_init(&pl->sym_index);
	id_index_init(&pl->class_index);
	id_index_init(&pl->method_index);
	pl->frame_method = calloc(p->nframes ? p->nframes : 1, sizeof(uint32_t));
	if (!pl->frame_method)
		return -ENOMEM;
	/* The descriptor every method shares: JFR tools parse it as a Java
	 * signature, so it must be a well-formed one. */
	r = sym_intern(pl, "()V", 3, &key);
	if (r < 0)
		return r;
	for (size_t i = 0; i < p->nframes; i++) {
		const struct frame *f = &p->frames[i];
		struct pair m;

		/* The thread pseudo-frame (-t) is JFR's sampledThread. */
		if (f->kind == FRAME_THREAD)
			continue;
		r = frame_class(pl, f, &m.a);
		if (r < 0)
			return r;
		r = sym_intern(pl, f->name, strlen(f->name), &m.b);
		if (r < 0)
			return r;
		r = pair_intern(&pl->methods, &pl->nmethods, &pl->methods_cap,
				&pl->method_index, m, &pl->frame_method[i]);
		if (r < 0)
			return r;
	}
	pl->pkg_used = calloc(pl->nsyms ? pl->nsyms : 1, sizeof(bool));
	if (!pl->pkg_used)
		return -ENOMEM;
	for (size_t i = 0; i < pl->nclasses; i++)
		if (pl->classes[i].b)
			pl->pkg_used[pl->classes[i].b - 1] = true;
	return 0;
}

/* The thread pseudo-frame (-t) a reader rebuilds for thread t from the
 * pool entry written for it: the entry's name is the stand-in
 * JFR_NAMELESS_THREAD_FMT when t has none, and that reads back nameless. */
static char *thread_root_name(const struct thread *t)
{
	const char *name = t->name && *t->name ? t->name : NULL;
	char fallback[32];

	snprintf(fallback, sizeof(fallback), JFR_NAMELESS_THREAD_FMT, (int)t->tid);
	if (name && !strcmp(name, fallback))
		name = NULL;
	return jfr_thread_root_name(name, (int)t->tid);
}

/* Notes that a sample of thread starts with frame root (NO_FRAME for an
 * empty stack): root[thread] is that frame id + 1 while all agree, 0
 * before the first, MIXED after a disagreement. */
#define NO_FRAME UINT32_MAX
#define MIXED UINT32_MAX

static void note_root(const struct profile *p, uint32_t *root, uint32_t stack,
		      uint32_t thread)
{
	uint32_t f = p->stacks[stack].depth ? profile_stack_frames(p, stack)[0] : NO_FRAME;

	if (f == NO_FRAME || p->frames[f].kind != FRAME_THREAD)
		root[thread] = MIXED;
	else if (!root[thread])
		root[thread] = f + 1;
	else if (root[thread] != f + 1)
		root[thread] = MIXED;
}

/* Thread pool keys. A thread whose every sample (and timeline event)
 * starts with its own pseudo-frame, named as a reader rebuilds it, comes
 * first: nprof.Profile's threadRoots counts those, and the reader puts
 * their roots back. The stack traces never hold the pseudo-frames. A
 * thread renamed while it was sampled has roots under both names but one
 * pool entry, so its roots are lost. */
static int thread_keys_build(struct pools *pl, const struct profile *p)
{
	uint32_t *root, k = 0;
	int r = 0;

	pl->thread_key = calloc(p->nthreads ? p->nthreads : 1, sizeof(uint32_t));
	root = calloc(p->nthreads ? p->nthreads : 1, sizeof(uint32_t));
	if (!pl->thread_key || !root) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < p->nsamples; i++)
		note_root(p, root, p->samples[i].stack, p->samples[i].thread);
	for (size_t i = 0; i < p->nevents; i++)
		note_root(p, root, p->events[i].stack, p->events[i].thread);
	for (size_t i = 0; i < p->nthreads; i++) {
		char *want;

		if (!root[i] || root[i] == MIXED || p->threads[i].tid < 0)
			continue;
		if (!(want = thread_root_name(&p->threads[i]))) {
			r = -ENOMEM;
			goto out;
		}
		if (!strcmp(p->frames[root[i] - 1].name, want))
			pl->thread_key[i] = ++k;
		free(want);
	}
	pl->nrooted = k;
	for (size_t i = 0; i < p->nthreads; i++)
		if (!pl->thread_key[i])
			pl->thread_key[i] = ++k;
out:
	free(root);
	return r;
}

static void pools_release(struct pools *pl)
{
	free(pl->syms);
	free(pl->classes);
	free(pl->methods);
	free(pl->frame_method);
	free(pl->pkg_used);
	free(pl->thread_key);
	id_index_release(&pl->sym_index);
	id_index_release(&pl->class_index);
	id_index_release(&pl->method_index);
}

static uint64_t frame_type_key(enum frame_kind k)
{
	switch (k) {
	case FRAME_INLINED:
		return JFR_FT_INLINED;
	case FRAME_JIT:
		return JFR_FT_JIT;
	default:
		return JFR_FT_NATIVE;
	}
}

static void write_checkpoint(struct jbuf *out, const struct profile *p,
			     const struct pools *pl, uint64_t ticks)
{
	struct jbuf ev = { 0 };
	size_t npkg = 0;
	unsigned npools;

	for (size_t i = 0; i < pl->nsyms; i++)
		npkg += pl->pkg_used[i];
	/* Frame types, thread states, methods, classes and symbols always
	 * have entries; the JDK refuses an empty pool, so the others are
	 * left out when they have nothing. */
	npools = 5 + (npkg > 0) + (p->nthreads > 0) + (p->nstacks > 0);

	jb_varint(&ev, JFR_EVENT_CHECKPOINT);
	jb_varint(&ev, ticks); /* start time */
	jb_varint(&ev, 0);     /* duration */
	jb_varint(&ev, 0);     /* delta to the previous checkpoint: none */
	jb_u8(&ev, 1);	       /* checkpoint type: flush */
	jb_varint(&ev, npools);

	jb_varint(&ev, JFR_T_FRAME_TYPE);
	jb_varint(&ev, 3);
	jb_varint(&ev, JFR_FT_NATIVE), jb_string(&ev, "Native");
	jb_varint(&ev, JFR_FT_INLINED), jb_string(&ev, "Inlined");
	jb_varint(&ev, JFR_FT_JIT), jb_string(&ev, "JIT compiled");

	jb_varint(&ev, JFR_T_THREAD_STATE);
	jb_varint(&ev, 1);
	jb_varint(&ev, JFR_THREAD_STATE_RUNNABLE), jb_string(&ev, "STATE_RUNNABLE");

	if (p->nthreads) {
		jb_varint(&ev, JFR_T_THREAD);
		jb_varint(&ev, p->nthreads);
		for (size_t i = 0; i < p->nthreads; i++) {
			const struct thread *t = &p->threads[i];
			const char *name = t->name && *t->name ? t->name : NULL;
			char fallback[32];

			if (!name) {
				snprintf(fallback, sizeof(fallback), JFR_NAMELESS_THREAD_FMT,
					 (int)t->tid);
				name = fallback;
			}
			jb_varint(&ev, pl->thread_key[i]);
			jb_string(&ev, name);		/* osName */
			jb_varint(&ev, (uint64_t)t->tid); /* osThreadId */
			jb_string(&ev, name);		/* javaName */
			/* javaThreadId 0: not a Java thread, so `jfr print`
			 * shows the OS name and tid. */
			jb_varint(&ev, 0);
		}
	}

	if (p->nstacks) {
		jb_varint(&ev, JFR_T_STACK_TRACE);
		jb_varint(&ev, p->nstacks);
		for (size_t s = 0; s < p->nstacks; s++) {
			const uint32_t *f = profile_stack_frames(p, (uint32_t)s);
			uint32_t depth = p->stacks[s].depth, n = 0;

			for (uint32_t i = 0; i < depth; i++)
				n += pl->frame_method[f[i]] != 0;
			jb_varint(&ev, s + 1);
			jb_u8(&ev, p->stacks[s].truncated);
			jb_varint(&ev, n);
			/* JFR stacks are leaf first; ours are root first. */
			for (uint32_t i = depth; i-- > 0;) {
				const struct frame *fr = &p->frames[f[i]];

				if (!pl->frame_method[f[i]])
					continue;
				jb_varint(&ev, pl->frame_method[f[i]]);
				/* An unknown line is -1 (as a 32-bit int), which
				 * JFR tools leave out rather than show "line: 0". */
				jb_varint(&ev, fr->line ? fr->line : UINT32_MAX);
				jb_varint(&ev, 0); /* bytecodeIndex */
				jb_varint(&ev, frame_type_key(fr->kind));
			}
		}
	}

	jb_varint(&ev, JFR_T_METHOD);
	jb_varint(&ev, pl->nmethods ? pl->nmethods : 1);
	if (!pl->nmethods) {
		/* A pool must not be empty; a profile without frames gets one
		 * placeholder method nobody refers to. */
		jb_varint(&ev, 1);
		jb_varint(&ev, 0), jb_varint(&ev, 1), jb_varint(&ev, 1);
		jb_varint(&ev, 0), jb_u8(&ev, 0);
	}
	for (size_t i = 0; i < pl->nmethods; i++) {
		jb_varint(&ev, i + 1);
		jb_varint(&ev, pl->methods[i].a); /* type (class) */
		jb_varint(&ev, pl->methods[i].b); /* name */
		jb_varint(&ev, 1);		  /* descriptor: "()V" */
		jb_varint(&ev, 0x100);		  /* modifiers: ACC_NATIVE */
		jb_u8(&ev, 0);			  /* hidden */
	}

	jb_varint(&ev, JFR_T_CLASS);
	jb_varint(&ev, pl->nclasses ? pl->nclasses : 1);
	if (!pl->nclasses) {
		jb_varint(&ev, 1);
		jb_varint(&ev, 0), jb_varint(&ev, 1), jb_varint(&ev, 0);
		jb_varint(&ev, 0), jb_u8(&ev, 0);
	}
	for (size_t i = 0; i < pl->nclasses; i++) {
		jb_varint(&ev, i + 1);
		jb_varint(&ev, 0);		  /* classLoader: none */
		jb_varint(&ev, pl->classes[i].a); /* name */
		jb_varint(&ev, pl->classes[i].b); /* package, 0 = none */
		jb_varint(&ev, 0x1);		  /* modifiers: public */
		jb_u8(&ev, 0);			  /* hidden */
	}

	if (npkg) {
		/* A package's key is its name's symbol key. */
		jb_varint(&ev, JFR_T_PACKAGE);
		jb_varint(&ev, npkg);
		for (size_t i = 0; i < pl->nsyms; i++)
			if (pl->pkg_used[i]) {
				jb_varint(&ev, i + 1);
				jb_varint(&ev, i + 1);
			}
	}

	jb_varint(&ev, JFR_T_SYMBOL);
	jb_varint(&ev, pl->nsyms);
	for (size_t i = 0; i < pl->nsyms; i++) {
		jb_varint(&ev, i + 1);
		jb_string_n(&ev, pl->syms[i].s, pl->syms[i].len);
	}
	jb_event(out, &ev);
	free(ev.p);
}

/* ---- Events. ---- */

/* The events JFR tools know as CPU samples (profile/events.h); the rest
 * are nprof.Sample. A profile naming no event was a cpu one. */
static bool is_execution_sample(const struct profile *p)
{
	const struct event_def *e = p->event ? event_find(p->event) : NULL;

	return !p->event || (e && e->execution_sample);
}

static void write_profile_event(struct jbuf *out, const struct profile *p,
				const struct pools *pl)
{
	struct jbuf ev = { 0 }, vt = { 0 };

	for (unsigned i = 0; i < p->nvalues; i++) {
		const struct value_type *t = &p->value_types[i];

		if (i)
			jb_u8(&vt, ',');
		jb_bytes(&vt, t->type, strlen(t->type));
		jb_u8(&vt, '/');
		jb_bytes(&vt, t->unit, strlen(t->unit));
	}
	jb_u8(&vt, 0);
	jb_varint(&ev, JFR_T_NPROF_PROFILE);
	jb_varint(&ev, 0); /* startTime: the chunk's start */
	jb_string(&ev, p->event);
	jb_varint(&ev, p->interval);
	jb_string(&ev, p->interval_unit);
	jb_string(&ev, vt.err ? NULL : (const char *)vt.p);
	jb_varint(&ev, (uint64_t)(int64_t)p->pid);
	jb_string(&ev, p->command);
	jb_varint(&ev, pl->nrooted);
	if (vt.err && !ev.err)
		ev.err = vt.err;
	jb_event(out, &ev);
	free(ev.p);
	free(vt.p);
}

static void write_execution_sample(struct jbuf *out, uint64_t ticks,
				   uint32_t thread_key, uint32_t stack, bool runnable)
{
	uint8_t body[5 * JFR_VARINT_MAX];
	struct jbuf ev = { body, 0, sizeof(body), 0 };

	/* body[] is large enough for five varints: jb_* never reallocs it. */
	jb_varint(&ev, JFR_T_EXECUTION_SAMPLE);
	jb_varint(&ev, ticks);
	jb_varint(&ev, thread_key);
	jb_varint(&ev, stack + 1);
	/* Only on-CPU samples know the thread was running. */
	jb_varint(&ev, runnable ? JFR_THREAD_STATE_RUNNABLE : 0);
	jb_event(out, &ev);
}

/* Time k of n spread evenly over the recording, as ticks (ns) from its
 * start: the middle of the k-th of n equal slices. */
static uint64_t spread(uint64_t duration, uint64_t k, uint64_t n)
{
	return (uint64_t)((unsigned __int128)duration * (2 * k + 1) / (2 * n));
}

static int write_samples(struct jbuf *out, const struct profile *p,
			 const struct pools *pl)
{
	bool runnable = !p->event || strcmp(p->event, "wall") != 0;
	uint64_t total = 0, k = 0;

	if (!is_execution_sample(p)) {
		uint8_t body[(4 + PROFILE_MAX_VALUES) * JFR_VARINT_MAX + JFR_VARINT_MAX];

		if (p->nsamples > JFR_MAX_EVENTS)
			return -EFBIG;
		for (size_t i = 0; i < p->nsamples; i++) {
			const struct sample *s = &p->samples[i];
			struct jbuf ev = { body, 0, sizeof(body), 0 };

			jb_varint(&ev, JFR_T_NPROF_SAMPLE);
			jb_varint(&ev, spread(p->duration_ns, i, p->nsamples));
			jb_varint(&ev, pl->thread_key[s->thread]);
			jb_varint(&ev, s->stack + 1);
			for (unsigned v = 0; v < PROFILE_MAX_VALUES; v++)
				jb_varint(&ev, v < p->nvalues ? (uint64_t)s->values[v] : 0);
			jb_event(out, &ev);
		}
		return out->err;
	}

	/* The timeline, when the source kept all of it, gives real times;
	 * otherwise every sample gets an evenly spread one. */
	if (p->nevents && !p->events_dropped) {
		for (size_t i = 0; i < p->nevents; i++)
			total += p->events[i].value > 0 ? (uint64_t)p->events[i].value : 0;
		if (total > JFR_MAX_EVENTS)
			return -EFBIG;
		for (size_t i = 0; i < p->nevents; i++) {
			const struct sample_event *e = &p->events[i];
			uint64_t t = e->time_ns > p->start_ns ? e->time_ns - p->start_ns : 0;

			for (int64_t n = 0; n < e->value; n++)
				write_execution_sample(out, t, pl->thread_key[e->thread],
						       e->stack, runnable);
		}
		return out->err;
	}
	for (size_t i = 0; i < p->nsamples; i++)
		total += p->samples[i].values[0] > 0 ? (uint64_t)p->samples[i].values[0] : 0;
	if (total > JFR_MAX_EVENTS)
		return -EFBIG;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct sample *s = &p->samples[i];

		for (int64_t n = 0; n < s->values[0]; n++)
			write_execution_sample(out, spread(p->duration_ns, k++, total),
					       pl->thread_key[s->thread], s->stack, runnable);
	}
	return out->err;
}

int output_write_jfr(const struct profile *p, const struct output_options *o,
		     FILE *out)
{
	struct jbuf b = { 0 };
	struct pools pl = { 0 };
	uint64_t duration = p->duration_ns, meta_off, cp_off;
	uint8_t *h;
	int r;

	(void)o;
	/* Without a duration, the timeline's last event bounds the chunk. */
	for (size_t i = 0; !duration && i < p->nevents; i++)
		if (p->events[i].time_ns > p->start_ns &&
		    p->events[i].time_ns - p->start_ns > duration)
			duration = p->events[i].time_ns - p->start_ns;

	r = pools_build(&pl, p);
	if (r < 0)
		goto out;
	r = thread_keys_build(&pl, p);
	if (r < 0)
		goto out;
	if (jb_reserve(&b, JFR_HEADER_SIZE) < 0) {
		r = b.err;
		goto out;
	}
	memset(b.p, 0, JFR_HEADER_SIZE);
	b.len = JFR_HEADER_SIZE;

	meta_off = b.len;
	write_metadata(&b, 0);
	write_profile_event(&b, p, &pl);
	r = write_samples(&b, p, &pl);
	if (r < 0)
		goto out;
	cp_off = b.len;
	write_checkpoint(&b, p, &pl, duration);
	if (b.err) {
		r = b.err;
		goto out;
	}

	h = b.p;
	memcpy(h, JFR_MAGIC, 4);
	h[4] = 0, h[5] = JFR_MAJOR, h[6] = 0, h[7] = JFR_MINOR;
	jfr_put_be64(h + JFR_OFF_CHUNK_SIZE, b.len);
	jfr_put_be64(h + JFR_OFF_CPOOL, cp_off);
	jfr_put_be64(h + JFR_OFF_METADATA, meta_off);
	jfr_put_be64(h + JFR_OFF_START_NANOS, p->start_ns);
	jfr_put_be64(h + JFR_OFF_DURATION, duration);
	jfr_put_be64(h + JFR_OFF_START_TICKS, 0);
	/* Ticks are nanoseconds since the chunk's start. */
	jfr_put_be64(h + JFR_OFF_TICKS_PER_SEC, 1000000000ull);
	h[JFR_OFF_FILE_STATE] = 0;
	h[JFR_OFF_FLAGS] = JFR_FLAG_COMPRESSED_INTS | JFR_FLAG_FINAL_CHUNK;

	if (fwrite(b.p, 1, b.len, out) != b.len)
		r = -EIO;
out:
	pools_release(&pl);
	free(b.p);
	return r;
}
