/* text: the thread dump as text, laid out like a jstack thread dump
 * (docs/nprof-stacks.1.md); the one text writer of both takers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/units.h"
#include "threaddump/threaddump.h"

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

static void write_state(const struct thread_info *t, FILE *f)
{
	fprintf(f, " state=%s", thread_state_name(t->state));
	if (t->sc == THREAD_SC_IN) {
		const char *name = thread_syscall_name(t->syscall_nr);

		if (t->restart_of[0])
			fprintf(f, " syscall=%s (restarted)", t->restart_of);
		else if (name)
			fprintf(f, " syscall=%s", name);
		else
			fprintf(f, " syscall=%ld", t->syscall_nr);
	} else if (t->sc == THREAD_SC_ON_CPU && t->state == 'R') {
		fputs(" on-cpu", f);
	}
}

const char *thread_dump_failure_text(const struct thread_dump *td, const struct thread_info *t)
{
	if (td->method == THREAD_DUMP_AGENT && t->err == -ETIMEDOUT)
		return "did not answer the agent's signal in time (the signal blocked, "
		       "or an uninterruptible sleep)";
	return strerror(-t->err);
}

static void write_frames(const struct thread_dump *td, const struct thread_info *t,
			 unsigned flags, FILE *f)
{
	switch (t->status) {
	case THREAD_GONE:
		fputs("\t(exited before its stack was taken)\n", f);
		return;
	case THREAD_FAILED:
		fprintf(f, "\t(stack not taken: %s)\n", thread_dump_failure_text(td, t));
		return;
	case THREAD_AGENT:
		fputs("\t(one of the nprof agent's own threads: its stack is not taken)\n", f);
		return;
	case THREAD_LIVE:
		fputs("\t(not stopped: in disk wait, stack read while the kernel held it)\n", f);
		break;
	case THREAD_TAKEN:
		break;
	}
	for (unsigned j = 0; j < t->nframes; j++) {
		const struct thread_frame *fr = &t->frames[j];

		fprintf(f, "\tat %s", fr->name ? fr->name : "??");
		if (fr->file && fr->line)
			fprintf(f, " (%s:%u)", base_name(fr->file), fr->line);
		else if (fr->module && fr->kind != FRAME_UNKNOWN)
			fprintf(f, " (%s)", base_name(fr->module));
		if (fr->kind == FRAME_INLINED)
			fputs(" [inlined]", f);
		if (flags & THREAD_DUMP_ADDRS)
			fprintf(f, " [0x%llx]", (unsigned long long)fr->addr);
		fputc('\n', f);
	}
	if (t->truncated)
		fprintf(f, "\t... (stack ends here: %s)\n", t->walk_end[0] ? t->walk_end : "?");
}

/* Same stack, state and system call: one group under -g. */
static bool same_group(const struct thread_info *a, const struct thread_info *b)
{
	if (a->status != b->status || a->state != b->state || a->sc != b->sc ||
	    strcmp(a->restart_of, b->restart_of) ||
	    (a->sc == THREAD_SC_IN && a->syscall_nr != b->syscall_nr) ||
	    a->nframes != b->nframes || a->truncated != b->truncated)
		return false;
	for (unsigned j = 0; j < a->nframes; j++) {
		const struct thread_frame *x = &a->frames[j], *y = &b->frames[j];

		if (strcmp(x->name ? x->name : "??", y->name ? y->name : "??") || x->line != y->line ||
		    (x->module == NULL) != (y->module == NULL) ||
		    (x->module && strcmp(x->module, y->module)))
			return false;
	}
	return true;
}

static void write_header(const struct thread_dump *td, FILE *f)
{
	char when[64], total[32], pmax[32], pmean[32];
	time_t sec = (time_t)(td->time_ns / 1000000000ll);
	struct tm tm;
	unsigned stopped = 0;

	for (size_t i = 0; i < td->nthreads; i++)
		stopped += td->threads[i].pause_ns > 0;
	localtime_r(&sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	fprintf(f, "Thread dump of PID %d (%s)%s%s at %s\n", (int)td->pid, td->comm,
		td->exe ? " " : "", td->exe ? td->exe : "", when);
	if (td->method == THREAD_DUMP_AGENT) {
		fprintf(f, "%zu threads, taken in %s by the in-process agent (each thread "
			   "walked its own stack in a signal handler; no ptrace, nothing stopped)\n",
			td->nthreads, units_format_ns(td->total_ns, total, sizeof(total)));
		return;
	}
	fprintf(f, "%zu threads, taken in %s; each thread paused %s on average, %s at most (ptrace)\n",
		td->nthreads, units_format_ns(td->total_ns, total, sizeof(total)),
		units_format_ns(stopped ? td->pause_sum_ns / stopped : 0, pmean, sizeof(pmean)),
		units_format_ns(td->pause_max_ns, pmax, sizeof(pmax)));
}

static void write_footer(const struct thread_dump *td, FILE *f)
{
	if (td->ngone)
		fprintf(f, "\nnote: %u thread%s exited during the dump\n", td->ngone,
			td->ngone == 1 ? "" : "s");
	if (td->nfailed)
		fprintf(f, "\nnote: %u thread%s could not be taken\n", td->nfailed,
			td->nfailed == 1 ? "" : "s");
	if (td->missed_new)
		fprintf(f, "\nnote: %u thread%s created during the dump %s not taken\n",
			td->missed_new, td->missed_new == 1 ? "" : "s",
			td->missed_new == 1 ? "was" : "were");
	if (td->omitted)
		fprintf(f, "\nnote: %u thread%s past the first %zu %s not dumped\n", td->omitted,
			td->omitted == 1 ? "" : "s", td->nthreads, td->omitted == 1 ? "was" : "were");
	if (td->process_exited)
		fputs("\nnote: the process exited during the dump\n", f);
}

int thread_dump_write_text(const struct thread_dump *td, unsigned flags, FILE *f)
{
	bool *done = calloc(td->nthreads ? td->nthreads : 1, sizeof(*done));
	char cpu[32];

	if (!done)
		return -ENOMEM;
	write_header(td, f);
	for (size_t i = 0; i < td->nthreads; i++) {
		const struct thread_info *t = &td->threads[i];
		size_t count = 1;
		uint64_t cpu_ns = t->cpu_ns;

		if (done[i])
			continue;
		done[i] = true;
		fputc('\n', f);
		if (!(flags & THREAD_DUMP_GROUP)) {
			fprintf(f, "\"%s\" tid=%d", t->name, (int)t->tid);
			write_state(t, f);
			fprintf(f, " cpu=%s", units_format_ns(cpu_ns, cpu, sizeof(cpu)));
			if (t->pause_ns)
				fprintf(f, " paused=%s", units_format_ns(t->pause_ns, cpu, sizeof(cpu)));
			fputc('\n', f);
			write_frames(td, t, flags, f);
			continue;
		}
		for (size_t j = i + 1; j < td->nthreads; j++)
			if (!done[j] && same_group(t, &td->threads[j])) {
				count++;
				cpu_ns += td->threads[j].cpu_ns;
			}
		if (count > 1)
			fprintf(f, "%zu threads ", count);
		/* The names (each once) and the tids of the group. */
		fprintf(f, "\"%s\"", t->name);
		for (size_t j = i + 1; j < td->nthreads; j++)
			if (!done[j] && same_group(t, &td->threads[j])) {
				size_t k;

				for (k = i; k < j; k++)
					if ((k == i || same_group(t, &td->threads[k])) &&
					    !strcmp(td->threads[k].name, td->threads[j].name))
						break;
				if (k == j)
					fprintf(f, ", \"%s\"", td->threads[j].name);
			}
		fprintf(f, " tid%s=%d", count > 1 ? "s" : "", (int)t->tid);
		for (size_t j = i + 1; j < td->nthreads; j++)
			if (!done[j] && same_group(t, &td->threads[j])) {
				fprintf(f, ",%d", (int)td->threads[j].tid);
				done[j] = true;
			}
		write_state(t, f);
		fprintf(f, " cpu=%s\n", units_format_ns(cpu_ns, cpu, sizeof(cpu)));
		write_frames(td, t, flags, f);
	}
	write_footer(td, f);
	free(done);
	return ferror(f) ? -EIO : 0;
}
