/* agent_stacks_json_fuzz: the agent's JSON thread dump (the reply to
 * "stacks json", what `nprof stacks PID` asks an agent for), read by
 * thread_dump_agent_parse. What is accepted is bounded, sorted by tid
 * with no tid twice, and its strings terminated. Then the whole of
 * thread_dump_take_agent runs on it, with this process as the target
 * (its threads from /proc, the agent's addresses named in its own maps),
 * and both writers: what nprof stacks does with an agent's reply. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/threads_dump.h"
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct thread_dump_agent_thread *v = NULL;
	size_t n = 0;

	if (thread_dump_agent_parse((const char *)data, size, &v, &n) < 0)
		return 0;
	if (n > THREAD_DUMP_MAX_THREADS)
		abort();
	for (size_t i = 0; i < n; i++) {
		if (v[i].tid <= 0 || (i && v[i].tid <= v[i - 1].tid))
			abort();
		if (v[i].n > THREAD_DUMP_MAX_DEPTH || v[i].n > v[i].cap ||
		    strnlen(v[i].status, sizeof(v[i].status)) == sizeof(v[i].status))
			abort();
		for (unsigned j = 0; j < v[i].n; j++)
			if ((v[i].frames[j].function && strlen(v[i].frames[j].function) > 1023) ||
			    (v[i].frames[j].module && strlen(v[i].frames[j].module) > 1023))
				abort();
	}
	thread_dump_agent_free(v, n);
	take(data, size);
	return 0;
}
