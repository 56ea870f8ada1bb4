/* The pprof writer and reader on a profile built by hand: the raw message
 * is checked field by field (leaf-first locations, inlined lines, labels,
 * mappings, period), then read back and compared; bad input is refused. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "output/output.h"
#include "output/pprof.h"
#include "test.h"
#include "pprof_message.h"

static uint32_t fr(struct profile *p, const char *name, const char *module,
		   const char *file, uint32_t line, enum frame_kind k,
		   uint64_t address)
{
	struct frame f = { .name = name, .module = module, .file = file,
			   .line = line, .kind = k, .address = address };
	uint32_t id;

	profile_intern_frame(p, &f, &id);
	return id;
}

static void add(struct profile *p, const uint32_t *frames, uint32_t n,
		pid_t tid, const char *tname, int64_t samples)
{
	uint32_t s, t;
	int64_t v[2] = { samples, samples * 10000000 };

	profile_intern_stack(p, frames, n, false, &s);
	profile_intern_thread(p, tid, tname, &t);
	profile_add_sample(p, s, t, v);
}

static char *render(const struct profile *p, enum output_format f, size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	if (output_write(p, f, NULL, out) < 0)
		CHECK(0, "output_write failed");
	fclose(out);
	if (ret_len)
		*ret_len = len;
	return buf;
}

static const char *pb_str(const pb_profile *pb, int64_t i)
{
	static char buf[4][256];
	static int k;
	char *b = buf[k++ % 4];

	if (i < 0 || (size_t)i >= pb->n_string_table)
		return "(out of range)";
	snprintf(b, 256, "%.*s", (int)pb->string_table[i].len,
		 (const char *)pb->string_table[i].data);
	return b;
}

static const Perftools__Profiles__Location *pb_loc(const pb_profile *pb, uint64_t id)
{
	for (size_t i = 0; i < pb->n_location; i++)
		if (pb->location[i]->id == id)
			return pb->location[i];
	return NULL;
}

static const char *pb_fn_name(const pb_profile *pb, uint64_t id)
{
	for (size_t i = 0; i < pb->n_function; i++)
		if (pb->function[i]->id == id)
			return pb_str(pb, pb->function[i]->name);
	return "(none)";
}

static void test_bad_input(void)
{
	struct profile *p = NULL;
	struct diag d;
	static const uint8_t bad_gzip[] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2 };
	ProtobufCBinaryData strs[2] = { { 0, (uint8_t *)"" }, { 4, (uint8_t *)"main" } };
	Perftools__Profiles__ValueType vt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT, *vtp = &vt;
	Perftools__Profiles__Line line = PERFTOOLS__PROFILES__LINE__INIT, *linep = &line;
	Perftools__Profiles__Location loc = PERFTOOLS__PROFILES__LOCATION__INIT, *locp = &loc;
	Perftools__Profiles__Location *loc_twice[2] = { &loc, &loc };
	Perftools__Profiles__Sample smp = PERFTOOLS__PROFILES__SAMPLE__INIT, *smpp = &smp;
	uint64_t loc_ids[1] = { 1 };
	int64_t values[1] = { 3 };
	int r;
	pb_profile pb = PERFTOOLS__PROFILES__PROFILE__INIT;

	diag_clear(&d);
	r = pprof_read("hello world\n", 12, &p, &d);
	CHECK(r == -EBADMSG && !p,
	      "text is not a pprof profile");
	diag_clear(&d);
	r = pprof_read("", 0, &p, &d);
	CHECK(r == -EBADMSG, "empty input is refused");
	diag_clear(&d);
	r = pprof_read(bad_gzip, sizeof(bad_gzip), &p, &d);
	CHECK(r == -EBADMSG,
	      "corrupt gzip is refused: %s", d.msg);

	/* A well-formed message, then broken one reference at a time. */
	vt.type = 1;
	vt.unit = 1;
	line.function_id = 7; /* no such function */
	loc.id = 1;
	loc.n_line = 1;
	loc.line = &linep;
	smp.n_location_id = 1;
	smp.location_id = loc_ids;
	smp.n_value = 1;
	smp.value = values;
	pb.n_sample_type = 1;
	pb.sample_type = &vtp;
	pb.n_location = 1;
	pb.location = &locp;
	pb.n_sample = 1;
	pb.sample = &smpp;
	pb.n_string_table = 2;
	pb.string_table = strs;
	diag_clear(&d);
	r = read_packed(&pb, &d, &p);
	CHECK(r == -EBADMSG && strstr(d.msg, "function 7"),
	      "a missing function is named: %s", d.msg);
	loc.n_line = 0;
	loc_ids[0] = 9;
	diag_clear(&d);
	r = read_packed(&pb, &d, &p);
	CHECK(r == -EBADMSG && strstr(d.msg, "location 9"),
	      "a missing location is named: %s", d.msg);
	loc_ids[0] = 1;
	/* Ids 1 and 1: position 0 holds id 1, where ids numbered from 1 are
	 * found first, and still the second is refused. */
	pb.n_location = 2;
	pb.location = loc_twice;
	diag_clear(&d);
	r = read_packed(&pb, &d, &p);
	pb.n_location = 1;
	pb.location = &locp;
	CHECK(r == -EBADMSG && strstr(d.msg, "location id 1 is repeated"),
	      "a repeated id is refused: %s", d.msg);
	vt.unit = 5;
	diag_clear(&d);
	r = read_packed(&pb, &d, &p);
	CHECK(r == -EBADMSG && strstr(d.msg, "string 5"),
	      "a string index past the table is refused: %s", d.msg);
	vt.unit = 1;
	values[0] = INT64_MAX;
	pb.n_sample = 1;
	{
		Perftools__Profiles__Sample *two[2] = { &smp, &smp };

		pb.n_sample = 2;
		pb.sample = two;
		diag_clear(&d);
		r = read_packed(&pb, &d, &p);
		CHECK(r == -EBADMSG && strstr(d.msg, "2^63"),
		      "values that overflow when added are refused: %s", d.msg);
		pb.n_sample = 1;
		pb.sample = &smpp;
	}
	values[0] = 3;
	diag_clear(&d);
	r = read_packed(&pb, &d, &p);
	CHECK(r == 0 && p, "the repaired message reads");
	if (p) {
		CHECK(p->nstacks == 1 && p->stacks[0].depth == 1 &&
		      p->frames[profile_stack_frames(p, 0)[0]].kind == FRAME_UNKNOWN,
		      "a location without lines becomes an unknown frame");
		CHECK_STR(p->frames[0].name, "0x0", "named by its address");
		CHECK(profile_total(p, 0) == 3, "its value");
	}
	profile_free(p);
}

/* Samples are read from the message's bytes, not by protobuf-c
 * (pprof_read.c): every encoding protobuf allows is read, every broken
 * one refused. A message with no samples is packed by protobuf-c, the
 * samples appended by hand (a repeated field may come anywhere). */
static int read_with_samples(const uint8_t *samples, size_t n, bool first,
			     struct diag *d, struct profile **ret)
{
	ProtobufCBinaryData strs[7] = {
		{ 0, (uint8_t *)"" },	      { 7, (uint8_t *)"samples" },
		{ 5, (uint8_t *)"count" },    { 4, (uint8_t *)"main" },
		{ 6, (uint8_t *)"thread" },   { 6, (uint8_t *)"worker" },
		{ 9, (uint8_t *)"thread_id" },
	};
	Perftools__Profiles__ValueType vt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT, *vtp = &vt;
	Perftools__Profiles__Function fn = PERFTOOLS__PROFILES__FUNCTION__INIT, *fnp = &fn;
	Perftools__Profiles__Line line = PERFTOOLS__PROFILES__LINE__INIT, *linep = &line;
	Perftools__Profiles__Location loc = PERFTOOLS__PROFILES__LOCATION__INIT, *locp = &loc;
	pb_profile pb = PERFTOOLS__PROFILES__PROFILE__INIT;
	size_t len;
	uint8_t *buf;
	int r;

	vt.type = 1;
	vt.unit = 2;
	fn.id = 1;
	fn.name = 3;
	line.function_id = 1;
	loc.id = 1;
	loc.n_line = 1;
	loc.line = &linep;
	pb.n_sample_type = 1;
	pb.sample_type = &vtp;
	pb.n_function = 1;
	pb.function = &fnp;
	pb.n_location = 1;
	pb.location = &locp;
	pb.n_string_table = 7;
	pb.string_table = strs;
	len = perftools__profiles__profile__get_packed_size(&pb);
	buf = malloc(len + n);
	/* First, before the string table they name, or last. */
	perftools__profiles__profile__pack(&pb, buf + (first ? n : 0));
	memcpy(buf + (first ? 0 : len), samples, n);
	diag_clear(d);
	r = pprof_read(buf, len + n, ret, d);
	free(buf);
	return r;
}

static void test_wire_samples(void)
{
	/* Location id and value unpacked; then packed, with unknown fields
	 * of each wire type between; then labels, a thread's name and id. */
	static const uint8_t good[] = {
		0x12, 4, 0x08, 0x01, 0x10, 0x05,
		0x12, 26, 0x48, 0x01, 0x51, 1, 2, 3, 4, 5, 6, 7, 8, 0x5a, 2, 0xff, 0xff,
			0x65, 1, 2, 3, 4, 0x0a, 1, 0x01, 0x12, 1, 0x07,
		0x12, 19, 0x0a, 2, 0x01, 0x01, 0x10, 0x80, 0x01,
			0x1a, 4, 0x08, 0x04, 0x10, 0x05, 0x1a, 4, 0x08, 0x06, 0x18, 42,
	};
	static const struct {
		const char *what;
		uint8_t bytes[16];
		size_t n;
	} bad[] = {
		{ "a varint cut short", { 0x12, 3, 0x08, 0x01, 0x10 }, 5 },
		{ "a varint past the sample", { 0x12, 2, 0x08, 0x80, 0x01 }, 5 },
		{ "a packed field longer than the sample", { 0x12, 3, 0x0a, 5, 0x01 }, 5 },
		{ "a group", { 0x12, 3, 0x0b, 0x0c, 0x10 }, 5 },
		{ "a location id as fixed64", { 0x12, 9, 0x09, 1, 0, 0, 0, 0, 0, 0, 0 }, 11 },
		{ "field number 0", { 0x12, 2, 0x00, 0x01 }, 4 },
		{ "a label key as a length", { 0x12, 4, 0x1a, 2, 0x0a, 0 }, 6 },
		{ "a label as a varint", { 0x12, 2, 0x18, 0x01 }, 4 },
		{ "a sample longer than the message", { 0x12, 9, 0x08, 0x01 }, 4 },
		{ "a sample as a varint", { 0x10, 0x01 }, 2 },
		{ "an eleven-byte varint", { 0x12, 12, 0x10, 0x81, 0x81, 0x81, 0x81, 0x81,
					     0x81, 0x81, 0x81, 0x81, 0x81, 0x01 }, 14 },
	};
	struct profile *p = NULL;
	struct diag d;
	int r = read_with_samples(good, sizeof(good), true, &d, &p);

	CHECK(r == 0 && p, "samples in every encoding read: %s", d.msg);
	profile_free(p);
	p = NULL;
	r = read_with_samples(good, sizeof(good), false, &d, &p);
	CHECK(r == 0 && p, "samples after the rest of the message read: %s", d.msg);
	if (p) {
		uint32_t worker = UINT32_MAX;

		CHECK(p->nsamples == 2 && profile_total(p, 0) == 5 + 7 + 128,
		      "their values: three samples, the first two merged (one stack, one thread): %lld",
		      (long long)profile_total(p, 0));
		for (size_t i = 0; i < p->nthreads; i++)
			if (p->threads[i].tid == 42)
				worker = (uint32_t)i;
		CHECK(worker != UINT32_MAX && !strcmp(p->threads[worker].name, "worker"),
		      "the labels' thread: 42, worker");
		CHECK(p->nstacks == 2 && p->stacks[1].depth == 2,
		      "a packed location id twice: two frames");
	}
	profile_free(p);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p = NULL;
		r = read_with_samples(bad[i].bytes, bad[i].n, false, &d, &p);
		CHECK(r == -EBADMSG && !p && strstr(d.msg, "does not parse"),
		      "%s is refused: %s", bad[i].what, d.msg);
	}
}

int main(void)
{
	static const struct value_type vt[] = { { "samples", "count" },
						{ "cpu", "nanoseconds" } };
	struct profile *p = profile_new(), *back = NULL;
	const char *app = "/usr/bin/app", *libc = "/usr/lib/libc.so.6";
	uint32_t main_ = fr(p, "main", app, "app.c", 10, FRAME_USER, 0x1100),
		 run = fr(p, "run", app, "app.c", 20, FRAME_USER, 0x1200),
		 inl = fr(p, "hash_step", app, "hash.h", 5, FRAME_INLINED, 0x1200),
		 inl2 = fr(p, "rotl", app, "hash.h", 2, FRAME_INLINED, 0x1200),
		 memcpy_ = fr(p, "memcpy", libc, NULL, 0, FRAME_LIBRARY, 0x9abc),
		 thr = fr(p, "[worker tid=7]", NULL, NULL, 0, FRAME_THREAD, 0);
	uint32_t id, leaf_loc_id = 0;
	char *gz, *text1, *text2;
	size_t gz_len, raw_len;
	uint8_t *raw;
	pb_profile *pb;
	struct diag d;
	int r;

	profile_set_value_types(p, vt, 2);
	p->event = "cpu";
	p->interval = 10000000;
	p->interval_unit = "nanoseconds";
	p->start_ns = 1700000000000000000ull;
	p->duration_ns = 5000000000ull;
	p->pid = 42;
	p->command = "app";
	profile_add_note(p, "kernel frames omitted: perf_event_paranoid=2");
	profile_intern_module(p, app, "0123abcd", &id);
	profile_intern_module(p, libc, NULL, &id);
	{
		uint32_t s1[] = { main_, run, inl, inl2 }, s2[] = { main_, memcpy_ },
			 s3[] = { thr, main_, run };
		add(p, s1, 4, 1, "main", 60);
		add(p, s2, 2, 1, "main", 30);
		add(p, s3, 3, 7, "worker", 10);
	}

	gz = render(p, OUTPUT_PPROF, &gz_len);
	CHECK(pprof_is_gzip(gz, gz_len), "the output is gzipped");
	raw = gunzip_all(gz, gz_len, &raw_len);
	pb = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	CHECK(pb != NULL, "the output is a Profile message");
	if (!pb)
		return test_done();

	CHECK(pb->n_string_table > 0 && pb->string_table[0].len == 0,
	      "string_table[0] is empty");
	CHECK(pb->n_sample_type == 2, "two sample types");
	CHECK_STR(pb_str(pb, pb->sample_type[0]->type), "samples", "sample type 0");
	CHECK_STR(pb_str(pb, pb->sample_type[0]->unit), "count", "unit 0");
	CHECK_STR(pb_str(pb, pb->sample_type[1]->type), "cpu", "sample type 1");
	CHECK_STR(pb_str(pb, pb->sample_type[1]->unit), "nanoseconds", "unit 1");
	CHECK(pb->period_type && pb->period == 10000000, "period = interval");
	if (pb->period_type) {
		CHECK_STR(pb_str(pb, pb->period_type->type), "cpu", "period type");
		CHECK_STR(pb_str(pb, pb->period_type->unit), "nanoseconds", "period unit");
	}
	CHECK(pb->time_nanos == 1700000000000000000ll &&
	      pb->duration_nanos == 5000000000ll, "time and duration");
	CHECK(pb->n_comment >= 1 &&
	      !strcmp(pb_str(pb, pb->comment[0]),
		      "kernel frames omitted: perf_event_paranoid=2"),
	      "notes become comments");
	CHECK(pb->n_mapping == 2, "one mapping per module");
	CHECK_STR(pb_str(pb, pb->mapping[0]->filename), app, "mapping 0 file");
	CHECK_STR(pb_str(pb, pb->mapping[0]->build_id), "0123abcd", "mapping 0 build-id");
	CHECK(pb->mapping[0]->has_functions && pb->mapping[0]->has_line_numbers &&
	      pb->mapping[0]->has_inline_frames, "mapping 0 resolution flags");
	CHECK(pb->n_function == 6, "six functions (%zu)", pb->n_function);
	/* main, run+hash_step+rotl (one location), memcpy, thread, run at the
	 * top of the worker stack shares run's location: 5 distinct runs. */
	CHECK(pb->n_location == 5, "inlined frames fold into one location (%zu)",
	      pb->n_location);
	CHECK(pb->n_sample == 3, "three samples");
	{
		const Perftools__Profiles__Sample *s0 = pb->sample[0];
		const Perftools__Profiles__Location *leaf;

		CHECK(s0->n_location_id == 2, "sample 0: 4 frames, 2 locations");
		leaf = pb_loc(pb, s0->location_id[0]);
		CHECK(leaf && leaf->n_line == 3, "the leaf location has 3 lines");
		if (leaf && leaf->n_line == 3) {
			leaf_loc_id = (uint32_t)leaf->id;
			CHECK_STR(pb_fn_name(pb, leaf->line[0]->function_id), "rotl",
				  "innermost inlined function first");
			CHECK_STR(pb_fn_name(pb, leaf->line[1]->function_id),
				  "hash_step", "then its caller");
			CHECK_STR(pb_fn_name(pb, leaf->line[2]->function_id), "run",
				  "the physical frame last");
			CHECK(leaf->line[2]->line == 20 && leaf->line[0]->line == 2,
			      "line numbers");
			CHECK(leaf->address == 0x1200 && leaf->mapping_id == 1,
			      "address and mapping of the location");
		}
		CHECK_STR(pb_fn_name(pb, pb_loc(pb, s0->location_id[1])->line[0]->function_id),
			  "main", "the root last (leaf first order)");
		CHECK(s0->n_value == 2 && s0->value[0] == 60 &&
		      s0->value[1] == 600000000, "sample values");
		CHECK(s0->n_label == 2 &&
		      !strcmp(pb_str(pb, s0->label[0]->key), "thread") &&
		      !strcmp(pb_str(pb, s0->label[0]->str), "main") &&
		      !strcmp(pb_str(pb, s0->label[1]->key), "thread_id") &&
		      s0->label[1]->num == 1, "thread labels");
	}
	(void)leaf_loc_id;
	perftools__profiles__profile__free_unpacked(pb, NULL);
	free(raw);

	/* Back into the model: same stacks, kinds, threads, values. */
	diag_clear(&d);
	r = pprof_read(gz, gz_len, &back, &d);
	CHECK(r == 0, "read back: %s", d.msg);
	if (back) {
		uint32_t tid7 = UINT32_MAX;

		text1 = render(p, OUTPUT_COLLAPSED, NULL);
		text2 = render(back, OUTPUT_COLLAPSED, NULL);
		CHECK_STR(text2, text1, "collapsed output is the same after a round trip");
		free(text1);
		free(text2);
		CHECK(back->nvalues == 2 && profile_total(back, 1) == 1000000000,
		      "value 1 total");
		CHECK_STR(back->event, "cpu", "event from the period type");
		CHECK(back->interval == 10000000 && back->start_ns == p->start_ns &&
		      back->duration_ns == p->duration_ns, "period, time, duration");
		CHECK(back->nmodules == 2 && back->modules[0].build_id &&
		      !strcmp(back->modules[0].build_id, "0123abcd"), "modules and build-id");
		for (size_t t = 0; t < back->nthreads; t++)
			if (back->threads[t].tid == 7)
				tid7 = (uint32_t)t;
		CHECK(tid7 != UINT32_MAX && !strcmp(back->threads[tid7].name, "worker"),
		      "threads from labels");
		{
			size_t inlined = 0, thread = 0, library = 0;

			for (size_t f = 0; f < back->nframes; f++) {
				inlined += back->frames[f].kind == FRAME_INLINED;
				thread += back->frames[f].kind == FRAME_THREAD;
				library += back->frames[f].kind == FRAME_LIBRARY;
			}
			CHECK(inlined == 2 && thread == 1 && library == 1,
			      "frame kinds come back (inlined %zu, thread %zu, library %zu)",
			      inlined, thread, library);
		}
		for (size_t f = 0; f < back->nframes; f++)
			if (!strcmp(back->frames[f].name, "run"))
				CHECK(back->frames[f].address == 0x1200 &&
				      back->frames[f].line == 20 &&
				      !strcmp(back->frames[f].file, "app.c") &&
				      !strcmp(back->frames[f].module, app),
				      "address, file, line, module of a frame");
	}
	/* Not gzipped is read too. */
	raw = gunzip_all(gz, gz_len, &raw_len);
	{
		struct profile *plain = NULL;

		r = pprof_read(raw, raw_len, &plain, NULL);
		CHECK(r == 0 && plain &&
		      plain->nsamples == 3, "an uncompressed profile reads");
		profile_free(plain);
	}
	free(raw);
	/* A truncated file is refused, not half read. */
	{
		struct profile *cut = NULL;

		diag_clear(&d);
		r = pprof_read(gz, gz_len / 2, &cut, &d);
		CHECK(r == -EBADMSG && !cut,
		      "a truncated file is refused: %s", d.msg);
	}
	/* A second gzip member after the profile is not read. Its trailer,
	 * the file's last bytes, says 500 bytes, fewer than the first
	 * member's: libdeflate sizes its buffer by it, then grows it. */
	{
		static const uint8_t one_x[] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xab, 0xa8,
						 0x18, 5, 0x23, 0x0d, 0, 0, 0x51, 0xce, 0xb2,
						 0x0a, 0xf4, 1, 0, 0 };
		uint8_t *two = malloc(gz_len + sizeof(one_x));
		struct profile *first = NULL;

		memcpy(two, gz, gz_len);
		memcpy(two + gz_len, one_x, sizeof(one_x));
		diag_clear(&d);
		r = pprof_read(two, gz_len + sizeof(one_x), &first, &d);
		CHECK(r == 0 && first && first->nsamples == 3,
		      "a file of two gzip members reads as its first: %s", d.msg);
		profile_free(first);
		free(two);
	}
	free(gz);
	profile_free(back);
	profile_free(p);

	test_bad_input();
	test_wire_samples();
	return test_done();
}
