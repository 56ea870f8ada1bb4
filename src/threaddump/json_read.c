/* json_read: the reader of thread_dump_write_json's JSON (threaddump.h).
 * The bytes come from another process (the agent's reply to "stacks
 * json"): every read is bounded by end, never by a NUL; anything unknown
 * is skipped whatever its type. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/hex.h"
#include "base/utf8.h"
#include "threaddump/threaddump.h"

struct jcur {
	const char *p, *end;
};

static void j_ws(struct jcur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static bool j_char(struct jcur *c, char ch)
{
	j_ws(c);
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return true;
	}
	return false;
}

/* Four hex digits of a \u escape. */
static int j_hex4(struct jcur *c, uint32_t *ret)
{
	const char *four = c->end - c->p >= 4 ? c->p + 4 : c->end, *stop;
	uint64_t v;

	if (hex_parse(c->p, four, 0, &v, &stop) < 0 || stop != c->p + 4)
		return -EPROTO;
	c->p = stop;
	*ret = (uint32_t)v;
	return 0;
}

/* A string into out as valid UTF-8, cut at cap - 1 bytes between
 * characters: malformed bytes and lone surrogates become U+FFFD, \u0000
 * '?'. So what the writer writes back reads back the same. */
static int j_string(struct jcur *c, char *out, size_t cap)
{
	size_t n = 0;
	bool full = false;

	if (!j_char(c, '"'))
		return -EPROTO;
	while (c->p < c->end && *c->p != '"') {
		unsigned char enc[4];
		uint32_t cp;
		size_t len;

		if (*c->p == '\\') {
			char e;

			if (++c->p >= c->end)
				return -EPROTO;
			e = *c->p++;
			switch (e) {
			case 'n': cp = '\n'; break;
			case 't': cp = '\t'; break;
			case 'r': cp = '\r'; break;
			case 'b': cp = '\b'; break;
			case 'f': cp = '\f'; break;
			case 'u':
				if (j_hex4(c, &cp) < 0)
					return -EPROTO;
				if (cp >= 0xd800 && cp <= 0xdbff && c->end - c->p >= 6 &&
				    c->p[0] == '\\' && c->p[1] == 'u') {
					struct jcur save = *c;
					uint32_t lo;

					c->p += 2;
					if (j_hex4(c, &lo) == 0 && lo >= 0xdc00 && lo <= 0xdfff)
						cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
					else
						*c = save;
				}
				if (!cp)
					cp = '?';
				break;
			default: cp = (unsigned char)e; break; /* " \ / */
			}
		} else {
			unsigned char raw[5] = { 0 };
			size_t avail = (size_t)(c->end - c->p);

			memcpy(raw, c->p, avail < 4 ? avail : 4);
			if (raw[0]) {
				c->p += utf8_next(raw, &cp);
			} else { /* a NUL in the text: C strings cannot hold it */
				cp = '?';
				c->p++;
			}
		}
		len = utf8_put(cp, enc);
		if (full || n + len >= cap) {
			full = true;
			continue;
		}
		memcpy(out + n, enc, len);
		n += len;
	}
	if (!j_char(c, '"'))
		return -EPROTO;
	if (cap)
		out[n] = '\0';
	return 0;
}

static int j_skip(struct jcur *c, int depth)
{
	char tmp[2];

	if (depth > 32)
		return -EPROTO;
	j_ws(c);
	if (c->p >= c->end)
		return -EPROTO;
	if (*c->p == '"')
		return j_string(c, tmp, sizeof(tmp));
	if (*c->p == '{' || *c->p == '[') {
		char close = *c->p == '{' ? '}' : ']';
		bool obj = *c->p == '{';

		c->p++;
		if (j_char(c, close))
			return 0;
		do {
			if (obj && (j_string(c, tmp, sizeof(tmp)) < 0 || !j_char(c, ':')))
				return -EPROTO;
			if (j_skip(c, depth + 1) < 0)
				return -EPROTO;
		} while (j_char(c, ','));
		return j_char(c, close) ? 0 : -EPROTO;
	}
	/* number, true, false, null */
	if (!*c->p || !strchr("-0123456789tfn", *c->p))
		return -EPROTO;
	while (c->p < c->end && !strchr(",]} \t\r\n", *c->p))
		c->p++;
	return 0;
}

/* A non-negative decimal integer (a tid), at most max. */
static int j_uint(struct jcur *c, long max, long *ret)
{
	long v = 0;
	const char *p0;

	j_ws(c);
	p0 = c->p;
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		v = v * 10 + (*c->p++ - '0');
		if (v > max)
			return -EPROTO;
	}
	if (c->p == p0)
		return -EPROTO;
	*ret = v;
	return 0;
}

/* A signed decimal integer within [-max - 1, max]; anything after the
 * digits (a fraction, an exponent) is refused. */
static int j_int64(struct jcur *c, int64_t *ret)
{
	bool neg;
	uint64_t v = 0;
	const char *p0;

	j_ws(c);
	neg = c->p < c->end && *c->p == '-';
	if (neg)
		c->p++;
	p0 = c->p;
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		if (v > (uint64_t)INT64_MAX / 10)
			return -EPROTO;
		v = v * 10 + (uint64_t)(*c->p++ - '0');
		if (v > (uint64_t)INT64_MAX)
			return -EPROTO;
	}
	if (c->p == p0)
		return -EPROTO;
	*ret = neg ? -(int64_t)v : (int64_t)v;
	return 0;
}

static int j_u64(struct jcur *c, uint64_t *ret)
{
	int64_t v;

	if (j_int64(c, &v) < 0 || v < 0)
		return -EPROTO;
	*ret = (uint64_t)v;
	return 0;
}

static int j_unsigned(struct jcur *c, unsigned *ret)
{
	uint64_t v;

	if (j_u64(c, &v) < 0 || v > UINT_MAX)
		return -EPROTO;
	*ret = (unsigned)v;
	return 0;
}

static int j_bool(struct jcur *c, bool *ret)
{
	j_ws(c);
	if (c->end - c->p >= 4 && !strncmp(c->p, "true", 4)) {
		c->p += 4;
		*ret = true;
		return 0;
	}
	if (c->end - c->p >= 5 && !strncmp(c->p, "false", 5)) {
		c->p += 5;
		*ret = false;
		return 0;
	}
	return -EPROTO;
}

/* "0x..." as the writer puts addresses (a string, so that no reader
 * rounds it through a double). */
static int j_hex(struct jcur *c, uint64_t *ret)
{
	char buf[32], *end;

	if (j_string(c, buf, sizeof(buf)) < 0)
		return -EPROTO;
	*ret = strtoull(buf, &end, 16);
	return end != buf && !*end ? 0 : -EPROTO;
}

/* A string or null into a malloc'd copy (*ret stays NULL for null). */
static int j_dup(struct jcur *c, char **ret)
{
	char val[1024];

	j_ws(c);
	if (c->end - c->p >= 4 && !strncmp(c->p, "null", 4)) {
		c->p += 4;
		free(*ret);
		*ret = NULL;
		return 0;
	}
	if (j_string(c, val, sizeof(val)) < 0)
		return -EPROTO;
	free(*ret);
	*ret = strdup(val);
	return *ret ? 0 : -ENOMEM;
}

/* Walks an object's members: calls member(c, key, arg) for each. */
typedef int (*member_fn)(struct jcur *c, const char *key, void *arg);

static int j_object(struct jcur *c, member_fn member, void *arg)
{
	char key[32];
	int err;

	if (!j_char(c, '{'))
		return -EPROTO;
	if (j_char(c, '}'))
		return 0;
	do {
		if (j_string(c, key, sizeof(key)) < 0 || !j_char(c, ':'))
			return -EPROTO;
		err = member(c, key, arg);
		if (err < 0)
			return err;
	} while (j_char(c, ','));
	return j_char(c, '}') ? 0 : -EPROTO;
}

/* An array: calls item(c, arg) for each element. */
static int j_array(struct jcur *c, int (*item)(struct jcur *c, void *arg), void *arg)
{
	int err;

	if (!j_char(c, '['))
		return -EPROTO;
	if (j_char(c, ']'))
		return 0;
	do {
		err = item(c, arg);
		if (err < 0)
			return err;
	} while (j_char(c, ','));
	return j_char(c, ']') ? 0 : -EPROTO;
}

static enum frame_kind kind_of(const char *s)
{
	static const struct { const char *name; enum frame_kind kind; } kinds[] = {
		{ "user", FRAME_USER }, { "library", FRAME_LIBRARY },
		{ "kernel", FRAME_KERNEL }, { "inlined", FRAME_INLINED },
		{ "jit", FRAME_JIT }, { "thread", FRAME_THREAD },
	};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(s, kinds[i].name))
			return kinds[i].kind;
	return FRAME_UNKNOWN;
}

static int frame_member(struct jcur *c, const char *key, void *arg)
{
	struct thread_frame *f = arg;
	char buf[16];
	unsigned line;

	if (!strcmp(key, "addr"))
		return j_hex(c, &f->addr);
	if (!strcmp(key, "offset"))
		return j_hex(c, &f->module_offset);
	if (!strcmp(key, "function"))
		return j_dup(c, &f->name);
	if (!strcmp(key, "module"))
		return j_dup(c, &f->module);
	if (!strcmp(key, "file"))
		return j_dup(c, &f->file);
	if (!strcmp(key, "line")) {
		if (j_unsigned(c, &line) < 0)
			return -EPROTO;
		f->line = line;
		return 0;
	}
	if (!strcmp(key, "kind")) {
		if (j_string(c, buf, sizeof(buf)) < 0)
			return -EPROTO;
		f->kind = kind_of(buf);
		return 0;
	}
	return j_skip(c, 0);
}

static void frame_free(struct thread_frame *f)
{
	free(f->name);
	free(f->module);
	free(f->file);
}

struct thread_read {
	struct thread_info *t;
	unsigned cap;		/* of t->frames */
	unsigned nargs;		/* of syscall.args read so far */
	bool have_tid, on_cpu, have_errno;
	int err;		/* from "errno" */
	char status[16];
};

static int frame_item(struct jcur *c, void *arg)
{
	struct thread_read *r = arg;
	struct thread_info *t = r->t;
	struct thread_frame f = { .kind = FRAME_UNKNOWN };
	int err = j_object(c, frame_member, &f);

	if (err < 0)
		goto out;
	if (t->nframes == THREAD_DUMP_MAX_DEPTH) {
		/* deeper than any thread dump keeps: read, dropped */
		t->truncated = true;
		goto out;
	}
	if (t->nframes == r->cap) {
		unsigned ncap = r->cap ? r->cap * 2 : 32;
		struct thread_frame *nv = realloc(t->frames, ncap * sizeof(*nv));

		if (!nv) {
			err = -ENOMEM;
			goto out;
		}
		t->frames = nv;
		r->cap = ncap;
	}
	if (!f.name) {
		f.name = strdup("??");
		if (!f.name) {
			err = -ENOMEM;
			goto out;
		}
	}
	t->frames[t->nframes++] = f;
	return 0;
out:
	frame_free(&f);
	return err;
}

static int args_item(struct jcur *c, void *arg)
{
	struct thread_read *r = arg;
	uint64_t v;

	if (j_hex(c, &v) < 0)
		return -EPROTO;
	if (r->nargs < 6)
		r->t->syscall_args[r->nargs++] = v;
	return 0;
}

static int syscall_member(struct jcur *c, const char *key, void *arg)
{
	struct thread_read *r = arg;
	struct thread_info *t = r->t;

	if (!strcmp(key, "nr")) {
		int64_t v;

		if (j_int64(c, &v) < 0 || v < 0 || v > INT_MAX)
			return -EPROTO;
		t->syscall_nr = (long)v;
		return 0;
	}
	if (!strcmp(key, "restart_of"))
		return j_string(c, t->restart_of, sizeof(t->restart_of));
	if (!strcmp(key, "args")) {
		r->nargs = 0;
		return j_array(c, args_item, r);
	}
	return j_skip(c, 0);
}

static int thread_member(struct jcur *c, const char *key, void *arg)
{
	struct thread_read *r = arg;
	struct thread_info *t = r->t;
	char buf[4];

	if (!strcmp(key, "tid")) {
		long v;

		if (j_uint(c, INT_MAX, &v) < 0 || v <= 0)
			return -EPROTO;
		t->tid = (pid_t)v;
		r->have_tid = true;
		return 0;
	}
	if (!strcmp(key, "name"))
		return j_string(c, t->name, sizeof(t->name));
	if (!strcmp(key, "state")) {
		if (j_string(c, buf, sizeof(buf)) < 0)
			return -EPROTO;
		t->state = buf[0] ? buf[0] : '?';
		return 0;
	}
	if (!strcmp(key, "status"))
		return j_string(c, r->status, sizeof(r->status));
	if (!strcmp(key, "on_cpu"))
		return j_bool(c, &r->on_cpu);
	if (!strcmp(key, "syscall")) {
		j_ws(c);
		if (c->end - c->p >= 4 && !strncmp(c->p, "null", 4)) {
			c->p += 4;
			return 0;
		}
		t->sc = THREAD_SC_IN;
		return j_object(c, syscall_member, r);
	}
	if (!strcmp(key, "cpu_ns"))
		return j_u64(c, &t->cpu_ns);
	if (!strcmp(key, "pause_ns"))
		return j_u64(c, &t->pause_ns);
	if (!strcmp(key, "stack_bytes")) {
		uint64_t v;

		if (j_u64(c, &v) < 0)
			return -EPROTO;
		t->stack_bytes = (size_t)v;
		return 0;
	}
	if (!strcmp(key, "errno")) {
		int64_t v;

		if (j_int64(c, &v) < 0 || v < 0 || v > 4095)
			return -EPROTO;
		r->err = -(int)v;
		r->have_errno = true;
		return 0;
	}
	if (!strcmp(key, "truncated")) {
		bool v = false;
		int err = j_bool(c, &v);

		t->truncated = t->truncated || v;
		return err;
	}
	if (!strcmp(key, "walk_end"))
		return j_string(c, t->walk_end, sizeof(t->walk_end));
	if (!strcmp(key, "frames"))
		return j_array(c, frame_item, r);
	return j_skip(c, 0);
}

/* The status as the writer names it, or as older agents did. */
static void set_status(struct thread_read *r)
{
	struct thread_info *t = r->t;
	const char *s = r->status;

	t->err = 0;
	if (!strcmp(s, "taken")) {
		t->status = THREAD_TAKEN;
	} else if (!strcmp(s, "live")) {
		t->status = THREAD_LIVE;
	} else if (!strcmp(s, "gone")) {
		t->status = THREAD_GONE;
	} else if (!strcmp(s, "agent") || !strcmp(s, "self")) {
		t->status = THREAD_AGENT;
	} else if (!strcmp(s, "no-answer")) {
		t->status = THREAD_FAILED;
		t->err = -ETIMEDOUT;
	} else {
		t->status = THREAD_FAILED;
		t->err = r->have_errno && r->err ? r->err : -EPROTO;
	}
	if (t->sc != THREAD_SC_IN)
		t->sc = r->on_cpu ? THREAD_SC_ON_CPU : THREAD_SC_UNKNOWN;
	if (t->truncated && !t->walk_end[0])
		snprintf(t->walk_end, sizeof(t->walk_end), "the agent's walk stopped");
}

static int thread_item(struct jcur *c, void *arg)
{
	struct thread_dump *td = arg;
	struct thread_read r = { 0 };
	int err;

	r.t = thread_dump_add_thread(td, 0);
	if (!r.t)
		return td->nthreads == THREAD_DUMP_MAX_THREADS ? -EPROTO : -ENOMEM;
	/* counted before it is read: its frames are freed either way */
	err = j_object(c, thread_member, &r);
	if (err < 0)
		return err;
	if (!r.have_tid)
		return -EPROTO;
	set_status(&r);
	return 0;
}

struct dump_read {
	struct thread_dump *td;
	bool have_threads;
};

static int dump_member(struct jcur *c, const char *key, void *arg)
{
	struct dump_read *r = arg;
	struct thread_dump *td = r->td;

	if (!strcmp(key, "threads") && !r->have_threads) {
		r->have_threads = true;
		return j_array(c, thread_item, td);
	}
	if (!strcmp(key, "pid")) {
		long v;

		if (j_uint(c, INT_MAX, &v) < 0)
			return -EPROTO;
		td->pid = (pid_t)v;
		return 0;
	}
	if (!strcmp(key, "comm"))
		return j_string(c, td->comm, sizeof(td->comm));
	if (!strcmp(key, "exe"))
		return j_dup(c, &td->exe);
	if (!strcmp(key, "time_ns"))
		return j_int64(c, &td->time_ns);
	if (!strcmp(key, "method")) {
		char m[16];

		if (j_string(c, m, sizeof(m)) < 0)
			return -EPROTO;
		td->method = !strcmp(m, "ptrace") ? THREAD_DUMP_PTRACE : THREAD_DUMP_AGENT;
		return 0;
	}
	if (!strcmp(key, "total_ns"))
		return j_u64(c, &td->total_ns);
	if (!strcmp(key, "pause_max_ns"))
		return j_u64(c, &td->pause_max_ns);
	if (!strcmp(key, "pause_sum_ns"))
		return j_u64(c, &td->pause_sum_ns);
	if (!strcmp(key, "threads_missed_new"))
		return j_unsigned(c, &td->missed_new);
	if (!strcmp(key, "threads_omitted"))
		return j_unsigned(c, &td->omitted);
	if (!strcmp(key, "process_exited"))
		return j_bool(c, &td->process_exited);
	/* threads_gone, threads_failed: counted from the threads */
	return j_skip(c, 0);
}

static int cmp_tid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int thread_dump_read_json(const char *json, size_t len, struct thread_dump **ret)
{
	struct jcur c = { json, json + len };
	struct dump_read r = { 0 };
	pid_t *tids = NULL;
	int err = -EPROTO;

	if (!json)
		return -EPROTO;
	r.td = calloc(1, sizeof(*r.td));
	if (!r.td)
		return -ENOMEM;
	r.td->method = THREAD_DUMP_AGENT;
	err = j_object(&c, dump_member, &r);
	if (err < 0)
		goto out;
	err = -EPROTO;
	if (!r.have_threads)
		goto out;
	/* One entry per thread: a tid twice would be merged twice. */
	if (r.td->nthreads > 1) {
		tids = malloc(r.td->nthreads * sizeof(*tids));
		if (!tids) {
			err = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < r.td->nthreads; i++)
			tids[i] = r.td->threads[i].tid;
		qsort(tids, r.td->nthreads, sizeof(*tids), cmp_tid);
		for (size_t i = 1; i < r.td->nthreads; i++)
			if (tids[i] == tids[i - 1])
				goto out;
	}
	thread_dump_sort(r.td);
	*ret = r.td;
	r.td = NULL;
	err = 0;
out:
	free(tids);
	thread_dump_free(r.td);
	return err;
}
