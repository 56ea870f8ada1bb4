/* json_write: the thread dump as JSON (docs/nprof-stacks.1.md, "--json");
 * the one JSON writer of both takers, read back by json_read.c. */
#include <errno.h>
#include <string.h>

#include "base/json.h"
#include "threaddump/threaddump.h"

static const char *status_name(enum thread_status s)
{
	switch (s) {
	case THREAD_TAKEN: return "taken";
	case THREAD_LIVE: return "live";
	case THREAD_GONE: return "gone";
	case THREAD_FAILED: return "failed";
	case THREAD_AGENT: return "agent";
	}
	return "unknown";
}

static const char *kind_name(enum frame_kind k)
{
	switch (k) {
	case FRAME_USER: return "user";
	case FRAME_LIBRARY: return "library";
	case FRAME_KERNEL: return "kernel";
	case FRAME_INLINED: return "inlined";
	case FRAME_JIT: return "jit";
	case FRAME_THREAD: return "thread";
	case FRAME_UNKNOWN: return "unknown";
	}
	return "unknown";
}

int thread_dump_write_json(const struct thread_dump *td, FILE *f)
{
	fprintf(f, "{\"pid\":%d,\"comm\":", (int)td->pid);
	json_put_string(f, td->comm, 0, 0);
	fputs(",\"exe\":", f);
	if (td->exe)
		json_put_string(f, td->exe, 0, 0);
	else
		fputs("null", f);
	fprintf(f, ",\"time_ns\":%lld,\"method\":\"%s\",\"total_ns\":%llu,"
		   "\"pause_max_ns\":%llu,\"pause_sum_ns\":%llu,",
		(long long)td->time_ns, td->method == THREAD_DUMP_AGENT ? "agent" : "ptrace",
		(unsigned long long)td->total_ns,
		(unsigned long long)td->pause_max_ns, (unsigned long long)td->pause_sum_ns);
	fprintf(f, "\"threads_gone\":%u,\"threads_failed\":%u,\"threads_missed_new\":%u,"
		   "\"threads_omitted\":%u,\"process_exited\":%s,\"threads\":[",
		td->ngone, td->nfailed, td->missed_new, td->omitted,
		td->process_exited ? "true" : "false");
	for (size_t i = 0; i < td->nthreads; i++) {
		const struct thread_info *t = &td->threads[i];
		char st[2] = { t->state, 0 };

		fprintf(f, "%s\n{\"tid\":%d,\"name\":", i ? "," : "", (int)t->tid);
		json_put_string(f, t->name, 0, 0);
		fputs(",\"state\":", f);
		json_put_string(f, st, 0, 0);
		fputs(",\"state_name\":", f);
		json_put_string(f, thread_state_name(t->state), 0, 0);
		fprintf(f, ",\"status\":\"%s\",\"on_cpu\":%s,\"syscall\":", status_name(t->status),
			t->sc == THREAD_SC_ON_CPU ? "true" : "false");
		if (t->sc == THREAD_SC_IN) {
			fprintf(f, "{\"nr\":%ld,\"name\":", t->syscall_nr);
			json_put_string(f, thread_syscall_name(t->syscall_nr), 0, 0);
			if (t->restart_of[0]) {
				fputs(",\"restart_of\":", f);
				json_put_string(f, t->restart_of, 0, 0);
			}
			fputs(",\"args\":[", f);
			for (int k = 0; k < 6; k++)
				fprintf(f, "%s\"0x%llx\"", k ? "," : "",
					(unsigned long long)t->syscall_args[k]);
			fputs("]}", f);
		} else {
			fputs("null", f);
		}
		fprintf(f, ",\"cpu_ns\":%llu,\"pause_ns\":%llu,\"stack_bytes\":%zu,",
			(unsigned long long)t->cpu_ns, (unsigned long long)t->pause_ns,
			t->stack_bytes);
		if (t->status == THREAD_FAILED) {
			fputs("\"error\":", f);
			json_put_string(f, thread_dump_failure_text(td, t), 0, 0);
			fprintf(f, ",\"errno\":%d,", -t->err);
		}
		fprintf(f, "\"truncated\":%s,", t->truncated ? "true" : "false");
		if (t->truncated) {
			fputs("\"walk_end\":", f);
			json_put_string(f, t->walk_end[0] ? t->walk_end : "?", 0, 0);
			fputc(',', f);
		}
		fputs("\"frames\":[", f);
		for (unsigned j = 0; j < t->nframes; j++) {
			const struct thread_frame *fr = &t->frames[j];

			fprintf(f, "%s{\"addr\":\"0x%llx\",\"function\":", j ? "," : "",
				(unsigned long long)fr->addr);
			json_put_string(f, fr->name ? fr->name : "??", 0, 0);
			fputs(",\"module\":", f);
			if (fr->module)
				json_put_string(f, fr->module, 0, 0);
			else
				fputs("null", f);
			fprintf(f, ",\"offset\":\"0x%llx\",\"kind\":\"%s\"",
				(unsigned long long)fr->module_offset, kind_name(fr->kind));
			if (fr->file) {
				fputs(",\"file\":", f);
				json_put_string(f, fr->file, 0, 0);
				fprintf(f, ",\"line\":%u", fr->line);
			}
			fputc('}', f);
		}
		fputs("]}", f);
	}
	fputs("\n]}\n", f);
	return ferror(f) ? -EIO : 0;
}
