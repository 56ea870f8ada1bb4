/* thread_dump_json_fuzz: the JSON thread dump (thread_dump_write_json's,
 * the agent's reply to "stacks json", what `nprof stacks PID` asks an
 * agent for), read by thread_dump_read_json. What is accepted is bounded,
 * sorted by name then tid with no tid twice, counted, and its strings
 * terminated; both writers run on it, and what the JSON writer writes
 * reads back to the same JSON. Then the whole of thread_dump_take_agent
 * runs on it, with this process as the target (its threads from /proc,
 * the agent's addresses named in its own maps), and both writers: what
 * nprof stacks does with an agent's reply. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/threads_dump.h"
#include "symbolize/symbolize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct reply {
	const uint8_t *data;
	size_t size;
};

/* thread_dump_take_agent's capture: the fuzzer's bytes, as the client
 * hands them over (malloc'd, NUL after them). */
static int capture(pid_t pid, void *arg, char **ret_json, size_t *ret_len, struct diag *d)
{
	const struct reply *r = arg;
	char *buf = malloc(r->size + 1);

	(void)pid;
	(void)d;
	if (!buf)
		return -1;
	memcpy(buf, r->data, r->size);
	buf[r->size] = '\0';
	*ret_json = buf;
	*ret_len = r->size;
	return 0;
}

static void take(const uint8_t *data, size_t size)
{
	/* one for the run: a new one would read this binary's symbols
	 * again for every input (80 inputs a second instead of 1000) */
	static struct symbolizer *sym;
	struct thread_dump_options o = { 0 };
	struct reply r = { data, size };
	struct thread_dump *td = NULL;
	char *out = NULL;
	size_t olen = 0;
	struct diag d;
	FILE *f;

	if (!sym)
		sym = symbolizer_new();
	if (!sym)
		return;
	o.sym = sym;
	diag_clear(&d);
	if (thread_dump_take_agent(getpid(), &o, capture, &r, &td, &d) < 0)
		return;
	f = open_memstream(&out, &olen);
	if (f) {
		thread_dump_write_text(td, THREAD_DUMP_GROUP | THREAD_DUMP_ADDRS, f);
		thread_dump_write_json(td, f);
		fclose(f);
	}
	free(out);
	thread_dump_free(td);
}

static char *write_json(const struct thread_dump *td, size_t *ret_len)
{
	char *out = NULL;
	FILE *f = open_memstream(&out, ret_len);

	if (!f)
		return NULL;
	if (thread_dump_write_json(td, f) < 0) {
		fclose(f);
		free(out);
		return NULL;
	}
	fclose(f);
	return out;
}

static void check(const struct thread_dump *td)
{
	unsigned taken = 0, gone = 0, failed = 0;

	if (td->nthreads > THREAD_DUMP_MAX_THREADS || strnlen(td->comm, sizeof(td->comm)) ==
								  sizeof(td->comm))
		abort();
	for (size_t i = 0; i < td->nthreads; i++) {
		const struct thread_info *t = &td->threads[i];

		if (t->tid <= 0 || t->nframes > THREAD_DUMP_MAX_DEPTH ||
		    strnlen(t->name, sizeof(t->name)) == sizeof(t->name) ||
		    strnlen(t->restart_of, sizeof(t->restart_of)) == sizeof(t->restart_of) ||
		    strnlen(t->walk_end, sizeof(t->walk_end)) == sizeof(t->walk_end))
			abort();
		if (i && strcmp(td->threads[i - 1].name, t->name) > 0)
			abort();
		for (size_t k = 0; k < i; k++)
			if (td->threads[k].tid == t->tid)
				abort();
		if (t->status == THREAD_FAILED && t->err >= 0)
			abort();
		taken += t->status == THREAD_TAKEN || t->status == THREAD_LIVE;
		gone += t->status == THREAD_GONE;
		failed += t->status == THREAD_FAILED;
		for (unsigned j = 0; j < t->nframes; j++)
			if (!t->frames[j].name || strlen(t->frames[j].name) > 1023 ||
			    (t->frames[j].module && strlen(t->frames[j].module) > 1023) ||
			    (t->frames[j].file && strlen(t->frames[j].file) > 1023))
				abort();
	}
	if (taken != td->ntaken || gone != td->ngone || failed != td->nfailed)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct thread_dump *td = NULL, *again = NULL;
	char *out, *out2 = NULL, *text = NULL;
	size_t olen = 0, olen2 = 0, tlen = 0;
	FILE *f;

	if (thread_dump_read_json((const char *)data, size, &td) < 0)
		return 0;
	check(td);
	f = open_memstream(&text, &tlen);
	if (f) {
		thread_dump_write_text(td, THREAD_DUMP_GROUP | THREAD_DUMP_ADDRS, f);
		fclose(f);
	}
	free(text);
	/* What the writer writes, the reader reads back to the same JSON
	 * (fields the writer derives, like state_name, are derived again). */
	out = write_json(td, &olen);
	if (out) {
		if (thread_dump_read_json(out, olen, &again) < 0)
			abort();
		check(again);
		out2 = write_json(again, &olen2);
		if (out2 && (olen2 != olen || memcmp(out, out2, olen)))
			abort();
	}
	free(out);
	free(out2);
	thread_dump_free(again);
	thread_dump_free(td);
	take(data, size);
	return 0;
}
