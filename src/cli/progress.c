#include "cli/progress.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"

static struct {
	bool shown;	  /* a line is on the terminal now */
	uint64_t last_ns; /* when it was written */
} P;

bool progress_wanted(void)
{
	return isatty(STDERR_FILENO);
}

static void show(uint64_t now, const char *fmt, va_list ap)
{
	struct winsize ws;
	size_t width = 80;
	char line[512];
	int n;

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 8)
		width = ws.ws_col;
	n = snprintf(line, sizeof(line), "nprof: ");
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	/* One line, always: longer would wrap, and \r would not bring the
	 * cursor back to its start. */
	if (width - 1 < sizeof(line))
		line[width - 1] = '\0';
	fprintf(stderr, "\r\033[K%s", line);
	fflush(stderr);
	P.shown = true;
	P.last_ns = now;
}

void progress_show(const char *fmt, ...)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	va_list ap;

	if (P.shown && now - P.last_ns < (uint64_t)PROGRESS_PERIOD_MS * 1000000)
		return;
	va_start(ap, fmt);
	show(now, fmt, ap);
	va_end(ap);
}

void progress_step(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	show(clock_ns(CLOCK_MONOTONIC), fmt, ap);
	va_end(ap);
}

void progress_clear(void)
{
	if (!P.shown)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	P.shown = false;
}

void progress_recording(void *arg, const struct record_progress *pr)
{
	char of[32] = "", counts[96] = "";

	if (pr->duration_ns)
		snprintf(of, sizeof(of), " of %.0f s", (double)pr->duration_ns / 1e9);
	if (pr->samples || pr->threads)
		snprintf(counts, sizeof(counts), ", %llu samples, %zu thread%s",
			 (unsigned long long)pr->samples, pr->threads, pr->threads == 1 ? "" : "s");
	progress_show("recording PID %d: %.1f s%s%s; Ctrl-C stops early", (int)*(pid_t *)arg,
		      (double)pr->elapsed_ns / 1e9, of, counts);
}
