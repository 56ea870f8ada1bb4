/* log: one line per event, written whole so threads do not interleave. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "daemon/core/log.h"

static _Thread_local uint64_t request_number;

void log_set_request(uint64_t number)
{
	request_number = number;
}

uint64_t log_request(void)
{
	return request_number;
}

__attribute__((format(printf, 2, 0))) static void vlog(const char *level, const char *fmt, va_list ap)
{
	char line[2048];
	struct timespec ts;
	struct tm tm;
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ nprofd %s: ",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
		     tm.tm_sec, ts.tv_nsec / 1000000, level);
	if (n > 0 && (size_t)n < sizeof(line) && request_number)
		n += snprintf(line + n, sizeof(line) - (size_t)n, "request %llu: ",
			      (unsigned long long)request_number);
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	if ((size_t)n >= sizeof(line) - 1)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	(void)!write(STDERR_FILENO, line, (size_t)n);
}

void log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("info", fmt, ap);
	va_end(ap);
}

void log_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("error", fmt, ap);
	va_end(ap);
}
