/* collapsed reader: `root;caller;leaf 12` lines back into a profile.
 *
 * The value is what follows the LAST space, so frame names may contain
 * spaces ("operator new(unsigned long)"). Blank lines and a trailing '\r'
 * (files written on Windows) are skipped. Anything else that is not a
 * stack and a non-negative integer is an error naming the line: a profile
 * silently missing lines would mislead.
 *
 * Frame kinds come back from FlameGraph's and nprof's conventions:
 * `[name tid=N]` is a thread pseudo-frame (FRAME_THREAD; when it is the
 * root, the sample is put on thread N with that name), a name ending in
 * `_[k]` is a kernel frame (the suffix is kept, so writing collapsed again
 * gives the same line back), a name ending in `_[i]` is an inlined frame
 * (async-profiler's mark; the suffix is removed, the writer adds it back),
 * everything else is FRAME_USER. */
#include "output/output.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"

/* Bounds, so that a hostile file costs bounded memory and time. */
#define COLLAPSED_MAX_INPUT (1ull << 30) /* bytes */
#define COLLAPSED_MAX_LINE (16u << 20)	 /* bytes in one line */
#define COLLAPSED_MAX_DEPTH 65536	 /* frames in one stack */
/* Frame names looked up by their text's hash before interning, which
 * hashes and compares each name twice (string, then frame); direct
 * mapped, overwritten on a clash. A slot per 256 bytes of input, up to
 * 4 MiB of them: room for every distinct name of a large profile. */
#define COLLAPSED_CACHE_MIN (1u << 12)
#define COLLAPSED_CACHE_MAX (1u << 18)

static enum frame_kind kind_of(const char *name, size_t len)
{
	/* "[name tid=N]", "[name pid=N]", "[host NAME]" */
	if (profile_is_root_name(name, len))
		return FRAME_THREAD;
	if (len > 4 && !memcmp(name + len - 4, "_[k]", 4))
		return FRAME_KERNEL;
	if (len > 4 && !memcmp(name + len - 4, "_[i]", 4))
		return FRAME_INLINED;
	return FRAME_USER;
}

/* "[name tid=N]" -> the thread (name may itself contain spaces);
 * "[tid=N]" -> a thread without a name. */
static int thread_of(struct profile *p, const char *name, uint32_t *ret)
{
	const char *tid_at = strstr(name, " tid=");
	char tname[256];
	char *end;
	long tid;
	size_t n;

	if (!tid_at && !strncmp(name, "[tid=", 5))
		tid_at = name; /* name + 1 .. tid_at - 1 is then empty */
	if (!tid_at)
		return -EINVAL;
	/* The last " tid=" wins: a thread name may contain one. */
	for (const char *s; (s = strstr(tid_at + 1, " tid=")); tid_at = s)
		;
	errno = 0;
	tid = strtol(tid_at + 5, &end, 10);
	if (errno || end == tid_at + 5 || strcmp(end, "]") || tid < 0 ||
	    tid > INT_MAX)
		return -EINVAL;
	n = tid_at > name ? (size_t)(tid_at - name - 1) : 0;
	if (n >= sizeof(tname))
		n = sizeof(tname) - 1;
	memcpy(tname, name + 1, n);
	tname[n] = '\0';
	return profile_intern_thread(p, (pid_t)tid, tname, ret);
}

/* The value after the last space: digits only, no sign, no overflow. */
static int parse_value(const char *s, size_t len, int64_t *ret)
{
	int64_t v = 0;

	if (!len)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		if (__builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, s[i] - '0', &v))
			return -ERANGE;
	}
	*ret = v;
	return 0;
}

struct line_ctx {
	struct profile *p;
	uint32_t *frames;
	size_t max_depth; /* frames has room for this many */
	char *name; /* scratch for one NUL-terminated frame name */
	uint32_t anon_thread;
	int64_t total;
	size_t lineno;
	struct diag *d;
	/* The previous line's stack text, its depth and thread: frames in
	 * a prefix both lines share are its frames, already interned
	 * (c.frames still holds them). Collapsed files are mostly sorted,
	 * so this skips most lookups; interning was most of the time spent
	 * reading a large file. */
	const char *prev;
	size_t prev_len;
	uint32_t prev_depth, prev_thread;
	/* Text hash and frame id of recent frames (cache_mask + 1 of them,
	 * or NULL when they could not be had: reading works without). */
	struct frame_slot { uint64_t hash; uint32_t id; } *cache;
	size_t cache_mask;
};

/* The frame whose collapsed text is name (n bytes, kind k), from the
 * cache when it is there; interned, and remembered, when not. Inlined
 * frames lose their suffix and threads are looked up for their tid, so
 * only frames named exactly by their text are cached. */
static int intern_cached(struct line_ctx *c, const struct frame *f, size_t n,
			 uint32_t *ret_id)
{
	struct frame_slot *slot = NULL;
	uint64_t h = 0;
	int r;

	if (c->cache && f->kind != FRAME_INLINED && f->kind != FRAME_THREAD) {
		const struct frame *hit;

		h = hash_bytes(f->name, n, 0x636f6c6c) | 1; /* 0: empty slot */
		slot = &c->cache[h & c->cache_mask];
		hit = slot->hash == h ? &c->p->frames[slot->id] : NULL;
		if (hit && hit->kind == f->kind && !strcmp(hit->name, f->name)) {
			*ret_id = slot->id;
			return 0;
		}
	}
	r = profile_intern_frame(c->p, f, ret_id);
	if (r < 0)
		return r;
	if (slot)
		*slot = (struct frame_slot){ h, *ret_id };
	return 0;
}

/* How many of the previous line's frames the stack text s (len bytes)
 * starts with, and where the first frame after them begins. */
static uint32_t shared_frames(const struct line_ctx *c, const char *s,
			      size_t len, const char **ret_start)
{
	size_t k = 0, max = len < c->prev_len ? len : c->prev_len;
	uint32_t n = 0;
	const char *start = s;

	if (!c->prev)
		goto out;
	while (k < max && s[k] == c->prev[k])
		k++;
	if (k == len && len == c->prev_len) {
		/* The same stack again: every frame, nothing left to read. */
		*ret_start = s + len + 1;
		return c->prev_depth;
	}
	/* Frame i is shared when its ';' is inside the common prefix: the
	 * bytes before it are equal and so is its end. */
	for (const char *semi; (semi = memchr(start, ';', (size_t)(s + k - start)));
	     start = semi + 1)
		n++;
out:
	*ret_start = start;
	return n;
}

static int read_line(struct line_ctx *c, const char *s, size_t len)
{
	struct frame f = { 0 };
	const char *sp, *start;
	uint32_t depth, stack, thread = c->anon_thread;
	int64_t value;
	int r;

	sp = len ? memrchr(s, ' ', len) : NULL;
	if (!sp)
		return diag_set(c->d, -EBADMSG,
				"line %zu: no count: want `frame;frame;... COUNT`",
				c->lineno);
	r = parse_value(sp + 1, (size_t)(s + len - sp - 1), &value);
	if (r < 0)
		return diag_set(c->d, -EBADMSG,
				"line %zu: '%.*s' is not a count: want a non-negative integer after the last space",
				c->lineno, (int)(s + len - sp - 1 > 40 ? 40 : s + len - sp - 1),
				sp + 1);
	if (__builtin_add_overflow(c->total, value, &c->total))
		return diag_set(c->d, -EBADMSG,
				"line %zu: the counts add up past 2^63", c->lineno);
	len = (size_t)(sp - s);
	if (!len)
		return diag_set(c->d, -EBADMSG, "line %zu: empty stack before the count",
				c->lineno);
	depth = shared_frames(c, s, len, &start);
	if (depth)
		thread = c->prev_thread;
	c->prev = s;
	c->prev_len = len;
	while (start <= s + len) {
		const char *semi = memchr(start, ';', (size_t)(s + len - start));
		size_t n = semi ? (size_t)(semi - start) : (size_t)(s + len - start);

		if (depth == c->max_depth)
			return diag_set(c->d, -EFBIG,
					"line %zu: more than %d frames", c->lineno,
					COLLAPSED_MAX_DEPTH);
		memcpy(c->name, start, n);
		c->name[n] = '\0';
		f.name = c->name;
		f.kind = kind_of(c->name, n);
		if (f.kind == FRAME_INLINED)
			c->name[n - 4] = '\0';
		if (f.kind == FRAME_THREAD && depth == 0 &&
		    thread_of(c->p, c->name, &thread) < 0)
			thread = c->anon_thread;
		r = intern_cached(c, &f, n, &c->frames[depth++]);
		if (r < 0)
			return r;
		if (!semi)
			break;
		start = semi + 1;
	}
	c->prev_depth = depth;
	c->prev_thread = thread;
	r = profile_intern_stack(c->p, c->frames, depth, false, &stack);
	if (r < 0)
		return r;
	return profile_add_sample(c->p, stack, thread, &value);
}

int collapsed_read(const void *data, size_t len, struct profile **ret_p,
		   struct diag *d)
{
	static const struct value_type vt = { "samples", "count" };
	struct line_ctx c = { .d = d };
	const char *s = data, *end = s + len;
	struct profile *p = NULL;
	int r = -ENOMEM;

	if (len > COLLAPSED_MAX_INPUT) {
		r = diag_set(d, -EFBIG, "the file is larger than %llu MiB",
			     COLLAPSED_MAX_INPUT >> 20);
		goto out;
	}
	/* No line is longer than the input, and no stack has more frames
	 * than half its line's bytes plus one: small inputs, small buffers. */
	p = profile_new();
	c.max_depth = len / 2 + 1 < COLLAPSED_MAX_DEPTH ? len / 2 + 1 : COLLAPSED_MAX_DEPTH;
	c.frames = malloc(c.max_depth * sizeof(*c.frames));
	c.name = malloc((len < COLLAPSED_MAX_LINE ? len : COLLAPSED_MAX_LINE) + 1);
	c.cache_mask = COLLAPSED_CACHE_MIN;
	while (c.cache_mask < COLLAPSED_CACHE_MAX && c.cache_mask < len / 256)
		c.cache_mask <<= 1;
	c.cache = calloc(c.cache_mask, sizeof(*c.cache));
	c.cache_mask--;
	if (!p || !c.frames || !c.name)
		goto out;
	c.p = p;
	r = profile_set_value_types(p, &vt, 1);
	if (r < 0)
		goto out;
	/* The format says nothing about the recording itself. */
	p->unwinder = NULL;
	/* Lines without a thread frame: one anonymous thread, tid 0. */
	r = profile_intern_thread(p, 0, NULL, &c.anon_thread);
	if (r < 0)
		goto out;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);

		c.lineno++;
		if (n > COLLAPSED_MAX_LINE) {
			r = diag_set(d, -EFBIG, "line %zu is longer than %u MiB",
				     c.lineno, COLLAPSED_MAX_LINE >> 20);
			goto out;
		}
		while (n && (s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		if (n) {
			r = read_line(&c, s, n);
			if (r < 0)
				goto out;
		}
		s += (nl ? (size_t)(nl - s) + 1 : (size_t)(end - s));
	}
	*ret_p = p;
	p = NULL;
	r = 0;
out:
	free(c.frames);
	free(c.name);
	free(c.cache);
	profile_free(p);
	return r;
}
