/* jfr_read: JFR recordings back into the profile model.
 *
 * Reads what nprof writes and what the JDK and async-profiler write, as far
 * as execution samples go. Each chunk is read on its own: its metadata
 * gives every type's fields, which is all a reader needs to walk (or skip)
 * any value; the constant pools it keeps are the few that samples refer to
 * (threads, stack traces, methods, classes, packages, symbols, strings,
 * frame types). Everything else is skipped by its declared layout.
 *
 * The input is untrusted: every read is bounds-checked, counts are checked
 * against the bytes left, nesting is limited, and a step budget
 * proportional to the input size stops layouts that would make a reader
 * spin without consuming bytes (structs of empty structs). */
#include "output/jfr.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "output/jfr_format.h"

#define MAX_CHUNKS 4096
#define MAX_CHECKPOINTS 4096
#define MAX_META_STRINGS (1u << 20)
#define MAX_ELEMENT_DEPTH 32
#define MAX_VALUE_DEPTH 16
#define MAX_TYPES (1u << 16)
#define MAX_FIELDS 1024
#define MAX_STRING (1u << 20) /* bytes of one decoded string */

/* Constant pools kept, by the type's name. */
enum pool_kind {
	P_STRING,
	P_SYMBOL,
	P_CLASS,
	P_PACKAGE,
	P_METHOD,
	P_FRAME_TYPE,
	P_THREAD,
	P_STACK,
	P_COUNT,
	P_NONE = -1,
};

static const char *const pool_type_names[P_COUNT] = {
	"java.lang.String", "jdk.types.Symbol",	  "java.lang.Class",
	"jdk.types.Package", "jdk.types.Method",  "jdk.types.FrameType",
	"java.lang.Thread",  "jdk.types.StackTrace",
};

/* The fields each kept pool's entries are read for, in val order. */
#define MAX_WANT 4
static const char *const pool_wants[P_COUNT][MAX_WANT] = {
	[P_SYMBOL] = { "string" },
	[P_CLASS] = { "name", "package" },
	[P_PACKAGE] = { "name" },
	[P_METHOD] = { "type", "name" },
	[P_FRAME_TYPE] = { "description" },
	[P_THREAD] = { "osName", "osThreadId", "javaName", "javaThreadId" },
	[P_STACK] = { "truncated" },
};

enum kind { K_STRUCT, K_BOOL, K_BYTE, K_CHAR, K_SHORT, K_INT, K_LONG,
	    K_FLOAT, K_DOUBLE, K_STRING };

struct jfield {
	const char *name; /* in the metadata string table */
	uint64_t type_id;
	struct jtype *type;
	bool cpool, array;
};

struct jtype {
	uint64_t id;
	const char *name;
	enum kind kind;
	int pool; /* enum pool_kind, or P_NONE */
	struct jfield *fields;
	uint32_t nfields, fields_cap;
};

/* A value read for a wanted field: a number, a pool key (ref says which
 * pool), or an inline string. */
struct val {
	uint64_t u;
	char *s;
	int ref; /* enum pool_kind when u is a key into that pool */
};

struct jframe {
	uint64_t method;
	int64_t line;
	uint64_t type;
};

struct pentry {
	uint64_t key;
	struct val v[MAX_WANT];
	struct jframe *frames; /* stack traces only */
	uint32_t nframes;
};

struct pool {
	struct pentry *e;
	size_t n, cap;
};

struct rd {
	const uint8_t *p, *end;
};

/* One recorded sample, kept until the value types are known. */
struct rec {
	uint64_t time_ns;
	uint32_t stack, thread;
	int64_t values[PROFILE_MAX_VALUES];
	bool nprof; /* an nprof.Sample rather than an execution sample */
};

struct reader {
	struct profile *p;
	struct diag *d;
	uint64_t steps, max_steps;
	/* the chunk being read */
	const uint8_t *chunk, *chunk_end;
	uint64_t start_nanos, start_ticks, ticks_per_sec;
	char **strs; /* metadata string table */
	uint32_t nstrs;
	struct jtype *types; /* sorted by id */
	size_t ntypes, types_cap;
	struct pool pools[P_COUNT];
	uint32_t *stack_ids; /* P_STACK entry -> profile stack id + 1 */
	/* P_STACK entry -> the root frame id + 1 the stack in stack_ids was
	 * given (thread roots), 0 for none */
	uint32_t *stack_roots;
	/* the whole file */
	struct rec *recs;
	size_t nrecs, recs_cap;
	bool have_info;
	/* nprof.Profile's threadRoots: the threads with pool keys 1..this
	 * have their pseudo-frame (-t) put back as their stacks' root */
	uint64_t info_thread_roots;
	char *info_event, *info_unit, *info_types, *info_command;
	uint64_t info_interval;
	int64_t info_pid;
	uint64_t first_ns, last_ns;
};

static int bad(struct reader *x, const char *what)
{
	return diag_set(x->d, -EINVAL, "jfr: %s", what);
}

static int step(struct reader *x)
{
	if (++x->steps > x->max_steps)
		return diag_set(x->d, -EFBIG, "jfr: layout too costly to walk for its size");
	return 0;
}

/* ---- Primitive reads. Each returns 0 or -EINVAL at the end of input. ---- */

static int rd_varint(struct reader *x, struct rd *r, uint64_t *ret)
{
	if (jfr_varint_get(&r->p, r->end, ret) < 0)
		return bad(x, "truncated integer");
	return 0;
}

static int rd_bytes(struct reader *x, struct rd *r, size_t n, const uint8_t **ret)
{
	if ((size_t)(r->end - r->p) < n)
		return bad(x, "truncated value");
	*ret = r->p;
	r->p += n;
	return 0;
}

/* A count of things each taking at least one byte: more than the bytes
 * left cannot be right, and checking it keeps allocations bounded. */
static int rd_count(struct reader *x, struct rd *r, uint64_t *ret)
{
	int e = rd_varint(x, r, ret);

	if (e < 0)
		return e;
	if (*ret > (uint64_t)(r->end - r->p))
		return bad(x, "count larger than the data left");
	return 0;
}

static void put_utf8(char *out, size_t *n, uint32_t c)
{
	if (c < 0x80) {
		out[(*n)++] = (char)c;
	} else if (c < 0x800) {
		out[(*n)++] = (char)(0xc0 | c >> 6);
		out[(*n)++] = (char)(0x80 | (c & 0x3f));
	} else {
		out[(*n)++] = (char)(0xe0 | c >> 12);
		out[(*n)++] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[(*n)++] = (char)(0x80 | (c & 0x3f));
	}
}

/* Reads a string value. With v NULL it is skipped; otherwise v->s gets a
 * malloc'ed UTF-8 copy, or v->ref/u a String pool key, or nothing (null). */
static int rd_string(struct reader *x, struct rd *r, struct val *v)
{
	const uint8_t *b = NULL;
	uint64_t n, key;
	uint8_t enc;
	char *s;
	size_t len = 0;
	int e;

	if ((e = rd_bytes(x, r, 1, &b)) < 0)
		return e;
	enc = *b;
	switch (enc) {
	case JFR_STR_NULL:
		return 0;
	case JFR_STR_EMPTY:
		if (v && !(v->s = strdup("")))
			return -ENOMEM;
		return 0;
	case JFR_STR_POOL:
		if ((e = rd_varint(x, r, &key)) < 0)
			return e;
		if (v) {
			v->u = key;
			v->ref = P_STRING;
		}
		return 0;
	case JFR_STR_UTF8:
	case JFR_STR_LATIN1:
	case JFR_STR_UTF16:
		break;
	default:
		return bad(x, "unknown string encoding");
	}
	if ((e = rd_count(x, r, &n)) < 0)
		return e;
	if (n > MAX_STRING)
		return diag_set(x->d, -EFBIG, "jfr: string longer than %u bytes", MAX_STRING);
	if (enc != JFR_STR_UTF16) {
		if ((e = rd_bytes(x, r, n, &b)) < 0)
			return e;
		if (!v)
			return 0;
		/* Latin-1 takes at most two UTF-8 bytes a character. */
		if (!(s = malloc(2 * n + 1)))
			return -ENOMEM;
		for (uint64_t i = 0; i < n; i++) {
			if (enc == JFR_STR_UTF8)
				s[len++] = b[i] ? (char)b[i] : '?';
			else
				put_utf8(s, &len, b[i] ? b[i] : '?');
		}
	} else {
		/* UTF-16 units, one varint each; surrogates are kept as they
		 * come (CESU-style): names are for people, not for parsing. */
		s = NULL;
		if (v && !(s = malloc(3 * n + 1)))
			return -ENOMEM;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t c;

			if ((e = rd_varint(x, r, &c)) < 0) {
				free(s);
				return e;
			}
			if (s)
				put_utf8(s, &len, c && c <= 0xffff ? (uint32_t)c : '?');
		}
		if (!v) {
			free(s);
			return 0;
		}
	}
	s[len] = '\0';
	v->s = s;
	return 0;
}

/* ---- Values, walked by the metadata's layout. ---- */

static int read_field(struct reader *x, struct rd *r, const struct jfield *f,
		      unsigned depth, struct val *v);

static int read_one(struct reader *x, struct rd *r, const struct jtype *t,
		    bool cpool, unsigned depth, struct val *v)
{
	const uint8_t *b = NULL;
	uint64_t u = 0;
	int e;

	if ((e = step(x)) < 0)
		return e;
	if (cpool) {
		if ((e = rd_varint(x, r, &u)) < 0)
			return e;
		if (v) {
			v->u = u;
			v->ref = t->pool;
		}
		return 0;
	}
	switch (t->kind) {
	case K_BOOL:
	case K_BYTE:
		if ((e = rd_bytes(x, r, 1, &b)) < 0)
			return e;
		u = *b;
		break;
	case K_CHAR:
	case K_SHORT:
	case K_INT:
	case K_LONG:
		if ((e = rd_varint(x, r, &u)) < 0)
			return e;
		break;
	case K_FLOAT:
		return rd_bytes(x, r, 4, &b);
	case K_DOUBLE:
		return rd_bytes(x, r, 8, &b);
	case K_STRING:
		return rd_string(x, r, v);
	case K_STRUCT:
		if (depth >= MAX_VALUE_DEPTH)
			return bad(x, "values nested too deeply");
		for (uint32_t i = 0; i < t->nfields; i++)
			if ((e = read_field(x, r, &t->fields[i], depth + 1, NULL)) < 0)
				return e;
		return 0;
	}
	if (v)
		v->u = u;
	return 0;
}

static int read_field(struct reader *x, struct rd *r, const struct jfield *f,
		      unsigned depth, struct val *v)
{
	uint64_t n;
	int e;

	if (!f->array)
		return read_one(x, r, f->type, f->cpool, depth, v);
	if ((e = rd_count(x, r, &n)) < 0)
		return e;
	for (uint64_t i = 0; i < n; i++)
		if ((e = read_one(x, r, f->type, f->cpool, depth, NULL)) < 0)
			return e;
	return 0;
}

static void val_release(struct val *v, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		free(v[i].s);
		v[i].s = NULL;
	}
}

static int read_frames(struct reader *x, struct rd *r, const struct jfield *f,
		       struct pentry *pe);

/* Reads one struct value of type t, keeping the fields named in want
 * (vals[i] for want[i]); a stack trace's frames go to pe. */
static int read_struct(struct reader *x, struct rd *r, const struct jtype *t,
		       const char *const *want, struct val *vals,
		       struct pentry *pe)
{
	int e;

	/* A pool of strings (or of another primitive) has the value itself. */
	if (t->kind != K_STRUCT)
		return read_one(x, r, t, false, 0, &vals[0]);
	for (uint32_t i = 0; i < t->nfields; i++) {
		const struct jfield *f = &t->fields[i];
		struct val *v = NULL;

		for (unsigned w = 0; w < MAX_WANT && want[w]; w++)
			if (!strcmp(f->name, want[w])) {
				v = &vals[w];
				/* A field name twice: keep the last. */
				val_release(v, 1);
				*v = (struct val){ .ref = P_NONE };
			}
		if (pe && f->array && !f->cpool && f->type->kind == K_STRUCT &&
		    !strcmp(f->name, "frames"))
			e = read_frames(x, r, f, pe);
		else
			e = read_field(x, r, f, 1, v);
		if (e < 0)
			return e;
	}
	return 0;
}

static int read_frames(struct reader *x, struct rd *r, const struct jfield *f,
		       struct pentry *pe)
{
	static const char *const want[MAX_WANT] = { "method", "lineNumber", "type" };
	uint64_t n;
	int e;

	if ((e = rd_count(x, r, &n)) < 0)
		return e;
	if (n > JFR_MAX_STACK_DEPTH)
		return diag_set(x->d, -EFBIG, "jfr: stack of %llu frames (limit %u)",
				(unsigned long long)n, JFR_MAX_STACK_DEPTH);
	if (pe->frames)
		return bad(x, "stack trace with two frame arrays");
	if (!(pe->frames = calloc(n ? n : 1, sizeof(*pe->frames))))
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		struct val v[MAX_WANT];

		for (unsigned w = 0; w < MAX_WANT; w++)
			v[w] = (struct val){ .ref = P_NONE };
		if ((e = step(x)) < 0)
			return e;
		e = read_struct(x, r, f->type, want, v, NULL);
		pe->frames[i] = (struct jframe){ v[0].u, (int32_t)(uint32_t)v[1].u, v[2].u };
		pe->nframes = (uint32_t)i + 1;
		val_release(v, MAX_WANT);
		if (e < 0)
			return e;
	}
	return 0;
}

/* ---- Pools. ---- */

static int pentry_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct pentry *)a)->key, y = ((const struct pentry *)b)->key;

	return x < y ? -1 : x > y;
}

static const struct pentry *pool_find(const struct reader *x, int pool, uint64_t key)
{
	const struct pool *pl;
	size_t lo = 0, hi;

	if (pool < 0 || pool >= P_COUNT)
		return NULL;
	pl = &x->pools[pool];
	hi = pl->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pl->e[mid].key < key)
			lo = mid + 1;
		else if (pl->e[mid].key > key)
			hi = mid;
		else
			return &pl->e[mid];
	}
	return NULL;
}

/* The text a value stands for, following pool keys (a symbol's string, a
 * pooled string) a few levels deep; NULL when there is none. */
static const char *val_str(const struct reader *x, const struct val *v, unsigned depth)
{
	const struct pentry *e;

	if (v->s)
		return v->s;
	if (depth > 4 || (v->ref != P_STRING && v->ref != P_SYMBOL))
		return NULL;
	e = pool_find(x, v->ref, v->u);
	return e ? val_str(x, &e->v[0], depth + 1) : NULL;
}

static void pools_release(struct reader *x)
{
	for (int k = 0; k < P_COUNT; k++) {
		struct pool *pl = &x->pools[k];

		for (size_t i = 0; i < pl->n; i++) {
			val_release(pl->e[i].v, MAX_WANT);
			free(pl->e[i].frames);
		}
		free(pl->e);
		memset(pl, 0, sizeof(*pl));
	}
	free(x->stack_ids);
	x->stack_ids = NULL;
	free(x->stack_roots);
	x->stack_roots = NULL;
}

static const struct jtype *type_find(const struct reader *x, uint64_t id)
{
	size_t lo = 0, hi = x->ntypes;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->types[mid].id < id)
			lo = mid + 1;
		else if (x->types[mid].id > id)
			hi = mid;
		else
			return &x->types[mid];
	}
	return NULL;
}

static int read_pool(struct reader *x, struct rd *r)
{
	const struct jtype *t;
	uint64_t id, n;
	int e;

	if ((e = rd_varint(x, r, &id)) < 0)
		return e;
	if (!(t = type_find(x, id)))
		return bad(x, "constant pool of a type the metadata does not declare");
	if ((e = rd_count(x, r, &n)) < 0)
		return e;
	for (uint64_t i = 0; i < n; i++) {
		struct pool *pl;
		struct pentry *pe;
		uint64_t key;

		if ((e = rd_varint(x, r, &key)) < 0)
			return e;
		if (t->pool == P_NONE) {
			if ((e = read_one(x, r, t, false, 0, NULL)) < 0)
				return e;
			continue;
		}
		pl = &x->pools[t->pool];
		if (array_reserve(&pl->e, &pl->cap, pl->n + 1, sizeof(*pl->e)) < 0)
			return -ENOMEM;
		pe = &pl->e[pl->n++];
		*pe = (struct pentry){ .key = key };
		for (unsigned w = 0; w < MAX_WANT; w++)
			pe->v[w].ref = P_NONE;
		e = read_struct(x, r, t, pool_wants[t->pool], pe->v,
				t->pool == P_STACK ? pe : NULL);
		if (e < 0)
			return e;
	}
	return 0;
}

static int read_checkpoints(struct reader *x, uint64_t cp_off)
{
	size_t len = (size_t)(x->chunk_end - x->chunk);
	uint64_t pos = cp_off;
	int e;

	for (unsigned n = 0;; n++) {
		struct rd r;
		uint64_t size, type, skip, delta, npools;
		const uint8_t *b;

		if (n == MAX_CHECKPOINTS)
			return diag_set(x->d, -EFBIG, "jfr: more than %u checkpoints in a chunk",
					MAX_CHECKPOINTS);
		if (pos < JFR_HEADER_SIZE || pos >= len)
			return bad(x, "constant pool offset outside the chunk");
		r = (struct rd){ x->chunk + pos, x->chunk_end };
		if ((e = rd_varint(x, &r, &size)) < 0)
			return e;
		if (size > len - pos)
			return bad(x, "checkpoint larger than its chunk");
		r.end = x->chunk + pos + size;
		if ((e = rd_varint(x, &r, &type)) < 0)
			return e;
		if (type != JFR_EVENT_CHECKPOINT)
			return bad(x, "constant pool offset does not point to a checkpoint");
		if ((e = rd_varint(x, &r, &skip)) < 0 || /* start time */
		    (e = rd_varint(x, &r, &skip)) < 0 || /* duration */
		    (e = rd_varint(x, &r, &delta)) < 0 ||
		    (e = rd_bytes(x, &r, 1, &b)) < 0 || /* checkpoint type */
		    (e = rd_count(x, &r, &npools)) < 0)
			return e;
		for (uint64_t i = 0; i < npools; i++)
			if ((e = read_pool(x, &r)) < 0)
				return e;
		if (!delta)
			break;
		pos += delta; /* usually negative: back to the previous one */
	}
	for (int k = 0; k < P_COUNT; k++)
		if (x->pools[k].n)
			qsort(x->pools[k].e, x->pools[k].n, sizeof(struct pentry), pentry_cmp);
	if (x->pools[P_STACK].n &&
	    (!(x->stack_ids = calloc(x->pools[P_STACK].n, sizeof(*x->stack_ids))) ||
	     !(x->stack_roots = calloc(x->pools[P_STACK].n, sizeof(*x->stack_roots)))))
		return -ENOMEM;
	return 0;
}

/* ---- Metadata. ---- */

enum elem_ctx { E_OTHER, E_ROOT, E_METADATA, E_CLASS };

static int meta_str(struct reader *x, struct rd *r, const char **ret)
{
	uint64_t i;
	int e;

	if ((e = rd_varint(x, r, &i)) < 0)
		return e;
	if (i >= x->nstrs)
		return bad(x, "metadata string index out of range");
	*ret = x->strs[i];
	return 0;
}

static uint64_t parse_u64(const char *s, bool *ok)
{
	uint64_t v = 0;

	*ok = *s != '\0';
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10) {
			*ok = false;
			return 0;
		}
		v = v * 10 + (uint64_t)(*s - '0');
	}
	return v;
}

static int read_element(struct reader *x, struct rd *r, enum elem_ctx parent,
			unsigned depth)
{
	const char *name, *k, *v, *a_name = NULL, *a_id = NULL, *a_class = NULL;
	bool a_cpool = false, a_dim = false, ok;
	enum elem_ctx me = E_OTHER;
	uint64_t nattr, nchild;
	int e;

	if (depth > MAX_ELEMENT_DEPTH)
		return bad(x, "metadata nested too deeply");
	if ((e = step(x)) < 0 || (e = meta_str(x, r, &name)) < 0 ||
	    (e = rd_count(x, r, &nattr)) < 0)
		return e;
	for (uint64_t i = 0; i < nattr; i++) {
		if ((e = meta_str(x, r, &k)) < 0 || (e = meta_str(x, r, &v)) < 0)
			return e;
		if (!strcmp(k, "name"))
			a_name = v;
		else if (!strcmp(k, "id"))
			a_id = v;
		else if (!strcmp(k, "class"))
			a_class = v;
		else if (!strcmp(k, "constantPool"))
			a_cpool = !strcmp(v, "true");
		else if (!strcmp(k, "dimension"))
			a_dim = strcmp(v, "0") != 0;
	}
	if (parent == E_OTHER && depth == 0 && !strcmp(name, "root"))
		me = E_ROOT;
	else if (parent == E_ROOT && !strcmp(name, "metadata"))
		me = E_METADATA;
	else if (parent == E_METADATA && !strcmp(name, "class")) {
		struct jtype *t;

		if (!a_name || !a_id)
			return bad(x, "metadata class without a name or id");
		if (x->ntypes == MAX_TYPES)
			return diag_set(x->d, -EFBIG, "jfr: more than %u types", MAX_TYPES);
		if (array_reserve(&x->types, &x->types_cap, x->ntypes + 1, sizeof(*x->types)) < 0)
			return -ENOMEM;
		t = &x->types[x->ntypes++];
		*t = (struct jtype){ .name = a_name, .pool = P_NONE };
		t->id = parse_u64(a_id, &ok);
		if (!ok)
			return bad(x, "metadata class id is not a number");
		me = E_CLASS;
	} else if (parent == E_CLASS && !strcmp(name, "field")) {
		struct jtype *t = &x->types[x->ntypes - 1];
		struct jfield *f;

		if (!a_name || !a_class)
			return bad(x, "metadata field without a name or class");
		if (t->nfields == MAX_FIELDS)
			return diag_set(x->d, -EFBIG, "jfr: type with more than %u fields",
					MAX_FIELDS);
		if (t->nfields == t->fields_cap) {
			size_t cap = t->fields_cap;

			if (array_reserve(&t->fields, &cap, t->nfields + 1, sizeof(*t->fields)) < 0)
				return -ENOMEM;
			t->fields_cap = (uint32_t)cap;
		}
		f = &t->fields[t->nfields++];
		*f = (struct jfield){ .name = a_name, .cpool = a_cpool, .array = a_dim };
		f->type_id = parse_u64(a_class, &ok);
		if (!ok)
			return bad(x, "metadata field class is not a number");
	}
	if ((e = rd_count(x, r, &nchild)) < 0)
		return e;
	for (uint64_t i = 0; i < nchild; i++)
		if ((e = read_element(x, r, me, depth + 1)) < 0)
			return e;
	return 0;
}

static int jtype_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct jtype *)a)->id, y = ((const struct jtype *)b)->id;

	return x < y ? -1 : x > y;
}

static int read_metadata(struct reader *x, uint64_t off)
{
	static const struct { const char *name; enum kind kind; } prims[] = {
		{ "boolean", K_BOOL }, { "byte", K_BYTE }, { "char", K_CHAR },
		{ "short", K_SHORT }, { "int", K_INT }, { "long", K_LONG },
		{ "float", K_FLOAT }, { "double", K_DOUBLE },
		{ "java.lang.String", K_STRING },
	};
	size_t len = (size_t)(x->chunk_end - x->chunk);
	uint64_t size, v, nstrs;
	struct rd r;
	int e;

	if (off < JFR_HEADER_SIZE || off >= len)
		return bad(x, "metadata offset outside the chunk");
	r = (struct rd){ x->chunk + off, x->chunk_end };
	if ((e = rd_varint(x, &r, &size)) < 0)
		return e;
	if (size > len - off)
		return bad(x, "metadata larger than its chunk");
	r.end = x->chunk + off + size;
	if ((e = rd_varint(x, &r, &v)) < 0)
		return e;
	if (v != JFR_EVENT_METADATA)
		return bad(x, "metadata offset does not point to the metadata event");
	if ((e = rd_varint(x, &r, &v)) < 0 || (e = rd_varint(x, &r, &v)) < 0 ||
	    (e = rd_varint(x, &r, &v)) < 0 || (e = rd_count(x, &r, &nstrs)) < 0)
		return e;
	if (nstrs > MAX_META_STRINGS)
		return diag_set(x->d, -EFBIG, "jfr: metadata with %llu strings",
				(unsigned long long)nstrs);
	if (!(x->strs = calloc(nstrs ? nstrs : 1, sizeof(*x->strs))))
		return -ENOMEM;
	for (uint64_t i = 0; i < nstrs; i++) {
		struct val sv = { .ref = P_NONE };

		if ((e = rd_string(x, &r, &sv)) < 0)
			return e;
		if (sv.ref != P_NONE)
			return bad(x, "metadata string refers to a constant pool");
		x->strs[x->nstrs++] = sv.s;
		if (!sv.s && !(x->strs[x->nstrs - 1] = strdup("")))
			return -ENOMEM;
	}
	if ((e = read_element(x, &r, E_OTHER, 0)) < 0)
		return e;

	if (x->ntypes)
		qsort(x->types, x->ntypes, sizeof(*x->types), jtype_cmp);
	for (size_t i = 0; i + 1 < x->ntypes; i++)
		if (x->types[i].id == x->types[i + 1].id)
			return bad(x, "metadata declares a type id twice");
	for (size_t i = 0; i < x->ntypes; i++) {
		struct jtype *t = &x->types[i];

		t->kind = K_STRUCT;
		for (size_t k = 0; k < sizeof(prims) / sizeof(prims[0]); k++)
			if (!strcmp(t->name, prims[k].name))
				t->kind = prims[k].kind;
		for (int k = 0; k < P_COUNT; k++)
			if (!strcmp(t->name, pool_type_names[k]))
				t->pool = k;
		for (uint32_t f = 0; f < t->nfields; f++) {
			/* types[] no longer moves: pointers into it hold. */
			t->fields[f].type = (struct jtype *)type_find(x, t->fields[f].type_id);
			if (!t->fields[f].type)
				return bad(x, "metadata field of an undeclared type");
		}
	}
	return 0;
}

static void chunk_release(struct reader *x)
{
	pools_release(x);
	for (size_t i = 0; i < x->ntypes; i++)
		free(x->types[i].fields);
	free(x->types);
	x->types = NULL;
	x->ntypes = x->types_cap = 0;
	for (uint32_t i = 0; i < x->nstrs; i++)
		free(x->strs[i]);
	free(x->strs);
	x->strs = NULL;
	x->nstrs = 0;
}

/* ---- From JFR's Java shapes back to native frames. ---- */

static bool starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static int intern_frame(struct reader *x, const struct jframe *jf, uint32_t *ret_id)
{
	const struct pentry *m = pool_find(x, P_METHOD, jf->method), *c = NULL, *pk = NULL;
	const struct pentry *ft = pool_find(x, P_FRAME_TYPE, jf->type);
	const char *name = m ? val_str(x, &m->v[1], 0) : NULL;
	const char *cls = NULL, *pkg = NULL, *type = ft ? val_str(x, &ft->v[0], 0) : NULL;
	struct frame f = { .kind = FRAME_USER };
	char *buf = NULL;
	bool java;
	int e;

	if (m && m->v[0].ref == P_CLASS)
		c = pool_find(x, P_CLASS, m->v[0].u);
	if (c) {
		cls = val_str(x, &c->v[0], 0);
		if (c->v[1].ref == P_PACKAGE)
			pk = pool_find(x, P_PACKAGE, c->v[1].u);
		pkg = pk ? val_str(x, &pk->v[0], 0) : NULL;
	}
	if (!type)
		type = "";
	if (cls && !*cls)
		cls = NULL;
	if (pkg && !*pkg)
		pkg = NULL;
	f.name = name && *name ? name : "[unknown]";
	f.line = jf->line > 0 && jf->line <= UINT32_MAX ? (uint32_t)jf->line : 0;

	/* Java code (the JVM's own recordings, async-profiler's): Java
	 * frame types, and a class that is not a library. Never in nprof's
	 * own files (their nprof.Profile event comes first). */
	java = !x->have_info && cls && (!pkg || pkg[0] != '/') && !strstr(cls, ".so") &&
	       cls[0] != '[' &&
	       (!strcmp(type, "Interpreted") || !strcmp(type, "JIT compiled") ||
		!strcmp(type, "C1 compiled") || !strcmp(type, "Inlined") ||
		/* a Java native method: "java/lang/ClassLoader" */
		strchr(cls, '/'));
	if (java) {
		if (asprintf(&buf, "%s.%s", cls, f.name) < 0)
			return -ENOMEM;
		for (char *s = buf; *s; s++)
			if (*s == '/')
				*s = '.';
		f.name = buf;
		f.kind = !strcmp(type, "Inlined") ? FRAME_INLINED : FRAME_JIT;
	} else if ((cls && !strcmp(cls, JFR_CLASS_KERNEL)) || !strcmp(type, "Kernel")) {
		f.kind = FRAME_KERNEL;
	} else {
		if (cls && strcmp(cls, JFR_CLASS_UNKNOWN) != 0) {
			if (pkg) {
				if (asprintf(&buf, "%s%s%s", pkg,
					     pkg[strlen(pkg) - 1] == '/' ? "" : "/", cls) < 0)
					return -ENOMEM;
				f.module = buf;
			} else {
				f.module = cls;
			}
		}
		if (!strcmp(type, "Inlined"))
			f.kind = FRAME_INLINED;
		else if (!strcmp(type, "JIT compiled"))
			f.kind = FRAME_JIT;
		else if (!f.module)
			f.kind = FRAME_UNKNOWN;
		else if (cls && starts_with(f.name, cls) && starts_with(f.name + strlen(cls), "+0x"))
			f.kind = FRAME_UNKNOWN;
		else if (strstr(cls, ".so"))
			f.kind = FRAME_LIBRARY;
	}
	e = profile_intern_frame(x->p, &f, ret_id);
	free(buf);
	return e;
}

/* No root frame to put before a stack trace's frames. */
#define NO_ROOT UINT32_MAX

/* The profile stack of stack trace key, with the frame root (a thread
 * pseudo-frame, or NO_ROOT) put before the trace's outermost frame. */
static int intern_stack(struct reader *x, uint64_t key, uint32_t root, uint32_t *ret_id)
{
	const struct pentry *pe = pool_find(x, P_STACK, key);
	uint32_t lead = root != NO_ROOT, tag = lead ? root + 1 : 0;
	uint32_t *ids = NULL, id, n;
	size_t idx;
	int e = 0;

	if (pe && !pe->nframes && lead) {
		/* A -t stack that was only its thread's pseudo-frame. */
		return profile_intern_stack(x->p, &root, 1, pe->v[0].u != 0, ret_id);
	}
	if (!pe || !pe->nframes) {
		/* A sample without a stack (key 0, a missing entry, no frames)
		 * still counts: it gets a one-frame stack saying so, which
		 * every output can show (and the model needs no empty stack). */
		struct frame none = { .name = "[no stack]", .kind = FRAME_UNKNOWN };
		uint32_t f[2] = { root };

		if ((e = profile_intern_frame(x->p, &none, &f[lead])) < 0)
			return e;
		return profile_intern_stack(x->p, f, 1 + lead, false, ret_id);
	}
	idx = (size_t)(pe - x->pools[P_STACK].e);
	if (x->stack_ids[idx] && x->stack_roots[idx] == tag) {
		*ret_id = x->stack_ids[idx] - 1;
		return 0;
	}
	n = pe->nframes + lead;
	if (n > JFR_MAX_STACK_DEPTH)
		return diag_set(x->d, -EFBIG,
				"jfr: stack of %u frames and its thread frame (limit %u)",
				pe->nframes, JFR_MAX_STACK_DEPTH);
	if (!(ids = calloc(n, sizeof(*ids))))
		return -ENOMEM;
	if (lead && x->stack_ids[idx] && x->stack_roots[idx]) {
		/* The trace seen under another thread: its frames are
		 * interned already, only the root differs. */
		memcpy(ids + 1, profile_stack_frames(x->p, x->stack_ids[idx] - 1) + 1,
		       pe->nframes * sizeof(*ids));
	} else {
		/* JFR is leaf first; the model is root first. */
		for (uint32_t i = 0; i < pe->nframes; i++)
			if ((e = intern_frame(x, &pe->frames[i], &ids[n - 1 - i])) < 0)
				goto out;
	}
	if (lead)
		ids[0] = root;
	e = profile_intern_stack(x->p, ids, n, pe->v[0].u != 0, &id);
	if (e < 0)
		goto out;
	x->stack_ids[idx] = id + 1;
	x->stack_roots[idx] = tag;
	*ret_id = id;
out:
	free(ids);
	return e;
}

/* The profile thread of thread key and, when nprof.Profile says the
 * thread's stacks were rooted in its pseudo-frame, that frame (else
 * NO_ROOT). */
static int intern_thread(struct reader *x, uint64_t key, uint32_t *ret_id,
			 uint32_t *ret_root)
{
	const struct pentry *pe = pool_find(x, P_THREAD, key);
	const char *name = NULL;
	uint32_t id, root = NO_ROOT;
	int64_t tid = 0;
	struct frame f = { .kind = FRAME_THREAD };
	char *fname = NULL;
	int e;

	if (pe) {
		name = val_str(x, &pe->v[2], 0); /* javaName */
		if (!name || !*name)
			name = val_str(x, &pe->v[0], 0); /* osName */
		tid = (int64_t)pe->v[1].u;
		/* Threads without an OS id (virtual ones) are told apart by
		 * their Java id. */
		if (!tid)
			tid = (int64_t)pe->v[3].u;
	}
	if (tid < 0 || tid > INT32_MAX)
		tid = 0;
	/* nprof names a nameless thread "[tid N]" for JFR tools; it is
	 * still nameless. */
	if (name && name[0] == '[') {
		char own[32];

		snprintf(own, sizeof(own), JFR_NAMELESS_THREAD_FMT, (int)tid);
		if (!strcmp(name, own))
			name = NULL;
	}
	if ((e = profile_intern_thread(x->p, (pid_t)tid, name, &id)) < 0)
		return e;
	/* Named from this entry, not from the profile's thread: that one
	 * keeps the latest name of every entry with the tid. */
	if (pe && key >= 1 && key <= x->info_thread_roots) {
		if (!(fname = jfr_thread_root_name(name, (int)tid)))
			return -ENOMEM;
		f.name = fname;
		e = profile_intern_frame(x->p, &f, &root);
		free(fname);
		if (e < 0)
			return e;
	}
	*ret_id = id;
	*ret_root = root;
	return 0;
}

/* ---- Events. ---- */

static int take_string(const struct reader *x, const struct val *v, char **dst)
{
	const char *s = val_str(x, v, 0);

	free(*dst);
	*dst = NULL;
	if (s && !(*dst = strdup(s)))
		return -ENOMEM;
	return 0;
}

static int read_event(struct reader *x, struct rd *r, const struct jtype *t)
{
	static const char *const want_sample[MAX_WANT] = { "startTime", "sampledThread",
							   "stackTrace", "eventThread" };
	static const char *const want_values[MAX_WANT] = { "value0", "value1",
							   "value2", "value3" };
	static const char *const want_info[MAX_WANT] = { "event", "interval",
							 "intervalUnit", "valueTypes" };
	static const char *const want_info2[MAX_WANT] = { "pid", "command",
							  "threadRoots" };
	bool nprof = !strcmp(t->name, "nprof.Sample");
	struct val v[MAX_WANT], w[MAX_WANT];
	struct rd again = *r;
	struct rec rec = { .nprof = nprof };
	uint32_t root;
	uint64_t ticks;
	int e;

	for (unsigned i = 0; i < MAX_WANT; i++)
		v[i] = w[i] = (struct val){ .ref = P_NONE };
	if (!strcmp(t->name, "nprof.Profile")) {
		/* Two walks, each keeping four fields. */
		if ((e = read_struct(x, r, t, want_info, v, NULL)) < 0 ||
		    (e = read_struct(x, &again, t, want_info2, w, NULL)) < 0)
			goto out;
		if ((e = take_string(x, &v[0], &x->info_event)) < 0 ||
		    (e = take_string(x, &v[2], &x->info_unit)) < 0 ||
		    (e = take_string(x, &v[3], &x->info_types)) < 0 ||
		    (e = take_string(x, &w[1], &x->info_command)) < 0)
			goto out;
		x->info_interval = v[1].u;
		x->info_pid = (int64_t)w[0].u;
		/* Files from before the field: stacks without thread roots. */
		x->info_thread_roots = w[2].u;
		x->have_info = true;
		goto out;
	}
	if ((e = read_struct(x, r, t, want_sample, v, NULL)) < 0)
		goto out;
	if (nprof && (e = read_struct(x, &again, t, want_values, w, NULL)) < 0)
		goto out;

	ticks = v[0].u > x->start_ticks ? v[0].u - x->start_ticks : 0;
	rec.time_ns = x->start_nanos +
		      (uint64_t)((unsigned __int128)ticks * 1000000000u / x->ticks_per_sec);
	if ((e = intern_thread(x, v[1].ref == P_THREAD ? v[1].u
				   : v[3].ref == P_THREAD ? v[3].u : 0, &rec.thread,
			       &root)) < 0 ||
	    (e = intern_stack(x, v[2].ref == P_STACK ? v[2].u : 0, root, &rec.stack)) < 0)
		goto out;
	if (nprof)
		for (unsigned i = 0; i < PROFILE_MAX_VALUES; i++)
			rec.values[i] = (int64_t)w[i].u;
	else
		rec.values[0] = 1;
	if (x->nrecs == JFR_MAX_EVENTS) {
		e = diag_set(x->d, -EFBIG, "jfr: more than %u samples", JFR_MAX_EVENTS);
		goto out;
	}
	if (array_reserve(&x->recs, &x->recs_cap, x->nrecs + 1, sizeof(*x->recs)) < 0) {
		e = -ENOMEM;
		goto out;
	}
	x->recs[x->nrecs++] = rec;
out:
	val_release(v, MAX_WANT);
	val_release(w, MAX_WANT);
	return e;
}

static bool is_sample_type(const struct jtype *t)
{
	/* Not jdk.NativeMethodSample: those are threads parked in native
	 * code, off CPU, and would inflate a CPU profile. */
	return !strcmp(t->name, "jdk.ExecutionSample") ||
	       !strcmp(t->name, "nprof.Sample") || !strcmp(t->name, "nprof.Profile");
}

static int read_events(struct reader *x)
{
	struct rd r = { x->chunk + JFR_HEADER_SIZE, x->chunk_end };
	int e;

	while (r.p < r.end) {
		const uint8_t *start = r.p;
		const struct jtype *t;
		uint64_t size, type;
		struct rd ev;

		if ((e = step(x)) < 0 || (e = rd_varint(x, &r, &size)) < 0)
			return e;
		if (size == 0 || size > (uint64_t)(r.end - start))
			return bad(x, "event size outside its chunk");
		ev = (struct rd){ r.p, start + size };
		r.p = start + size;
		if ((e = rd_varint(x, &ev, &type)) < 0)
			return e;
		if (type == JFR_EVENT_METADATA || type == JFR_EVENT_CHECKPOINT)
			continue;
		t = type_find(x, type);
		if (!t || !is_sample_type(t))
			continue;
		if ((e = read_event(x, &ev, t)) < 0)
			return e;
	}
	return 0;
}

static int read_chunk(struct reader *x, const uint8_t *c, size_t avail, size_t *ret_size)
{
	uint64_t size, cp_off, meta_off, duration;
	int e;

	if (avail < JFR_HEADER_SIZE || memcmp(c, JFR_MAGIC, 4) != 0)
		return bad(x, "not a JFR file (no FLR chunk header)");
	if (c[4] != 0 || c[5] != JFR_MAJOR)
		return diag_set(x->d, -EINVAL, "jfr: version %u.%u not supported (only 2.x)",
				(unsigned)(c[4] << 8 | c[5]), (unsigned)(c[6] << 8 | c[7]));
	if (c[JFR_OFF_FILE_STATE] != 0)
		return bad(x, "recording still being written (chunk not finished)");
	size = jfr_be64(c + JFR_OFF_CHUNK_SIZE);
	cp_off = jfr_be64(c + JFR_OFF_CPOOL);
	meta_off = jfr_be64(c + JFR_OFF_METADATA);
	if (size < JFR_HEADER_SIZE || size > avail)
		return bad(x, "chunk size outside the file (truncated?)");
	x->chunk = c;
	x->chunk_end = c + size;
	x->start_nanos = jfr_be64(c + JFR_OFF_START_NANOS);
	duration = jfr_be64(c + JFR_OFF_DURATION);
	x->start_ticks = jfr_be64(c + JFR_OFF_START_TICKS);
	x->ticks_per_sec = jfr_be64(c + JFR_OFF_TICKS_PER_SEC);
	if (!x->ticks_per_sec)
		return bad(x, "chunk with zero ticks per second");
	if (x->start_nanos < x->first_ns)
		x->first_ns = x->start_nanos;
	if (x->start_nanos + duration > x->last_ns && x->start_nanos + duration >= x->start_nanos)
		x->last_ns = x->start_nanos + duration;

	if ((e = read_metadata(x, meta_off)) < 0 || (e = read_checkpoints(x, cp_off)) < 0 ||
	    (e = read_events(x)) < 0)
		goto out;
	*ret_size = (size_t)size;
out:
	chunk_release(x);
	return e;
}

/* ---- Into the model. ---- */

/* "samples/count,cpu/nanoseconds" -> value types; 0 types when malformed. */
static unsigned parse_value_types(struct profile *p, const char *s,
				  struct value_type *vt)
{
	unsigned n = 0;

	while (s && *s && n < PROFILE_MAX_VALUES) {
		const char *end = strchr(s, ','), *slash;
		size_t len = end ? (size_t)(end - s) : strlen(s);
		char *one = strndup(s, len);

		if (!one)
			return 0;
		slash = strchr(one, '/');
		if (!slash || slash == one || !slash[1]) {
			free(one);
			return 0;
		}
		one[slash - one] = '\0';
		vt[n].type = profile_intern_string(p, one);
		vt[n].unit = profile_intern_string(p, slash + 1);
		free(one);
		if (!vt[n].type || !vt[n].unit)
			return 0;
		n++;
		s = end ? end + 1 : NULL;
	}
	return s && *s ? 0 : n;
}

static int fill_profile(struct reader *x)
{
	struct profile *p = x->p;
	struct value_type vt[PROFILE_MAX_VALUES];
	const char *event = x->info_event ? x->info_event : "cpu";
	bool nprof_values = x->have_info && strcmp(event, "cpu") && strcmp(event, "itimer") &&
			    strcmp(event, "wall");
	unsigned nv = 0;
	int e;

	p->event = profile_intern_string(p, event);
	p->interval = x->info_interval;
	p->interval_unit = profile_intern_string(p, x->info_unit);
	p->command = profile_intern_string(p, x->info_command);
	p->pid = x->info_pid > 0 && x->info_pid <= INT32_MAX ? (pid_t)x->info_pid : 0;
	if (!p->event || (x->info_unit && !p->interval_unit) ||
	    (x->info_command && !p->command))
		return -ENOMEM;
	if (x->info_types)
		nv = parse_value_types(p, x->info_types, vt);
	if (!nprof_values) {
		/* Execution samples: a count, and time when the period is
		 * known. */
		bool ns = p->interval && p->interval_unit &&
			  !strcmp(p->interval_unit, "nanoseconds");

		nv = 1;
		vt[0] = (struct value_type){ "samples", "count" };
		if (ns) {
			vt[1] = (struct value_type){ strcmp(event, "wall") ? "cpu" : "wall",
						     "nanoseconds" };
			nv = 2;
		}
	} else if (!nv) {
		return bad(x, "nprof.Profile with malformed valueTypes");
	}
	if ((e = profile_set_value_types(p, vt, nv)) < 0)
		return e;
	if (x->nrecs) {
		p->start_ns = x->first_ns;
		p->duration_ns = x->last_ns > x->first_ns ? x->last_ns - x->first_ns : 0;
	} else if (x->last_ns) {
		p->start_ns = x->first_ns;
		p->duration_ns = x->last_ns - x->first_ns;
	}
	p->max_events = x->nrecs ? x->nrecs : 1;
	for (size_t i = 0; i < x->nrecs; i++) {
		struct rec *r = &x->recs[i];

		if (r->nprof != nprof_values)
			continue;
		if (!nprof_values && nv == 2)
			r->values[1] = (int64_t)p->interval;
		if ((e = profile_add_sample(p, r->stack, r->thread, r->values)) < 0 ||
		    (e = profile_add_event(p, r->time_ns, r->stack, r->thread,
					   r->values[0])) < 0)
			return e;
	}
	return 0;
}

int jfr_read(const void *data, size_t len, struct profile **ret_p, struct diag *d)
{
	struct reader x = { .d = d, .first_ns = UINT64_MAX };
	const uint8_t *b = data;
	size_t off = 0, size = 0;
	unsigned nchunks = 0;
	int e;

	x.max_steps = 64 * (uint64_t)len + (1u << 20);
	if (!(x.p = profile_new()))
		return -ENOMEM;
	do {
		if (nchunks++ == MAX_CHUNKS) {
			e = diag_set(d, -EFBIG, "jfr: more than %u chunks", MAX_CHUNKS);
			goto out;
		}
		if ((e = read_chunk(&x, b + off, len - off, &size)) < 0)
			goto out;
		off += size;
	} while (off < len);
	if (x.first_ns == UINT64_MAX)
		x.first_ns = 0;
	if ((e = fill_profile(&x)) < 0)
		goto out;
	*ret_p = x.p;
	x.p = NULL;
out:
	profile_free(x.p);
	free(x.recs);
	free(x.info_event);
	free(x.info_unit);
	free(x.info_types);
	free(x.info_command);
	return e;
}
