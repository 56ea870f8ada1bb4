#include "profile/profile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/hash.h"

/* Strings are stored in chunks that never move, so interned pointers stay
 * valid as the profile grows. */
struct string_chunk {
	struct string_chunk *next;
	size_t used, cap;
	char data[];
};

struct profile_private {
	struct string_chunk *chunks;
	const char **strings; /* id -> string, for the string index */
	size_t nstrings, strings_cap;
	struct id_index string_index;
	struct id_index frame_index;
	struct id_index stack_index;
	struct id_index thread_index;
	struct id_index sample_index;
	struct id_index module_index;
	size_t modules_cap, events_cap;
	size_t frames_cap, stack_frames_cap, stacks_cap, threads_cap,
		samples_cap;
};

struct profile *profile_new(void)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->priv = calloc(1, sizeof(*p->priv));
	if (!p->priv) {
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	id_index_init(&p->priv->string_index);
	id_index_init(&p->priv->frame_index);
	id_index_init(&p->priv->stack_index);
	id_index_init(&p->priv->thread_index);
	id_index_init(&p->priv->sample_index);
	id_index_init(&p->priv->module_index);
	p->unwinder = "fp";
	return p;
}

void profile_free(struct profile *p)
{
	struct string_chunk *c, *next;

	if (!p)
		return;
	for (c = p->priv->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	free(p->priv->strings);
	id_index_release(&p->priv->string_index);
	id_index_release(&p->priv->frame_index);
	id_index_release(&p->priv->stack_index);
	id_index_release(&p->priv->thread_index);
	id_index_release(&p->priv->sample_index);
	id_index_release(&p->priv->module_index);
	free(p->priv);
	free(p->modules);
	free(p->events);
	free(p->frames);
	free(p->stack_frames);
	free(p->stacks);
	free(p->threads);
	free(p->samples);
	free(p);
}

static int string_match(const void *ctx, uint32_t id, const void *key)
{
	const struct profile_private *pp = ctx;

	return !strcmp(pp->strings[id], key);
}

static char *chunk_alloc(struct profile_private *pp, size_t len)
{
	struct string_chunk *c = pp->chunks;

	if (!c || c->cap - c->used < len) {
		size_t cap = len > 65536 ? len : 65536;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = pp->chunks;
		pp->chunks = c;
	}
	c->used += len;
	return c->data + c->used - len;
}

const char *profile_intern_string(struct profile *p, const char *s)
{
	struct profile_private *pp = p->priv;
	size_t len;
	uint64_t h;
	uint32_t id;
	char *copy;

	if (!s)
		return NULL;
	len = strlen(s);
	h = hash_bytes(s, len, 0);
	id = id_index_find(&pp->string_index, h, string_match, pp, s);
	if (id != ID_NONE)
		return pp->strings[id];
	if (array_reserve(&pp->strings, &pp->strings_cap, pp->nstrings + 1,
		    sizeof(*pp->strings)) < 0)
		goto oom;
	copy = chunk_alloc(pp, len + 1);
	if (!copy)
		goto oom;
	memcpy(copy, s, len + 1);
	if (id_index_insert(&pp->string_index, h, (uint32_t)pp->nstrings) < 0)
		goto oom;
	pp->strings[pp->nstrings++] = copy;
	return copy;
oom:
	errno = ENOMEM;
	return NULL;
}

int profile_set_value_types(struct profile *p, const struct value_type *types,
			    unsigned n)
{
	if (n > PROFILE_MAX_VALUES || n == 0)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		p->value_types[i].type = profile_intern_string(p, types[i].type);
		p->value_types[i].unit = profile_intern_string(p, types[i].unit);
		if (!p->value_types[i].type || !p->value_types[i].unit)
			return -ENOMEM;
	}
	p->nvalues = n;
	return 0;
}

int profile_add_note(struct profile *p, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	const char *s;

	if (p->nnotes >= PROFILE_MAX_NOTES)
		return 0;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	for (unsigned i = 0; i < p->nnotes; i++)
		if (!strcmp(p->notes[i], buf))
			return 0;
	s = profile_intern_string(p, buf);
	if (!s)
		return -ENOMEM;
	p->notes[p->nnotes++] = s;
	return 0;
}

/* Interned strings compare by pointer; the address is not identity. */
static uint64_t frame_hash(const struct frame *f)
{
	uint64_t parts[5] = { (uintptr_t)f->name, (uintptr_t)f->module,
			      (uintptr_t)f->file, f->line, f->kind };

	return hash_bytes(parts, sizeof(parts), 1);
}

static int frame_match(const void *ctx, uint32_t id, const void *key)
{
	const struct frame *a = &((const struct profile *)ctx)->frames[id];
	const struct frame *b = key;

	return a->name == b->name && a->module == b->module &&
	       a->file == b->file && a->line == b->line && a->kind == b->kind;
}

int profile_intern_frame(struct profile *p, const struct frame *f,
			 uint32_t *ret_id)
{
	struct profile_private *pp = p->priv;
	struct frame key = *f;
	uint64_t h;
	uint32_t id;

	key.name = profile_intern_string(p, f->name ? f->name : "[unknown]");
	key.module = profile_intern_string(p, f->module);
	key.file = profile_intern_string(p, f->file);
	if (!key.name || (f->module && !key.module) || (f->file && !key.file))
		return -ENOMEM;
	h = frame_hash(&key);
	id = id_index_find(&pp->frame_index, h, frame_match, p, &key);
	if (id == ID_NONE) {
		if (array_reserve(&p->frames, &pp->frames_cap, p->nframes + 1,
			    sizeof(*p->frames)) < 0)
			return -ENOMEM;
		id = (uint32_t)p->nframes;
		if (id_index_insert(&pp->frame_index, h, id) < 0)
			return -ENOMEM;
		p->frames[p->nframes++] = key;
		if (key.kind == FRAME_UNKNOWN)
			p->degraded.unsymbolized_frames++;
	}
	*ret_id = id;
	return 0;
}

struct stack_key {
	const uint32_t *frames;
	uint32_t depth;
	bool truncated;
};

static int stack_match(const void *ctx, uint32_t id, const void *key)
{
	const struct profile *p = ctx;
	const struct stack *s = &p->stacks[id];
	const struct stack_key *k = key;

	/* An empty stack may have no frame storage at all: no memcmp. */
	return s->depth == k->depth && s->truncated == k->truncated &&
	       (!k->depth || !memcmp(p->stack_frames + s->first, k->frames,
				     k->depth * sizeof(*k->frames)));
}

int profile_intern_stack(struct profile *p, const uint32_t *frames,
			 uint32_t depth, bool truncated, uint32_t *ret_id)
{
	struct profile_private *pp = p->priv;
	struct stack_key key = { frames, depth, truncated };
	uint64_t h = hash_bytes(frames, depth * sizeof(*frames), truncated);
	uint32_t id = id_index_find(&pp->stack_index, h, stack_match, p, &key);

	if (id == ID_NONE) {
		if (array_reserve(&p->stacks, &pp->stacks_cap, p->nstacks + 1,
			    sizeof(*p->stacks)) < 0 ||
		    array_reserve(&p->stack_frames, &pp->stack_frames_cap,
			    p->nstack_frames + depth,
			    sizeof(*p->stack_frames)) < 0)
			return -ENOMEM;
		id = (uint32_t)p->nstacks;
		if (id_index_insert(&pp->stack_index, h, id) < 0)
			return -ENOMEM;
		if (depth)
			memcpy(p->stack_frames + p->nstack_frames, frames,
			       depth * sizeof(*frames));
		p->stacks[p->nstacks++] = (struct stack){
			.first = (uint32_t)p->nstack_frames,
			.depth = depth,
			.truncated = truncated,
		};
		p->nstack_frames += depth;
	}
	*ret_id = id;
	return 0;
}

static int thread_match(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct profile *)ctx)->threads[id].tid ==
	       *(const pid_t *)key;
}

int profile_intern_thread(struct profile *p, pid_t tid, const char *name,
			  uint32_t *ret_id)
{
	struct profile_private *pp = p->priv;
	uint64_t h = hash_u64((uint64_t)tid);
	uint32_t id = id_index_find(&pp->thread_index, h, thread_match, p, &tid);

	if (id == ID_NONE) {
		if (array_reserve(&p->threads, &pp->threads_cap, p->nthreads + 1,
			    sizeof(*p->threads)) < 0)
			return -ENOMEM;
		id = (uint32_t)p->nthreads;
		if (id_index_insert(&pp->thread_index, h, id) < 0)
			return -ENOMEM;
		p->threads[p->nthreads++] = (struct thread){ tid, "" };
	}
	if (name && *name) {
		const char *s = profile_intern_string(p, name);

		if (!s)
			return -ENOMEM;
		p->threads[id].name = s;
	}
	*ret_id = id;
	return 0;
}

int profile_thread_root_name(char *buf, size_t len, const char *name, pid_t tid)
{
	if (name && *name)
		return snprintf(buf, len, "[%s tid=%d]", name, (int)tid);
	return snprintf(buf, len, "[tid=%d]", (int)tid);
}

int profile_process_root_name(char *buf, size_t len, const char *name, pid_t pid)
{
	if (name && *name)
		return snprintf(buf, len, "[%s pid=%d]", name, (int)pid);
	return snprintf(buf, len, "[pid=%d]", (int)pid);
}

int profile_host_root_name(char *buf, size_t len, const char *host)
{
	return snprintf(buf, len, "[host %s]", host);
}

/* Whether s (len bytes) ends in " KEY=DIGITS]" or is "[KEY=DIGITS]". */
static bool ends_with_id(const char *s, size_t len, const char *key)
{
	size_t k = strlen(key), d = 0;

	while (d + 2 < len && s[len - 2 - d] >= '0' && s[len - 2 - d] <= '9')
		d++;
	if (!d || len < d + k + 3 || memcmp(s + len - 1 - d - k - 1, key, k) ||
	    s[len - 1 - d - 1] != '=')
		return false;
	/* "[tid=N]" or "[... tid=N]" */
	return len == d + k + 3 || s[len - 1 - d - k - 2] == ' ';
}

bool profile_is_root_name(const char *s, size_t len)
{
	if (len < 3 || s[0] != '[' || s[len - 1] != ']')
		return false;
	return ends_with_id(s, len, "tid") || ends_with_id(s, len, "pid") ||
	       (len > 7 && !memcmp(s, "[host ", 6));
}

struct sample_key {
	uint32_t stack, thread;
};

static int sample_match(const void *ctx, uint32_t id, const void *key)
{
	const struct sample *s = &((const struct profile *)ctx)->samples[id];
	const struct sample_key *k = key;

	return s->stack == k->stack && s->thread == k->thread;
}

static uint64_t sample_hash(uint32_t stack, uint32_t thread)
{
	return hash_u64(((uint64_t)stack << 32) | thread);
}

uint32_t profile_find_sample(const struct profile *p, uint32_t stack,
			     uint32_t thread)
{
	struct sample_key key = { stack, thread };

	return id_index_find(&p->priv->sample_index, sample_hash(stack, thread),
			     sample_match, p, &key);
}

int profile_add_sample(struct profile *p, uint32_t stack, uint32_t thread,
		       const int64_t *values)
{
	struct profile_private *pp = p->priv;
	struct sample_key key = { stack, thread };
	uint64_t h = sample_hash(stack, thread);
	uint32_t id = id_index_find(&pp->sample_index, h, sample_match, p, &key);

	if (id == ID_NONE) {
		if (array_reserve(&p->samples, &pp->samples_cap, p->nsamples + 1,
			    sizeof(*p->samples)) < 0)
			return -ENOMEM;
		id = (uint32_t)p->nsamples;
		if (id_index_insert(&pp->sample_index, h, id) < 0)
			return -ENOMEM;
		p->samples[p->nsamples++] = (struct sample){ stack, thread, { 0 } };
	}
	for (unsigned v = 0; v < p->nvalues; v++)
		p->samples[id].values[v] += values[v];
	return 0;
}

int64_t profile_total(const struct profile *p, unsigned v)
{
	int64_t t = 0;

	for (size_t i = 0; i < p->nsamples; i++)
		t += p->samples[i].values[v];
	return t;
}

static int module_match(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct profile *)ctx)->modules[id].path == key;
}

int profile_intern_module(struct profile *p, const char *path,
			  const char *build_id, uint32_t *ret_id)
{
	struct profile_private *pp = p->priv;
	const char *ipath = profile_intern_string(p, path);
	uint64_t h;
	uint32_t id;

	if (!ipath)
		return -ENOMEM;
	h = hash_u64((uintptr_t)ipath);
	id = id_index_find(&pp->module_index, h, module_match, p, ipath);
	if (id == ID_NONE) {
		if (array_reserve(&p->modules, &pp->modules_cap, p->nmodules + 1,
			    sizeof(*p->modules)) < 0)
			return -ENOMEM;
		id = (uint32_t)p->nmodules;
		if (id_index_insert(&pp->module_index, h, id) < 0)
			return -ENOMEM;
		p->modules[p->nmodules++] = (struct module){ ipath, NULL };
	}
	if (build_id && !p->modules[id].build_id) {
		p->modules[id].build_id = profile_intern_string(p, build_id);
		if (!p->modules[id].build_id)
			return -ENOMEM;
	}
	*ret_id = id;
	return 0;
}

int profile_add_event(struct profile *p, uint64_t time_ns, uint32_t stack,
		      uint32_t thread, int64_t value)
{
	if (!p->max_events)
		return 0;
	if (p->nevents >= p->max_events) {
		p->events_dropped++;
		return 0;
	}
	if (array_reserve(&p->events, &p->priv->events_cap, p->nevents + 1,
		    sizeof(*p->events)) < 0)
		return -ENOMEM;
	p->events[p->nevents++] = (struct sample_event){ time_ns, stack, thread,
							 value };
	return 0;
}
