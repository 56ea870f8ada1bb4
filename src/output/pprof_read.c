/* pprof reader: a profile.proto message, gzipped or not, back into the
 * model. The bytes are untrusted (a file from anywhere): every index is
 * checked, sizes are bounded (pprof.h), and value sums are checked for
 * overflow before the model adds them. */
#include "output/pprof.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/hash.h"
#include "base/id_index.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Function pb_function;

bool pprof_is_gzip(const void *data, size_t len)
{
	const uint8_t *b = data;

	return len >= 2 && b[0] == 0x1f && b[1] == 0x8b;
}

/* libdeflate, when the host has it, inflates a whole buffer in about 0.4
 * of zlib's time (bench/convert-speed's 4.3 MB profile: 22 ms against 55
 * here), a tenth of a conversion. It is dlopen()ed by the readers that
 * use it, not linked: every nprof command would load it
 * (tests/integration/cli_libs.allow). Its ABI, declared here (no build
 * dependency), has been stable since 1.0. */
struct libdeflate_decompressor;
enum { LIBDEFLATE_SUCCESS = 0, LIBDEFLATE_INSUFFICIENT_SPACE = 3 };

static struct {
	struct libdeflate_decompressor *(*alloc)(void);
	void (*free)(struct libdeflate_decompressor *d);
	int (*gzip)(struct libdeflate_decompressor *d, const void *in,
		    size_t in_len, void *out, size_t out_avail,
		    size_t *ret_in_used, size_t *ret_out_len);
} libdeflate; /* written once, under libdeflate_once */
static pthread_once_t libdeflate_once = PTHREAD_ONCE_INIT;

static void libdeflate_load(void)
{
	void *h = dlopen("libdeflate.so.0", RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return;
	libdeflate.alloc = (struct libdeflate_decompressor *(*)(void))
		dlsym(h, "libdeflate_alloc_decompressor");
	libdeflate.free = (void (*)(struct libdeflate_decompressor *))
		dlsym(h, "libdeflate_free_decompressor");
	libdeflate.gzip = (int (*)(struct libdeflate_decompressor *, const void *,
				   size_t, void *, size_t, size_t *, size_t *))
		dlsym(h, "libdeflate_gzip_decompress_ex");
	if (!libdeflate.alloc || !libdeflate.free || !libdeflate.gzip) {
		libdeflate.gzip = NULL;
		dlclose(h);
	}
}

/* The first gzip member of in[0..len) through libdeflate, into a buffer
 * sized by the trailer's length (a hint: libdeflate checks the data, and
 * the CRC). Returns 0, -EFBIG (diag set), or -ENOTSUP when gunzip should
 * do it (no libdeflate, bad data: zlib then says what is wrong). */
static int gunzip_libdeflate(const uint8_t *in, size_t len, uint8_t **ret_buf,
			     size_t *ret_len, struct diag *d)
{
	struct libdeflate_decompressor *dec;
	uint8_t *buf = NULL;
	size_t cap, in_used, got = 0;
	int lr, r = -ENOTSUP;

	pthread_once(&libdeflate_once, libdeflate_load);
	if (!libdeflate.gzip || len < 18) /* a header and a trailer */
		return -ENOTSUP;
	cap = (size_t)in[len - 4] | (size_t)in[len - 3] << 8 |
	      (size_t)in[len - 2] << 16 | (size_t)in[len - 1] << 24;
	/* Deflate expands 1,032 times at most: a hint past that, or below
	 * the input's size, is not believed. */
	if (cap < len || cap / 1032 > len)
		cap = len * 4;
	if (cap > PPROF_MAX_DECOMPRESSED)
		cap = PPROF_MAX_DECOMPRESSED;
	dec = libdeflate.alloc();
	if (!dec)
		return -ENOTSUP;
	for (;;) {
		free(buf);
		buf = malloc(cap);
		if (!buf) {
			r = -ENOMEM;
			break;
		}
		lr = libdeflate.gzip(dec, in, len, buf, cap, &in_used, &got);
		if (lr == LIBDEFLATE_SUCCESS) {
			*ret_buf = buf;
			*ret_len = got;
			buf = NULL;
			r = 0;
			break;
		}
		if (lr != LIBDEFLATE_INSUFFICIENT_SPACE)
			break;
		if (cap >= PPROF_MAX_DECOMPRESSED) {
			r = diag_set(d, -EFBIG,
				     "the profile decompresses to more than %llu MiB",
				     PPROF_MAX_DECOMPRESSED >> 20);
			break;
		}
		cap = cap > PPROF_MAX_DECOMPRESSED / 2 ? PPROF_MAX_DECOMPRESSED : cap * 2;
	}
	libdeflate.free(dec);
	free(buf);
	return r;
}

/* Inflates a gzip (or zlib) stream into a malloc'ed buffer, at most
 * PPROF_MAX_DECOMPRESSED bytes: a small file must not expand into all of
 * memory. */
static int gunzip(const uint8_t *in, size_t len, uint8_t **ret_buf,
		  size_t *ret_len, struct diag *d)
{
	z_stream z = { 0 };
	uint8_t *buf = NULL;
	size_t cap = 0, used = 0;
	int zr, r;

	if (inflateInit2(&z, 15 + 32) != Z_OK) /* 32: gzip or zlib header */
		return -ENOMEM;
	z.next_in = (uint8_t *)in;
	z.avail_in = (uInt)len; /* len <= PPROF_MAX_INPUT < UINT_MAX */
	do {
		if (used == cap) {
			size_t ncap = cap ? cap * 2 : (len < 65536 ? 65536 : len * 4);
			uint8_t *n;

			if (cap >= PPROF_MAX_DECOMPRESSED) {
				r = diag_set(d, -EFBIG,
					     "the profile decompresses to more than %llu MiB",
					     PPROF_MAX_DECOMPRESSED >> 20);
				goto out;
			}
			if (ncap > PPROF_MAX_DECOMPRESSED)
				ncap = PPROF_MAX_DECOMPRESSED;
			n = realloc(buf, ncap);
			if (!n) {
				r = -ENOMEM;
				goto out;
			}
			buf = n;
			cap = ncap;
		}
		z.next_out = buf + used;
		z.avail_out = (uInt)(cap - used);
		zr = inflate(&z, Z_NO_FLUSH);
		used = cap - z.avail_out;
		if (zr == Z_BUF_ERROR && z.avail_in == 0) {
			r = diag_set(d, -EBADMSG, "the gzip data is truncated");
			goto out;
		}
		if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) {
			r = diag_set(d, -EBADMSG, "the gzip data is corrupt (%s)",
				     z.msg ? z.msg : "inflate failed");
			goto out;
		}
	} while (zr != Z_STREAM_END);
	*ret_buf = buf;
	*ret_len = used;
	buf = NULL;
	r = 0;
out:
	inflateEnd(&z);
	free(buf);
	return r;
}

/* protobuf-c's allocator: an arena, with a budget. A message of N bytes
 * can unpack into many times N (every empty sub-message is a struct), so
 * the total a parse may allocate is capped. A profile unpacks into
 * millions of small structs (a sample, its location ids, its values...),
 * all freed together: taken in order from big chunks and dropped with
 * them, they cost a fraction of malloc and free each. */
struct budget {
	size_t left;
	bool exhausted;
	struct arena_chunk *chunks;
	size_t used, size; /* of chunks, the newest */
};

struct arena_chunk {
	struct arena_chunk *next;
	max_align_t data[];
};

#define ARENA_CHUNK (1u << 20)

static void *budget_alloc(void *data, size_t size)
{
	struct budget *b = data;
	struct arena_chunk *c;
	size_t want = (size + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);

	if (want > b->left) {
		b->exhausted = true;
		return NULL;
	}
	if (!b->chunks || want > b->size - b->used) {
		size_t size_new = want > ARENA_CHUNK / 4 ? want : ARENA_CHUNK;

		c = malloc(sizeof(*c) + size_new);
		if (!c)
			return NULL;
		/* A big block gets a chunk of its own, behind the newest: the
		 * rest of that one is still used. */
		if (b->chunks && size_new != ARENA_CHUNK) {
			c->next = b->chunks->next;
			b->chunks->next = c;
			b->left -= want;
			return c->data;
		}
		c->next = b->chunks;
		b->chunks = c;
		b->used = 0;
		b->size = size_new;
	}
	b->left -= want;
	b->used += want;
	return (char *)b->chunks->data + b->used - want;
}

/* Freed with the arena (budget_release). */
static void budget_free(void *data, void *ptr)
{
	(void)data;
	(void)ptr;
}

static void budget_release(struct budget *b)
{
	while (b->chunks) {
		struct arena_chunk *c = b->chunks;

		b->chunks = c->next;
		free(c);
	}
}

/* The samples are read here, from the message's bytes, not unpacked by
 * protobuf-c: they are most of a profile (a million location ids for
 * 100,000 stacks), and protobuf-c made a struct and two arrays of each
 * in the arena, then the reader walked them once. The rest of the message
 * (names, functions, locations: small) is still protobuf-c's. What the
 * wire format allows for a sample is all accepted: packed or unpacked
 * repeated fields, unknown fields, fields in any order. */

/* protobuf's wire types. */
enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2, WIRE_I32 = 5 };
#define PROFILE_SAMPLE 2 /* Profile.sample */

/* Reads a varint at *pp (at most 10 bytes, as protobuf-c). */
static inline bool wire_varint(const uint8_t **pp, const uint8_t *end,
			       uint64_t *ret)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;

	if (p < end && *p < 0x80) {
		*ret = *p;
		*pp = p + 1;
		return true;
	}
	for (unsigned shift = 0; shift < 64 && p < end; shift += 7) {
		uint8_t b = *p++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (b < 0x80) {
			*ret = v;
			*pp = p;
			return true;
		}
	}
	return false;
}

/* Reads a field's tag: its number (0 is malformed) and wire type. */
static inline bool wire_tag(const uint8_t **pp, const uint8_t *end,
			    uint64_t *ret_field, unsigned *ret_type)
{
	uint64_t tag;

	if (!wire_varint(pp, end, &tag) || tag >> 3 == 0)
		return false;
	*ret_field = tag >> 3;
	*ret_type = (unsigned)(tag & 7);
	return true;
}

/* Steps over a field's value: a length-delimited one's bytes are *ret_body
 * and *ret_len. Groups (wire types 3 and 4, deprecated) are malformed, as
 * protobuf-c has them. */
static bool wire_skip(const uint8_t **pp, const uint8_t *end, unsigned type,
		      const uint8_t **ret_body, size_t *ret_len)
{
	uint64_t n;

	switch (type) {
	case WIRE_VARINT:
		return wire_varint(pp, end, &n);
	case WIRE_I64:
		n = 8;
		break;
	case WIRE_I32:
		n = 4;
		break;
	case WIRE_LEN:
		if (!wire_varint(pp, end, &n))
			return false;
		break;
	default:
		return false;
	}
	if (n > (uint64_t)(end - *pp))
		return false;
	if (ret_body) {
		*ret_body = *pp;
		*ret_len = (size_t)n;
	}
	*pp += n;
	return true;
}

/* The next sample of the Profile message b..end from *pp: its bytes.
 * split_samples has checked the message's framing. */
static bool next_sample(const uint8_t **pp, const uint8_t *end,
			const uint8_t **ret_body, size_t *ret_len)
{
	while (*pp < end) {
		uint64_t field;
		unsigned type;
		const uint8_t *body;
		size_t len;

		if (!wire_tag(pp, end, &field, &type) ||
		    !wire_skip(pp, end, type, &body, &len))
			return false;
		if (field == PROFILE_SAMPLE && type == WIRE_LEN) {
			*ret_body = body;
			*ret_len = len;
			return true;
		}
	}
	return false;
}

/* Copies the Profile message b[0..len) but its samples to rest (len bytes
 * at least), for protobuf-c; counts the samples. A sample field of another
 * wire type is copied too, for protobuf-c to refuse. Returns 0, or
 * -EBADMSG when the message's framing is broken. */
static int split_samples(const uint8_t *b, size_t len, uint8_t *rest,
			 size_t *ret_rest_len, size_t *ret_nsamples)
{
	const uint8_t *p = b, *end = b + len;
	size_t used = 0, n = 0;

	while (p < end) {
		const uint8_t *field_start = p;
		uint64_t field;
		unsigned type;

		if (!wire_tag(&p, end, &field, &type) ||
		    !wire_skip(&p, end, type, NULL, NULL))
			return -EBADMSG;
		if (field == PROFILE_SAMPLE && type == WIRE_LEN) {
			n++;
			continue;
		}
		memcpy(rest + used, field_start, (size_t)(p - field_start));
		used += (size_t)(p - field_start);
	}
	*ret_rest_len = used;
	*ret_nsamples = n;
	return 0;
}

/* A repeated integer field's value(s) at *pp: one varint or, packed, a
 * length of them. They go to out[*n...] while *n < max; *n counts them
 * all. */
static bool wire_ints(const uint8_t **pp, const uint8_t *end, unsigned type,
		      uint64_t *out, size_t max, size_t *n)
{
	const uint8_t *p, *stop;
	size_t len;
	uint64_t v;

	if (type == WIRE_VARINT) {
		if (!wire_varint(pp, end, &v))
			return false;
		if (*n < max)
			out[*n] = v;
		++*n;
		return true;
	}
	if (type != WIRE_LEN || !wire_skip(pp, end, type, &p, &len))
		return false;
	stop = p + len;
	/* Location ids (most of a profile) are one to three bytes: those
	 * without a loop while a longest varint fits before stop. */
	while (stop - p >= 10) {
		if (p[0] < 0x80) {
			v = p[0];
			p += 1;
		} else if (p[1] < 0x80) {
			v = (p[0] & 0x7fu) | (uint64_t)p[1] << 7;
			p += 2;
		} else if (p[2] < 0x80) {
			v = (p[0] & 0x7fu) | (uint64_t)(p[1] & 0x7f) << 7 |
			    (uint64_t)p[2] << 14;
			p += 3;
		} else if (!wire_varint(&p, stop, &v)) {
			return false;
		}
		if (*n < max)
			out[*n] = v;
		++*n;
	}
	while (p < stop) {
		if (!wire_varint(&p, stop, &v))
			return false;
		if (*n < max)
			out[*n] = v;
		++*n;
	}
	return true;
}

/* An index from the format's uint64 ids to array positions. */
struct id_map {
	struct id_index index;
	const uint64_t *ids; /* ids[i] is the id at position i */
	size_t n;
};

static int id_match(const void *ctx, uint32_t pos, const void *key)
{
	return ((const struct id_map *)ctx)->ids[pos] == *(const uint64_t *)key;
}

static inline uint32_t id_map_find(const struct id_map *m, uint64_t id)
{
	/* Writers number ids 1, 2, 3... (nprof and Go do): then an id is
	 * at its own position, found without hashing, millions of times. */
	if (id - 1 < m->n && m->ids[id - 1] == id)
		return (uint32_t)(id - 1);
	return id_index_find(&m->index, hash_u64(id), id_match, m, &id);
}

/* Indexes ids[0..n); a zero or repeated id is malformed. */
static int id_map_build(struct id_map *m, const uint64_t *ids, size_t n,
			const char *what, struct diag *d)
{
	m->ids = ids;
	for (size_t i = 0; i < n; i++) {
		if (!ids[i] || id_map_find(m, ids[i]) != ID_NONE)
			return diag_set(d, -EBADMSG, "%s id %" PRIu64 " is %s",
					what, ids[i], ids[i] ? "repeated" : "zero");
		if (id_index_insert(&m->index, hash_u64(ids[i]), (uint32_t)i) < 0)
			return -ENOMEM;
	}
	/* Only now: until then id_map_find must ask the index, which holds
	 * the ids seen so far, not all of ids. */
	m->n = n;
	return 0;
}

struct reader {
	const pb_profile *pb; /* the message but its samples */
	const uint8_t *msg;   /* the whole message, for its samples */
	size_t msg_len, nsamples;
	struct budget *budget;
	struct profile *p;
	struct diag *d;
	char **strs; /* NUL-terminated copies of the string table */
	uint64_t *map_ids, *fn_ids, *loc_ids;
	struct id_map maps, fns, locs;
	/* Per location: its frames, root first, in loc_frames. */
	uint32_t *loc_first, *loc_n, *loc_frames;
	size_t nloc_frames;
	int64_t abs_total[PROFILE_MAX_VALUES];
	/* Per pprof sample: its (stack, thread) in the model, for the
	 * timeline's events to point at. */
	uint32_t (*sample_ids)[2];
};

/* String i, or NULL (and a diag) when i is out of the table. */
static const char *str_at(struct reader *rd, int64_t i, const char *what)
{
	if (i < 0 || (uint64_t)i >= rd->pb->n_string_table) {
		diag_set(rd->d, -EBADMSG, "%s refers to string %" PRId64
			 ", past the string table (%zu)", what, i,
			 rd->pb->n_string_table);
		return NULL;
	}
	return rd->strs[i];
}

static int copy_strings(struct reader *rd)
{
	const pb_profile *pb = rd->pb;

	rd->strs = calloc(pb->n_string_table + 1, sizeof(*rd->strs));
	if (!rd->strs)
		return -ENOMEM;
	for (size_t i = 0; i < pb->n_string_table; i++) {
		const ProtobufCBinaryData *b = &pb->string_table[i];

		/* An empty string may come with no data at all. */
		rd->strs[i] = b->len ? strndup((const char *)b->data, b->len) :
				       strdup("");
		if (!rd->strs[i])
			return -ENOMEM;
	}
	return 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/* The kind of a location's physical frame: by name first, then by its
 * mapping (mapping 0 is, by the format's convention, the main binary). */
static enum frame_kind physical_kind(const char *name, const char *module,
				     uint32_t map_pos)
{
	if (profile_is_root_name(name, strlen(name)))
		return FRAME_THREAD;
	if (ends_with(name, "_[k]") ||
	    (module && (!strncmp(module, "[kernel", 7) ||
			!strncmp(module, "[vmlinux", 8))))
		return FRAME_KERNEL;
	if (map_pos == ID_NONE || map_pos == 0)
		return FRAME_USER;
	return FRAME_LIBRARY;
}

static int intern(struct reader *rd, const struct frame *f, uint32_t *ret_id)
{
	return profile_intern_frame(rd->p, f, ret_id);
}

/* Turns each location into its frames, root first: the physical frame
 * (the location's last line) and then the functions inlined into it. */
static int read_locations(struct reader *rd)
{
	const pb_profile *pb = rd->pb;
	size_t cap = 0;

	for (size_t i = 0; i < pb->n_location; i++)
		cap += pb->location[i]->n_line ? pb->location[i]->n_line : 1;
	rd->loc_first = calloc(pb->n_location + 1, sizeof(*rd->loc_first));
	rd->loc_n = calloc(pb->n_location + 1, sizeof(*rd->loc_n));
	rd->loc_frames = calloc(cap + 1, sizeof(*rd->loc_frames));
	if (!rd->loc_first || !rd->loc_n || !rd->loc_frames)
		return -ENOMEM;
	for (size_t i = 0; i < pb->n_location; i++) {
		const pb_location *loc = pb->location[i];
		uint32_t map = ID_NONE;
		const char *module = NULL;
		uint64_t address = loc->address;
		int r;

		if (loc->mapping_id) {
			const pb_mapping *mp;

			map = id_map_find(&rd->maps, loc->mapping_id);
			if (map == ID_NONE)
				return diag_set(rd->d, -EBADMSG,
						"location %" PRIu64 " names mapping %" PRIu64
						", which does not exist",
						loc->id, loc->mapping_id);
			mp = pb->mapping[map];
			module = str_at(rd, mp->filename, "a mapping's file name");
			if (!module)
				return -EBADMSG;
			if (!*module)
				module = NULL;
			/* The model keeps file offsets. */
			if (address >= mp->memory_start)
				address = address - mp->memory_start + mp->file_offset;
		}
		rd->loc_first[i] = (uint32_t)rd->nloc_frames;
		if (!loc->n_line) {
			/* Not symbolized: name it by address, as nprof does. */
			char name[PATH_MAX + 32];
			struct frame f = { .name = name, .module = module,
					   .kind = FRAME_UNKNOWN, .address = address };

			if (module)
				snprintf(name, sizeof(name), "%s+0x%" PRIx64,
					 module, address);
			else
				snprintf(name, sizeof(name), "0x%" PRIx64, address);
			r = intern(rd, &f, &rd->loc_frames[rd->nloc_frames]);
			if (r < 0)
				return r;
			rd->nloc_frames++;
		}
		/* Lines are leaf first; the model wants the caller first. */
		for (size_t k = loc->n_line; k-- > 0;) {
			const Perftools__Profiles__Line *ln = loc->line[k];
			uint32_t fpos = id_map_find(&rd->fns, ln->function_id);
			const pb_function *fn;
			struct frame f = { .module = module, .address = address };

			if (fpos == ID_NONE)
				return diag_set(rd->d, -EBADMSG,
						"location %" PRIu64 " names function %" PRIu64
						", which does not exist",
						loc->id, ln->function_id);
			fn = pb->function[fpos];
			f.name = str_at(rd, fn->name, "a function name");
			f.file = str_at(rd, fn->filename, "a function's file name");
			if (!f.name || !f.file)
				return -EBADMSG;
			if (!*f.file)
				f.file = NULL;
			if (!*f.name)
				f.name = "[unknown]";
			f.line = ln->line > 0 && ln->line <= UINT32_MAX ?
					 (uint32_t)ln->line : 0;
			f.kind = k + 1 == loc->n_line ?
					 physical_kind(f.name, module, map) :
					 FRAME_INLINED;
			r = intern(rd, &f, &rd->loc_frames[rd->nloc_frames]);
			if (r < 0)
				return r;
			rd->nloc_frames++;
		}
		rd->loc_n[i] = (uint32_t)(rd->nloc_frames - rd->loc_first[i]);
	}
	return 0;
}

static int read_header(struct reader *rd)
{
	const pb_profile *pb = rd->pb;
	struct profile *p = rd->p;
	struct value_type vt[PROFILE_MAX_VALUES];
	size_t nv = pb->n_sample_type;
	int r;

	if (nv == 0)
		return diag_set(rd->d, -EBADMSG, "the profile has no sample types");
	if (nv > PROFILE_MAX_VALUES)
		nv = PROFILE_MAX_VALUES;
	for (size_t v = 0; v < nv; v++) {
		vt[v].type = str_at(rd, pb->sample_type[v]->type, "a sample type");
		vt[v].unit = str_at(rd, pb->sample_type[v]->unit, "a sample unit");
		if (!vt[v].type || !vt[v].unit)
			return -EBADMSG;
	}
	r = profile_set_value_types(p, vt, (unsigned)nv);
	if (r < 0)
		return r;
	if (pb->n_sample_type > PROFILE_MAX_VALUES)
		profile_add_note(p, "only the first %d of %zu sample types were kept",
				 PROFILE_MAX_VALUES, pb->n_sample_type);
	if (pb->period_type) {
		const char *type = str_at(rd, pb->period_type->type, "the period type");
		const char *unit = str_at(rd, pb->period_type->unit, "the period unit");

		if (!type || !unit)
			return -EBADMSG;
		p->event = *type ? profile_intern_string(p, type) : NULL;
		p->interval_unit = *unit ? profile_intern_string(p, unit) : NULL;
		if ((*type && !p->event) || (*unit && !p->interval_unit))
			return -ENOMEM;
	}
	if (!p->event)
		p->event = p->value_types[0].type;
	p->interval = pb->period > 0 ? (uint64_t)pb->period : 0;
	p->start_ns = pb->time_nanos > 0 ? (uint64_t)pb->time_nanos : 0;
	p->duration_ns = pb->duration_nanos > 0 ? (uint64_t)pb->duration_nanos : 0;
	/* The format does not say how the stacks were unwound. */
	p->unwinder = NULL;
	for (size_t i = 0; i < pb->n_comment; i++) {
		const char *c = str_at(rd, pb->comment[i], "a comment");

		if (!c)
			return -EBADMSG;
		r = profile_add_note(p, "%s", c);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < pb->n_mapping; i++) {
		const pb_mapping *mp = pb->mapping[i];
		const char *path = str_at(rd, mp->filename, "a mapping's file name");
		const char *bid = str_at(rd, mp->build_id, "a mapping's build-id");
		uint32_t id;

		if (!path || !bid)
			return -EBADMSG;
		if (!*path)
			continue;
		r = profile_intern_module(p, path, *bid ? bid : NULL, &id);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Sample and Label fields (profile.proto). */
enum { SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3 };
enum { LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3 };

/* A sample as read_samples needs it, read from its bytes. */
struct wire_sample {
	const uint8_t *body, *end; /* its bytes */
	uint64_t *locs;		   /* location ids, leaf first */
	size_t nlocs, locs_cap;
	uint64_t values[PROFILE_MAX_VALUES];
	size_t nvalues; /* all of them; the first PROFILE_MAX_VALUES kept */
};

/* A Label's key, str and num (0 when absent; the last one when
 * repeated, as protobuf has it). */
static bool decode_label(const uint8_t *p, const uint8_t *end, int64_t *ret_kv)
{
	ret_kv[0] = ret_kv[1] = ret_kv[2] = 0;
	while (p < end) {
		uint64_t field, v;
		unsigned type;

		if (!wire_tag(&p, end, &field, &type))
			return false;
		if (field >= LABEL_KEY && field <= LABEL_NUM) {
			if (type != WIRE_VARINT || !wire_varint(&p, end, &v))
				return false;
			ret_kv[field - LABEL_KEY] = (int64_t)v;
		} else if (!wire_skip(&p, end, type, NULL, NULL)) {
			return false;
		}
	}
	return true;
}

/* Reads the location ids and values of the sample in body[0..len), and
 * checks its labels' encoding (sample_thread reads them). Returns 0,
 * -EBADMSG (diag set), -EFBIG or -ENOMEM. */
static int decode_sample(struct reader *rd, const uint8_t *body, size_t len,
			 struct wire_sample *s)
{
	const uint8_t *p = body, *end = body + len;

	/* A location id takes a byte at least: len of them fit. */
	if (len > s->locs_cap) {
		size_t cap = len > 2 * s->locs_cap ? len : 2 * s->locs_cap;
		uint64_t *n;

		if ((cap - s->locs_cap) * sizeof(*n) > rd->budget->left)
			return diag_set(rd->d, -EFBIG,
					"the profile needs more than %llu MiB to parse",
					PPROF_MAX_UNPACKED >> 20);
		n = realloc(s->locs, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		rd->budget->left -= (cap - s->locs_cap) * sizeof(*n);
		s->locs = n;
		s->locs_cap = cap;
	}
	s->body = body;
	s->end = end;
	s->nlocs = s->nvalues = 0;
	while (p < end) {
		uint64_t field;
		unsigned type;
		bool ok;

		if (!wire_tag(&p, end, &field, &type))
			goto bad;
		switch (field) {
		case SAMPLE_LOCATION_ID:
			ok = wire_ints(&p, end, type, s->locs, s->locs_cap, &s->nlocs);
			break;
		case SAMPLE_VALUE:
			ok = wire_ints(&p, end, type, s->values, PROFILE_MAX_VALUES,
				       &s->nvalues);
			break;
		case SAMPLE_LABEL: {
			const uint8_t *label;
			size_t label_len;
			int64_t kv[3];

			ok = type == WIRE_LEN &&
			     wire_skip(&p, end, type, &label, &label_len) &&
			     decode_label(label, label + label_len, kv);
			break;
		}
		default:
			ok = wire_skip(&p, end, type, NULL, NULL);
		}
		if (!ok)
			goto bad;
	}
	return 0;
bad:
	return diag_set(rd->d, -EBADMSG, "not a pprof profile (the protobuf does not parse)");
}

/* The thread a sample's labels name: `thread` (a name) and `thread_id`
 * (a number), as nprof writes them. No labels: tid 0, no name. */
static int sample_thread(struct reader *rd, const struct wire_sample *s,
			 uint32_t *ret)
{
	const char *name = NULL;
	int64_t tid = 0;

	for (const uint8_t *p = s->body; p < s->end;) {
		uint64_t field;
		unsigned type;
		const uint8_t *label = NULL;
		size_t label_len = 0;
		int64_t kv[3]; /* key, str, num */
		const char *key;

		/* decode_sample has checked the encoding. */
		if (!wire_tag(&p, s->end, &field, &type) ||
		    !wire_skip(&p, s->end, type, &label, &label_len))
			return -EBADMSG;
		if (field != SAMPLE_LABEL || type != WIRE_LEN ||
		    !decode_label(label, label + label_len, kv))
			continue;
		key = str_at(rd, kv[0], "a label key");
		if (!key)
			return -EBADMSG;
		if (!strcmp(key, "thread") && kv[1]) {
			name = str_at(rd, kv[1], "a thread label");
			if (!name)
				return -EBADMSG;
		} else if (!strcmp(key, "thread_id") || !strcmp(key, "tid")) {
			tid = kv[2];
		}
	}
	if (tid < 0 || tid > INT_MAX)
		tid = 0;
	if (name && !strcmp(name, "?"))
		name = NULL;
	return profile_intern_thread(rd->p, (pid_t)tid, name, ret);
}

static int read_samples(struct reader *rd)
{
	const pb_profile *pb = rd->pb;
	struct profile *p = rd->p;
	uint32_t *frames = malloc(PPROF_MAX_DEPTH * sizeof(*frames));
	struct wire_sample ws = { 0 };
	const uint8_t *at = rd->msg, *msg_end = rd->msg + rd->msg_len;
	uint64_t cut = 0;
	int r = -ENOMEM;

	rd->sample_ids = malloc((rd->nsamples + 1) * sizeof(*rd->sample_ids));
	if (!frames || !rd->sample_ids)
		goto out;
	for (size_t i = 0; i < rd->nsamples; i++) {
		int64_t values[PROFILE_MAX_VALUES] = { 0 };
		uint32_t depth = 0, stack, thread;
		bool truncated = false;
		const uint8_t *body;
		size_t len;

		/* split_samples counted them, the framing checked. */
		if (!next_sample(&at, msg_end, &body, &len)) {
			r = -EBADMSG;
			goto out;
		}
		r = decode_sample(rd, body, len, &ws);
		if (r < 0)
			goto out;
		if (ws.nvalues != pb->n_sample_type) {
			r = diag_set(rd->d, -EBADMSG,
				     "sample %zu has %zu values for %zu sample types",
				     i, ws.nvalues, pb->n_sample_type);
			goto out;
		}
		for (unsigned v = 0; v < p->nvalues; v++) {
			int64_t x = (int64_t)ws.values[v];
			int64_t a = x < 0 ? (x == INT64_MIN ? INT64_MAX : -x) : x;

			/* Bounds every sum the model and writers make. */
			if (__builtin_add_overflow(rd->abs_total[v], a,
						   &rd->abs_total[v])) {
				r = diag_set(rd->d, -EBADMSG,
					     "the %s values add up past 2^63",
					     p->value_types[v].type);
				goto out;
			}
			values[v] = x;
		}
		/* location_id is leaf first; the model is root first. */
		for (size_t k = ws.nlocs; k-- > 0 && !truncated;) {
			uint32_t pos = id_map_find(&rd->locs, ws.locs[k]);
			uint32_t n, first;

			if (pos == ID_NONE) {
				r = diag_set(rd->d, -EBADMSG,
					     "sample %zu names location %" PRIu64
					     ", which does not exist",
					     i, ws.locs[k]);
				goto out;
			}
			n = rd->loc_n[pos];
			first = rd->loc_first[pos];
			/* Most locations are one frame (no inlining). */
			if (n == 1 && depth < PPROF_MAX_DEPTH) {
				frames[depth++] = rd->loc_frames[first];
				continue;
			}
			if (n > PPROF_MAX_DEPTH - depth) {
				n = PPROF_MAX_DEPTH - depth;
				truncated = true;
			}
			for (uint32_t f = 0; f < n; f++)
				frames[depth++] = rd->loc_frames[first + f];
		}
		cut += truncated;
		if (!depth) {
			/* No locations: the value still counts, so it gets a
			 * frame to be seen in (perf tools say [unknown]). */
			struct frame none = { .name = "[no stack]", .kind = FRAME_UNKNOWN };

			r = profile_intern_frame(p, &none, &frames[0]);
			if (r < 0)
				goto out;
			depth = 1;
		}
		r = sample_thread(rd, &ws, &thread);
		if (r < 0)
			goto out;
		r = profile_intern_stack(p, frames, depth, truncated, &stack);
		if (r < 0)
			goto out;
		r = profile_add_sample(p, stack, thread, values);
		if (r < 0)
			goto out;
		rd->sample_ids[i][0] = stack;
		rd->sample_ids[i][1] = thread;
	}
	if (cut) {
		p->degraded.truncated_stacks += cut;
		profile_add_note(p, "%" PRIu64 " stacks deeper than %d frames were cut",
				 cut, PPROF_MAX_DEPTH);
	}
	r = 0;
out:
	free(frames);
	free(ws.locs);
	return r;
}

/* nprof's timeline (profile.proto's Timeline): the arrays must be in
 * step and name existing samples. */
static int read_timeline(struct reader *rd)
{
	const Perftools__Profiles__Timeline *tl = rd->pb->nprof_timeline;
	struct profile *p = rd->p;
	uint64_t t = (uint64_t)rd->pb->time_nanos;

	if (!tl)
		return 0;
	if (tl->n_sample != tl->n_time_delta ||
	    (tl->n_value && tl->n_value != tl->n_sample))
		return diag_set(rd->d, -EBADMSG,
				"the timeline's arrays differ in length (%zu times, %zu "
				"samples, %zu values)",
				tl->n_time_delta, tl->n_sample, tl->n_value);
	p->max_events = PPROF_MAX_EVENTS;
	p->events_dropped = tl->dropped;
	for (size_t i = 0; i < tl->n_sample; i++) {
		uint64_t s = tl->sample[i];
		int r;

		if (s >= rd->nsamples)
			return diag_set(rd->d, -EBADMSG,
					"timeline event %zu names sample %" PRIu64
					", which does not exist", i, s);
		/* Unsigned: a hostile delta wraps instead of overflowing. */
		t += (uint64_t)tl->time_delta[i];
		r = profile_add_event(p, t, rd->sample_ids[s][0], rd->sample_ids[s][1],
				      tl->n_value ? tl->value[i] : 1);
		if (r < 0)
			return r;
	}
	return 0;
}

static void reader_release(struct reader *rd)
{
	if (rd->strs)
		for (size_t i = 0; i < rd->pb->n_string_table; i++)
			free(rd->strs[i]);
	free(rd->strs);
	free(rd->map_ids);
	free(rd->fn_ids);
	free(rd->loc_ids);
	id_index_release(&rd->maps.index);
	id_index_release(&rd->fns.index);
	id_index_release(&rd->locs.index);
	free(rd->loc_first);
	free(rd->loc_n);
	free(rd->loc_frames);
	free(rd->sample_ids);
}

static int index_ids(struct reader *rd)
{
	const pb_profile *pb = rd->pb;
	int r;

	rd->map_ids = malloc((pb->n_mapping + 1) * sizeof(*rd->map_ids));
	rd->fn_ids = malloc((pb->n_function + 1) * sizeof(*rd->fn_ids));
	rd->loc_ids = malloc((pb->n_location + 1) * sizeof(*rd->loc_ids));
	if (!rd->map_ids || !rd->fn_ids || !rd->loc_ids)
		return -ENOMEM;
	for (size_t i = 0; i < pb->n_mapping; i++)
		rd->map_ids[i] = pb->mapping[i]->id;
	for (size_t i = 0; i < pb->n_function; i++)
		rd->fn_ids[i] = pb->function[i]->id;
	for (size_t i = 0; i < pb->n_location; i++)
		rd->loc_ids[i] = pb->location[i]->id;
	r = id_map_build(&rd->maps, rd->map_ids, pb->n_mapping, "mapping", rd->d);
	if (r == 0)
		r = id_map_build(&rd->fns, rd->fn_ids, pb->n_function, "function", rd->d);
	if (r == 0)
		r = id_map_build(&rd->locs, rd->loc_ids, pb->n_location, "location", rd->d);
	return r;
}

int pprof_read(const void *data, size_t len, struct profile **ret_p,
	       struct diag *d)
{
	struct reader rd = { .d = d };
	struct budget budget = { .left = PPROF_MAX_UNPACKED };
	ProtobufCAllocator alloc = { budget_alloc, budget_free, &budget };
	uint8_t *raw = NULL, *rest = NULL;
	size_t raw_len = len, rest_len = 0;
	const uint8_t *bytes = data;
	pb_profile *pb = NULL;
	struct profile *p = NULL;
	int r;

	id_index_init(&rd.maps.index);
	id_index_init(&rd.fns.index);
	id_index_init(&rd.locs.index);
	if (len > PPROF_MAX_INPUT) {
		r = diag_set(d, -EFBIG, "the profile is larger than %llu MiB",
			     PPROF_MAX_INPUT >> 20);
		goto out;
	}
	if (pprof_is_gzip(data, len)) {
		r = gunzip_libdeflate(data, len, &raw, &raw_len, d);
		if (r == -ENOTSUP)
			r = gunzip(data, len, &raw, &raw_len, d);
		if (r < 0)
			goto out;
		bytes = raw;
	}
	/* The samples are read from bytes (read_samples), the rest
	 * unpacked. */
	rest = malloc(raw_len ? raw_len : 1);
	if (!rest) {
		r = -ENOMEM;
		goto out;
	}
	if (split_samples(bytes, raw_len, rest, &rest_len, &rd.nsamples) < 0) {
		r = diag_set(d, -EBADMSG, "not a pprof profile (the protobuf does not parse)");
		goto out;
	}
	/* What the reader keeps per sample (the timeline points at it). */
	if (rd.nsamples > budget.left / (sizeof(*rd.sample_ids) + 1)) {
		r = diag_set(d, -EFBIG, "the profile needs more than %llu MiB to parse",
			     PPROF_MAX_UNPACKED >> 20);
		goto out;
	}
	budget.left -= rd.nsamples * sizeof(*rd.sample_ids);
	rd.msg = bytes;
	rd.msg_len = raw_len;
	rd.budget = &budget;
	pb = perftools__profiles__profile__unpack(&alloc, rest_len, rest);
	free(rest);
	rest = NULL;
	if (!pb && budget.exhausted) {
		r = diag_set(d, -EFBIG, "the profile needs more than %llu MiB to parse",
			     PPROF_MAX_UNPACKED >> 20);
		goto out;
	}
	if (!pb) {
		r = diag_set(d, -EBADMSG, "not a pprof profile (the protobuf does not parse)");
		goto out;
	}
	rd.pb = pb;
	if (pb->n_string_table == 0 || pb->string_table[0].len != 0) {
		r = diag_set(d, -EBADMSG,
			     "not a pprof profile (the string table does not start with \"\")");
		goto out;
	}
	r = -ENOMEM;
	p = profile_new();
	if (!p)
		goto out;
	rd.p = p;
	if ((r = copy_strings(&rd)) < 0 || (r = index_ids(&rd)) < 0 ||
	    (r = read_header(&rd)) < 0 || (r = read_locations(&rd)) < 0 ||
	    (r = read_samples(&rd)) < 0 || (r = read_timeline(&rd)) < 0)
		goto out;
	*ret_p = p;
	p = NULL;
	r = 0;
out:
	reader_release(&rd);
	budget_release(&budget); /* pb with it */
	free(rest);
	free(raw);
	profile_free(p);
	return r;
}
