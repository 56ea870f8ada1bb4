/* pprof writer: the profile as a gzipped profile.proto message, the way
 * `go tool pprof` reads it.
 *
 * The model maps onto the format like this (docs/formats.md has the whole
 * table):
 * - value_types -> sample_type, event/interval -> period_type/period,
 *   start/duration -> time_nanos/duration_nanos, notes and degradations ->
 *   comment;
 * - each module -> a mapping (path, build-id); addresses are the model's
 *   file offsets, so every mapping starts at 0 with file offset 0;
 * - each distinct (name, module, file) -> a function;
 * - each run of frames "physical frame + the FRAME_INLINED frames above it"
 *   -> one location whose lines list the inlined functions first and the
 *   physical frame last, as the format wants. An inlined frame with no
 *   physical frame below it gets a location of its own;
 * - each sample -> a sample, location ids leaf first, with `thread` (name)
 *   and `thread_id` (tid) labels when the thread is known;
 * - the timeline -> nprof_timeline, each event naming its sample by index.
 *
 * Everything is built in plain arrays first (deduplicated through
 * id_index), then turned into protobuf-c messages of exactly the right
 * size, packed and deflated. The messages point into the profile's strings;
 * nothing is copied twice. */
#include "output/output.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/array.h"
#include "base/hash.h"
#include "base/id_index.h"
#include "output/pprof.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__ValueType pb_value_type;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Label pb_label;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Function pb_function;
typedef Perftools__Profiles__Timeline pb_timeline;

/* The string table: index 0 is "". Strings are not copied. */
struct strtab {
	ProtobufCBinaryData *items;
	size_t n, cap;
	struct id_index index;
};

static int str_match(const void *ctx, uint32_t id, const void *key)
{
	const struct strtab *t = ctx;
	const ProtobufCBinaryData *k = key;

	return t->items[id].len == k->len &&
	       !memcmp(t->items[id].data, k->data, k->len);
}

/* The index of s (NULL counts as ""), or -ENOMEM. */
static int64_t str_id(struct strtab *t, const char *s)
{
	ProtobufCBinaryData key = { s ? strlen(s) : 0, (uint8_t *)(s ? s : "") };
	uint64_t h = hash_bytes(key.data, key.len, 3);
	uint32_t id = id_index_find(&t->index, h, str_match, t, &key);

	if (id != ID_NONE)
		return id;
	if (array_reserve(&t->items, &t->cap, t->n + 1, sizeof(*t->items)) < 0)
		return -ENOMEM;
	id = (uint32_t)t->n;
	if (id_index_insert(&t->index, h, id) < 0)
		return -ENOMEM;
	t->items[t->n++] = key;
	return id;
}

/* A function: frames with equal name, module and file share one. The
 * strings are interned by the profile, so pointers compare. */
struct fn_key {
	const char *name, *module, *file;
};

/* A location: a run of frame ids, root first (physical frame, then the
 * frames inlined into it), stored in seq[first .. first + len). */
struct loc_key {
	uint32_t first, len;
};

struct builder {
	const struct profile *p;
	struct strtab strs;
	struct fn_key *fns;
	size_t nfns, fns_cap;
	struct id_index fn_index;
	uint32_t *frame_fn; /* frame id -> function index, or ID_NONE */
	struct loc_key *locs;
	size_t nlocs, locs_cap;
	struct id_index loc_index;
	uint32_t *seq;
	size_t nseq, seq_cap;
	size_t nlines; /* sum of the locations' lengths */
	/* Per stack: its location ids, leaf first, in stack_locs. */
	uint64_t *stack_locs;
	uint32_t *stack_loc_first, *stack_loc_n;
	/* Mappings, found by module path (an interned pointer). */
	struct module *maps;
	size_t nmaps, maps_cap;
	struct id_index map_index;
};

static int fn_match(const void *ctx, uint32_t id, const void *key)
{
	const struct fn_key *a = &((const struct builder *)ctx)->fns[id];
	const struct fn_key *b = key;

	return a->name == b->name && a->module == b->module && a->file == b->file;
}

static int frame_function(struct builder *b, uint32_t frame, uint32_t *ret)
{
	const struct frame *f = &b->p->frames[frame];
	struct fn_key key = { f->name, f->module, f->file };
	uint64_t h = hash_bytes(&key, sizeof(key), 5);
	uint32_t id;

	if (b->frame_fn[frame] != ID_NONE) {
		*ret = b->frame_fn[frame];
		return 0;
	}
	id = id_index_find(&b->fn_index, h, fn_match, b, &key);
	if (id == ID_NONE) {
		if (array_reserve(&b->fns, &b->fns_cap, b->nfns + 1, sizeof(*b->fns)) < 0)
			return -ENOMEM;
		id = (uint32_t)b->nfns;
		if (id_index_insert(&b->fn_index, h, id) < 0)
			return -ENOMEM;
		b->fns[b->nfns++] = key;
	}
	b->frame_fn[frame] = id;
	*ret = id;
	return 0;
}

struct loc_probe {
	const struct builder *b;
	const uint32_t *frames;
	uint32_t len;
};

static int loc_match(const void *ctx, uint32_t id, const void *key)
{
	const struct builder *b = ctx;
	const struct loc_key *l = &b->locs[id];
	const struct loc_probe *k = key;

	return l->len == k->len &&
	       !memcmp(b->seq + l->first, k->frames, k->len * sizeof(*k->frames));
}

static int location_of(struct builder *b, const uint32_t *frames, uint32_t len,
		       uint32_t *ret)
{
	struct loc_probe key = { b, frames, len };
	uint64_t h = hash_bytes(frames, len * sizeof(*frames), 9);
	uint32_t id = id_index_find(&b->loc_index, h, loc_match, b, &key);

	if (id == ID_NONE) {
		uint32_t fn;

		for (uint32_t i = 0; i < len; i++)
			if (frame_function(b, frames[i], &fn) < 0)
				return -ENOMEM;
		if (array_reserve(&b->locs, &b->locs_cap, b->nlocs + 1, sizeof(*b->locs)) < 0 ||
		    array_reserve(&b->seq, &b->seq_cap, b->nseq + len, sizeof(*b->seq)) < 0)
			return -ENOMEM;
		id = (uint32_t)b->nlocs;
		if (id_index_insert(&b->loc_index, h, id) < 0)
			return -ENOMEM;
		memcpy(b->seq + b->nseq, frames, len * sizeof(*frames));
		b->locs[b->nlocs++] = (struct loc_key){ (uint32_t)b->nseq, len };
		b->nseq += len;
		b->nlines += len;
	}
	*ret = id;
	return 0;
}

/* Splits every stack into locations and records them leaf first. */
static int build_stacks(struct builder *b)
{
	const struct profile *p = b->p;
	size_t next = 0;

	b->stack_locs = malloc((p->nstack_frames + 1) * sizeof(*b->stack_locs));
	b->stack_loc_first = malloc((p->nstacks + 1) * sizeof(*b->stack_loc_first));
	b->stack_loc_n = malloc((p->nstacks + 1) * sizeof(*b->stack_loc_n));
	if (!b->stack_locs || !b->stack_loc_first || !b->stack_loc_n)
		return -ENOMEM;
	for (size_t s = 0; s < p->nstacks; s++) {
		uint32_t depth = p->stacks[s].depth, n = 0, i = 0;
		/* Not called for an empty stack: stack_frames may be NULL. */
		const uint32_t *f = depth ? profile_stack_frames(p, (uint32_t)s) : NULL;

		/* Locations root first into the tail of this stack's slot,
		 * then reversed in place to leaf first. */
		while (i < depth) {
			uint32_t j = i + 1, loc;

			while (j < depth && p->frames[f[j]].kind == FRAME_INLINED)
				j++;
			if (location_of(b, f + i, j - i, &loc) < 0)
				return -ENOMEM;
			b->stack_locs[next + n++] = (uint64_t)loc + 1;
			i = j;
		}
		for (uint32_t k = 0; k < n / 2; k++) {
			uint64_t t = b->stack_locs[next + k];

			b->stack_locs[next + k] = b->stack_locs[next + n - 1 - k];
			b->stack_locs[next + n - 1 - k] = t;
		}
		b->stack_loc_first[s] = (uint32_t)next;
		b->stack_loc_n[s] = n;
		next += n;
	}
	return 0;
}

static int map_match(const void *ctx, uint32_t id, const void *key)
{
	return ((const struct builder *)ctx)->maps[id].path == key;
}

/* The mapping index of a module path (interned), added when new. */
static int mapping_of(struct builder *b, const char *path, const char *build_id,
		      uint32_t *ret)
{
	uint64_t h = hash_u64((uintptr_t)path);
	uint32_t id = id_index_find(&b->map_index, h, map_match, b, path);

	if (id == ID_NONE) {
		if (array_reserve(&b->maps, &b->maps_cap, b->nmaps + 1, sizeof(*b->maps)) < 0)
			return -ENOMEM;
		id = (uint32_t)b->nmaps;
		if (id_index_insert(&b->map_index, h, id) < 0)
			return -ENOMEM;
		b->maps[b->nmaps++] = (struct module){ path, build_id };
	}
	if (build_id && !b->maps[id].build_id)
		b->maps[id].build_id = build_id;
	*ret = id;
	return 0;
}

static void builder_release(struct builder *b)
{
	free(b->strs.items);
	id_index_release(&b->strs.index);
	free(b->fns);
	id_index_release(&b->fn_index);
	free(b->frame_fn);
	free(b->locs);
	id_index_release(&b->loc_index);
	free(b->seq);
	free(b->stack_locs);
	free(b->stack_loc_first);
	free(b->stack_loc_n);
	free(b->maps);
	id_index_release(&b->map_index);
}

/* The protobuf-c messages, each kind in one array. */
struct messages {
	pb_profile prof;
	pb_value_type *vtypes, **vtype_ptrs, period_type;
	pb_mapping *maps, **map_ptrs;
	pb_function *fns, **fn_ptrs;
	pb_location *locs, **loc_ptrs;
	pb_line *lines, **line_ptrs;
	pb_sample *samples, **sample_ptrs;
	int64_t *values;
	pb_label *labels, **label_ptrs; /* two per thread */
	int64_t *comments;
	char (*comment_buf)[160];
	pb_timeline timeline;
};

static void messages_release(struct messages *m)
{
	free(m->vtypes);
	free(m->vtype_ptrs);
	free(m->maps);
	free(m->map_ptrs);
	free(m->fns);
	free(m->fn_ptrs);
	free(m->locs);
	free(m->loc_ptrs);
	free(m->lines);
	free(m->line_ptrs);
	free(m->samples);
	free(m->sample_ptrs);
	free(m->values);
	free(m->labels);
	free(m->label_ptrs);
	free(m->comments);
	free(m->comment_buf);
	free(m->timeline.time_delta);
	free(m->timeline.sample);
	free(m->timeline.value);
}

#define S(x)                                  \
	do {                                  \
		int64_t s_ = str_id(&b->strs, (x)); \
		if (s_ < 0)                   \
			return -ENOMEM;       \
		dst = s_;                     \
	} while (0)

static int build_header(struct builder *b, struct messages *m)
{
	const struct profile *p = b->p;
	static const struct value_type fallback = { "samples", "count" };
	unsigned nv = p->nvalues ? p->nvalues : 1;
	int64_t dst;

	m->vtypes = calloc(nv, sizeof(*m->vtypes));
	m->vtype_ptrs = calloc(nv, sizeof(*m->vtype_ptrs));
	if (!m->vtypes || !m->vtype_ptrs)
		return -ENOMEM;
	for (unsigned v = 0; v < nv; v++) {
		const struct value_type *vt = p->nvalues ? &p->value_types[v] : &fallback;

		perftools__profiles__value_type__init(&m->vtypes[v]);
		S(vt->type);
		m->vtypes[v].type = dst;
		S(vt->unit);
		m->vtypes[v].unit = dst;
		m->vtype_ptrs[v] = &m->vtypes[v];
	}
	m->prof.n_sample_type = nv;
	m->prof.sample_type = m->vtype_ptrs;

	if (p->event) {
		perftools__profiles__value_type__init(&m->period_type);
		S(p->event);
		m->period_type.type = dst;
		S(p->interval_unit ? p->interval_unit : "count");
		m->period_type.unit = dst;
		m->prof.period_type = &m->period_type;
		m->prof.period = (int64_t)p->interval;
	}
	m->prof.time_nanos = (int64_t)p->start_ns;
	m->prof.duration_nanos = (int64_t)p->duration_ns;

	/* Notes, then what degraded: pprof shows comments with -comments. */
	m->comments = calloc(p->nnotes + 4, sizeof(*m->comments));
	m->comment_buf = calloc(4, sizeof(*m->comment_buf));
	if (!m->comments || !m->comment_buf)
		return -ENOMEM;
	for (unsigned i = 0; i < p->nnotes; i++) {
		S(p->notes[i]);
		m->comments[m->prof.n_comment++] = dst;
	}
	{
		const struct profile_degraded *dg = &p->degraded;
		unsigned nb = 0;

		if (p->command || p->pid) {
			snprintf(m->comment_buf[nb], sizeof(m->comment_buf[0]),
				 "target: pid %d%s%s%s", (int)p->pid,
				 p->command ? " (" : "", p->command ? p->command : "",
				 p->command ? ")" : "");
			nb++;
		}
		if (dg->lost_samples || dg->truncated_stacks ||
		    dg->unsymbolized_frames) {
			snprintf(m->comment_buf[nb], sizeof(m->comment_buf[0]),
				 "degraded: %" PRIu64 " lost samples, %" PRIu64
				 " truncated stacks, %" PRIu64
				 " frames without symbols",
				 dg->lost_samples, dg->truncated_stacks,
				 dg->unsymbolized_frames);
			nb++;
		}
		for (unsigned i = 0; i < nb; i++) {
			S(m->comment_buf[i]);
			m->comments[m->prof.n_comment++] = dst;
		}
	}
	m->prof.comment = m->comments;
	return 0;
}

static int build_mappings(struct builder *b, struct messages *m)
{
	const struct profile *p = b->p;
	uint64_t *limit = NULL;
	bool *files = NULL, *lines = NULL, *inlined = NULL;
	uint32_t id;
	int64_t dst;
	int r = -ENOMEM;

	/* pprof takes mapping 0 for the main binary ("File:" in its
	 * reports): the module of a FRAME_USER frame, when there is one. Then
	 * the profile's modules, in order, and any module a frame names that
	 * the source did not list. */
	for (size_t f = 0; f < p->nframes; f++)
		if (p->frames[f].kind == FRAME_USER && p->frames[f].module) {
			const char *bid = NULL;

			for (size_t i = 0; i < p->nmodules; i++)
				if (p->modules[i].path == p->frames[f].module)
					bid = p->modules[i].build_id;
			if (mapping_of(b, p->frames[f].module, bid, &id) < 0)
				goto out;
			break;
		}
	for (size_t i = 0; i < p->nmodules; i++)
		if (mapping_of(b, p->modules[i].path, p->modules[i].build_id, &id) < 0)
			goto out;
	for (size_t f = 0; f < p->nframes; f++)
		if (p->frames[f].module &&
		    mapping_of(b, p->frames[f].module, NULL, &id) < 0)
			goto out;
	limit = calloc(b->nmaps + 1, sizeof(*limit));
	files = calloc(b->nmaps + 1, sizeof(*files));
	lines = calloc(b->nmaps + 1, sizeof(*lines));
	inlined = calloc(b->nmaps + 1, sizeof(*inlined));
	m->maps = calloc(b->nmaps + 1, sizeof(*m->maps));
	m->map_ptrs = calloc(b->nmaps + 1, sizeof(*m->map_ptrs));
	if (!limit || !files || !lines || !inlined || !m->maps || !m->map_ptrs)
		goto out;
	for (size_t f = 0; f < p->nframes; f++) {
		const struct frame *fr = &p->frames[f];

		if (!fr->module || mapping_of(b, fr->module, NULL, &id) < 0)
			continue;
		if (fr->address >= limit[id])
			limit[id] = fr->address + 1;
		files[id] |= fr->file != NULL;
		lines[id] |= fr->line != 0;
		inlined[id] |= fr->kind == FRAME_INLINED;
	}
	for (size_t i = 0; i < b->nmaps; i++) {
		pb_mapping *mp = &m->maps[i];

		perftools__profiles__mapping__init(mp);
		mp->id = i + 1;
		mp->memory_start = 0;
		mp->memory_limit = limit[i];
		mp->file_offset = 0;
		r = -ENOMEM;
		dst = str_id(&b->strs, b->maps[i].path);
		if (dst < 0)
			goto out;
		mp->filename = dst;
		dst = str_id(&b->strs, b->maps[i].build_id);
		if (dst < 0)
			goto out;
		mp->build_id = dst;
		mp->has_functions = true;
		mp->has_filenames = files[i];
		mp->has_line_numbers = lines[i];
		mp->has_inline_frames = inlined[i];
		m->map_ptrs[i] = mp;
	}
	m->prof.n_mapping = b->nmaps;
	m->prof.mapping = m->map_ptrs;
	r = 0;
out:
	free(limit);
	free(files);
	free(lines);
	free(inlined);
	return r;
}

static int build_functions_locations(struct builder *b, struct messages *m)
{
	const struct profile *p = b->p;
	size_t nl = 0;
	int64_t dst;

	m->fns = calloc(b->nfns + 1, sizeof(*m->fns));
	m->fn_ptrs = calloc(b->nfns + 1, sizeof(*m->fn_ptrs));
	m->locs = calloc(b->nlocs + 1, sizeof(*m->locs));
	m->loc_ptrs = calloc(b->nlocs + 1, sizeof(*m->loc_ptrs));
	m->lines = calloc(b->nlines + 1, sizeof(*m->lines));
	m->line_ptrs = calloc(b->nlines + 1, sizeof(*m->line_ptrs));
	if (!m->fns || !m->fn_ptrs || !m->locs || !m->loc_ptrs || !m->lines ||
	    !m->line_ptrs)
		return -ENOMEM;
	for (size_t i = 0; i < b->nfns; i++) {
		pb_function *fn = &m->fns[i];

		perftools__profiles__function__init(fn);
		fn->id = i + 1;
		S(b->fns[i].name);
		fn->name = dst;
		/* The model keeps only the demangled name. */
		fn->system_name = dst;
		S(b->fns[i].file);
		fn->filename = dst;
		m->fn_ptrs[i] = fn;
	}
	for (size_t i = 0; i < b->nlocs; i++) {
		pb_location *loc = &m->locs[i];
		const uint32_t *f = b->seq + b->locs[i].first;
		uint32_t len = b->locs[i].len;
		const struct frame *phys = &p->frames[f[0]];
		uint32_t map;

		perftools__profiles__location__init(loc);
		loc->id = i + 1;
		if (phys->module && mapping_of(b, phys->module, NULL, &map) == 0)
			loc->mapping_id = map + 1;
		loc->address = phys->address;
		loc->n_line = len;
		loc->line = m->line_ptrs + nl;
		/* Lines leaf first: the innermost inlined function, ..., then
		 * the physical frame's own function. */
		for (uint32_t k = 0; k < len; k++) {
			pb_line *ln = &m->lines[nl];
			const struct frame *fr = &p->frames[f[len - 1 - k]];

			perftools__profiles__line__init(ln);
			ln->function_id = (uint64_t)b->frame_fn[f[len - 1 - k]] + 1;
			ln->line = fr->line;
			m->line_ptrs[nl++] = ln;
		}
		m->loc_ptrs[i] = loc;
	}
	m->prof.n_function = b->nfns;
	m->prof.function = m->fn_ptrs;
	m->prof.n_location = b->nlocs;
	m->prof.location = m->loc_ptrs;
	return 0;
}

static int build_samples(struct builder *b, struct messages *m)
{
	const struct profile *p = b->p;
	unsigned nv = p->nvalues ? p->nvalues : 1;
	int64_t dst, k_thread, k_tid;

	m->samples = calloc(p->nsamples + 1, sizeof(*m->samples));
	m->sample_ptrs = calloc(p->nsamples + 1, sizeof(*m->sample_ptrs));
	m->values = calloc((p->nsamples + 1) * nv, sizeof(*m->values));
	m->labels = calloc(2 * p->nthreads + 1, sizeof(*m->labels));
	m->label_ptrs = calloc(2 * p->nthreads + 1, sizeof(*m->label_ptrs));
	if (!m->samples || !m->sample_ptrs || !m->values || !m->labels ||
	    !m->label_ptrs)
		return -ENOMEM;
	S("thread");
	k_thread = dst;
	S("thread_id");
	k_tid = dst;
	/* Two labels per thread, shared by all its samples. */
	for (size_t t = 0; t < p->nthreads; t++) {
		pb_label *name = &m->labels[2 * t], *tid = &m->labels[2 * t + 1];

		perftools__profiles__label__init(name);
		perftools__profiles__label__init(tid);
		name->key = k_thread;
		S(*p->threads[t].name ? p->threads[t].name : "?");
		name->str = dst;
		tid->key = k_tid;
		tid->num = p->threads[t].tid;
		m->label_ptrs[2 * t] = name;
		m->label_ptrs[2 * t + 1] = tid;
	}
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct sample *s = &p->samples[i];
		const struct thread *th = &p->threads[s->thread];
		pb_sample *ps = &m->samples[i];

		perftools__profiles__sample__init(ps);
		ps->n_location_id = b->stack_loc_n[s->stack];
		ps->location_id = b->stack_locs + b->stack_loc_first[s->stack];
		ps->n_value = nv;
		ps->value = m->values + i * nv;
		for (unsigned v = 0; v < p->nvalues; v++)
			ps->value[v] = s->values[v];
		/* tid 0 with no name: the source knew no thread (collapsed). */
		if (th->tid || *th->name) {
			ps->n_label = 2;
			ps->label = m->label_ptrs + 2 * s->thread;
		}
		m->sample_ptrs[i] = ps;
	}
	m->prof.n_sample = p->nsamples;
	m->prof.sample = m->sample_ptrs;
	return 0;
}

#undef S

/* The timeline, each event pointing at its sample (pprof has no stack
 * ids). Values are written only when one differs from 1, the common case
 * of one event per sample taken. */
static int build_timeline(const struct profile *p, struct messages *m)
{
	pb_timeline *tl = &m->timeline;
	int64_t prev = (int64_t)p->start_ns;
	bool ones = true;

	perftools__profiles__timeline__init(tl);
	if (!p->nevents && !p->events_dropped)
		return 0;
	tl->time_delta = malloc(p->nevents * sizeof(*tl->time_delta) + 1);
	tl->sample = malloc(p->nevents * sizeof(*tl->sample) + 1);
	tl->value = malloc(p->nevents * sizeof(*tl->value) + 1);
	if (!tl->time_delta || !tl->sample || !tl->value)
		return -ENOMEM;
	for (size_t i = 0; i < p->nevents; i++) {
		const struct sample_event *e = &p->events[i];
		uint32_t s = profile_find_sample(p, e->stack, e->thread);

		/* An event of a sample the profile no longer has (a source
		 * that dropped it) has nothing to point at. */
		if (s == UINT32_MAX) {
			tl->dropped++;
			continue;
		}
		tl->time_delta[tl->n_time_delta++] = (int64_t)e->time_ns - prev;
		prev = (int64_t)e->time_ns;
		tl->sample[tl->n_sample++] = s;
		tl->value[tl->n_value++] = e->value;
		ones = ones && e->value == 1;
	}
	if (ones)
		tl->n_value = 0;
	tl->dropped += p->events_dropped;
	m->prof.nprof_timeline = tl;
	return 0;
}

/* Deflates buf into out as one gzip member. */
static int write_gzip(const uint8_t *buf, size_t len, FILE *out)
{
	z_stream z = { 0 };
	uint8_t chunk[65536];
	int zr, r = 0;

	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = (uint8_t *)buf;
	/* zlib counts in uInt: feed huge buffers in slices. */
	do {
		size_t slice = len > (1u << 30) ? (1u << 30) : len;
		int flush;

		z.next_in = (uint8_t *)buf;
		z.avail_in = (uInt)slice;
		buf += slice;
		len -= slice;
		flush = len ? Z_NO_FLUSH : Z_FINISH;
		do {
			z.next_out = chunk;
			z.avail_out = sizeof(chunk);
			zr = deflate(&z, flush);
			if (zr == Z_STREAM_ERROR) {
				r = -EIO;
				goto out;
			}
			if (fwrite(chunk, 1, sizeof(chunk) - z.avail_out, out) !=
			    sizeof(chunk) - z.avail_out) {
				r = -EIO;
				goto out;
			}
		} while (z.avail_out == 0);
	} while (len);
	if (zr != Z_STREAM_END)
		r = -EIO;
out:
	deflateEnd(&z);
	return r;
}

int output_write_pprof(const struct profile *p, const struct output_options *o,
		       FILE *out)
{
	struct builder b = { .p = p };
	struct messages m = { 0 };
	uint8_t *packed = NULL;
	size_t len;
	int r = -ENOMEM;

	(void)o;
	id_index_init(&b.strs.index);
	id_index_init(&b.fn_index);
	id_index_init(&b.loc_index);
	id_index_init(&b.map_index);
	perftools__profiles__profile__init(&m.prof);
	if (str_id(&b.strs, "") != 0)
		goto out;
	b.frame_fn = malloc((p->nframes + 1) * sizeof(*b.frame_fn));
	if (!b.frame_fn)
		goto out;
	memset(b.frame_fn, 0xff, (p->nframes + 1) * sizeof(*b.frame_fn));

	if ((r = build_header(&b, &m)) < 0 || (r = build_stacks(&b)) < 0 ||
	    (r = build_mappings(&b, &m)) < 0 ||
	    (r = build_functions_locations(&b, &m)) < 0 ||
	    (r = build_samples(&b, &m)) < 0 ||
	    (r = build_timeline(p, &m)) < 0)
		goto out;
	/* Last: every string is in the table now. */
	m.prof.n_string_table = b.strs.n;
	m.prof.string_table = b.strs.items;

	r = -ENOMEM;
	len = perftools__profiles__profile__get_packed_size(&m.prof);
	packed = malloc(len ? len : 1);
	if (!packed)
		goto out;
	perftools__profiles__profile__pack(&m.prof, packed);
	r = write_gzip(packed, len, out);
out:
	free(packed);
	messages_release(&m);
	builder_release(&b);
	return r;
}
