/* json_write: the thread dump as JSON (docs/nprof-stacks.1.md, "--json");
 * the one JSON writer of both takers, read back by json_read.c. */
#include <errno.h>
#include <stdint.h>
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

/* Numbers without printf: a dump of 2,000 threads writes some 40,000
 * (half the writer's time went to fprintf). */
static void put_u64(FILE *f, uint64_t v)
{
	char b[24], *p = b + sizeof(b);

	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	fwrite(p, 1, (size_t)(b + sizeof(b) - p), f);
}

static void put_i64(FILE *f, int64_t v)
{
	if (v < 0) {
		putc('-', f);
		put_u64(f, -(uint64_t)v);
	} else {
		put_u64(f, (uint64_t)v);
	}
}

/* "0x..." with its quotes, as JSON keeps addresses (strings: a double
 * cannot hold 64 bits). */
static void put_hex_string(FILE *f, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char b[24], *p = b + sizeof(b);

	*--p = '"';
	do {
		*--p = digits[v & 15];
		v >>= 4;
	} while (v);
	*--p = 'x';
	*--p = '0';
	*--p = '"';
	fwrite(p, 1, (size_t)(b + sizeof(b) - p), f);
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

		fputs(i ? ",\n{\"tid\":" : "\n{\"tid\":", f);
		put_i64(f, t->tid);
		fputs(",\"name\":", f);
		json_put_string(f, t->name, 0, 0);
		fputs(",\"state\":", f);
		json_put_string(f, st, 0, 0);
		fputs(",\"state_name\":", f);
		json_put_string(f, thread_state_name(t->state), 0, 0);
		fputs(",\"status\":\"", f);
		fputs(status_name(t->status), f);
		fputs(t->sc == THREAD_SC_ON_CPU ? "\",\"on_cpu\":true,\"syscall\":"
						: "\",\"on_cpu\":false,\"syscall\":", f);
		if (t->sc == THREAD_SC_IN) {
			fputs("{\"nr\":", f);
			put_i64(f, t->syscall_nr);
			fputs(",\"name\":", f);
			json_put_string(f, thread_syscall_name(t->syscall_nr), 0, 0);
			if (t->restart_of[0]) {
				fputs(",\"restart_of\":", f);
				json_put_string(f, t->restart_of, 0, 0);
			}
			fputs(",\"args\":[", f);
			for (int k = 0; k < 6; k++) {
				if (k)
					putc(',', f);
				put_hex_string(f, t->syscall_args[k]);
			}
			fputs("]}", f);
		} else {
			fputs("null", f);
		}
		fputs(",\"cpu_ns\":", f);
		put_u64(f, t->cpu_ns);
		fputs(",\"pause_ns\":", f);
		put_u64(f, t->pause_ns);
		fputs(",\"stack_bytes\":", f);
		put_u64(f, t->stack_bytes);
		putc(',', f);
		if (t->status == THREAD_FAILED) {
			fputs("\"error\":", f);
			json_put_string(f, thread_dump_failure_text(td, t), 0, 0);
			fputs(",\"errno\":", f);
			put_i64(f, -t->err);
			putc(',', f);
		}
		fputs(t->truncated ? "\"truncated\":true," : "\"truncated\":false,", f);
		if (t->truncated) {
			fputs("\"walk_end\":", f);
			json_put_string(f, t->walk_end[0] ? t->walk_end : "?", 0, 0);
			fputc(',', f);
		}
		fputs("\"frames\":[", f);
		for (unsigned j = 0; j < t->nframes; j++) {
			const struct thread_frame *fr = &t->frames[j];

			fputs(j ? ",{\"addr\":" : "{\"addr\":", f);
			put_hex_string(f, fr->addr);
			fputs(",\"function\":", f);
			json_put_string(f, fr->name ? fr->name : "??", 0, 0);
			fputs(",\"module\":", f);
			if (fr->module)
				json_put_string(f, fr->module, 0, 0);
			else
				fputs("null", f);
			fputs(",\"offset\":", f);
			put_hex_string(f, fr->module_offset);
			fputs(",\"kind\":\"", f);
			fputs(kind_name(fr->kind), f);
			putc('"', f);
			if (fr->file) {
				fputs(",\"file\":", f);
				json_put_string(f, fr->file, 0, 0);
				fputs(",\"line\":", f);
				put_u64(f, fr->line);
			}
			fputc('}', f);
		}
		fputs("]}", f);
	}
	fputs("\n]}\n", f);
	return ferror(f) ? -EIO : 0;
}
