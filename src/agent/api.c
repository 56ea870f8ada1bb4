/* api: include/nprof.h, and what happens when libnprof.so is loaded
 * (NPROF_START, the control thread) and when the process ends. */
#include "nprof.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/hot/fatal.h"
#include "agent/process.h"

#define NPROF_EXPORT __attribute__((visibility("default")))

int agent_session_last(struct profile **ret, struct diag *d);
void agent_control_after_fork(void);

static __thread char last_error[512];

static int fail(int err, const struct diag *d)
{
	snprintf(last_error, sizeof(last_error), "%s", d->msg[0] ? d->msg : strerror(-err));
	return err;
}

/* Over the default action only: a program's own handler stays its own. */
static void install_fatal_handlers(void)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGSEGV,
				    SIGBUS, SIGILL, SIGFPE, SIGABRT };

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction old, sa;

		if (sigaction(sigs[i], NULL, &old) < 0 || old.sa_handler != SIG_DFL ||
		    (old.sa_flags & SA_SIGINFO))
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = hot_on_fatal;
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[i], &sa, NULL);
	}
}

static int start_session(const struct agent_options *o)
{
	struct diag d;
	int err;

	diag_clear(&d);
	last_error[0] = '\0';
	err = agent_control_start(&d);
	if (err == 0)
		err = agent_session_start(o, &d);
	if (err < 0)
		return fail(err, &d);
	if (o->file[0])
		install_fatal_handlers();
	return 0;
}

NPROF_EXPORT int nprof_start(const char *options)
{
	struct agent_options o;
	struct diag d;
	int err;

	diag_clear(&d);
	last_error[0] = '\0';
	err = agent_options_parse(options, &o, &d);
	return err < 0 ? fail(err, &d) : start_session(&o);
}

NPROF_EXPORT int nprof_stop(void)
{
	struct diag d;
	int err;

	diag_clear(&d);
	last_error[0] = '\0';
	err = agent_session_stop(NULL, &d);
	return err < 0 ? fail(err, &d) : 0;
}

NPROF_EXPORT int nprof_dump(const char *options)
{
	struct agent_options o;
	struct profile *p = NULL;
	struct diag d;
	int err;

	diag_clear(&d);
	last_error[0] = '\0';
	err = agent_options_parse(options, &o, &d);
	if (err == 0 && !o.file[0])
		err = diag_set(&d, -EINVAL, "nprof_dump: give file=PATH");
	if (err == 0) {
		err = agent_session_snapshot(&p, &d);
		if (err == -ENOENT) {
			diag_clear(&d);
			err = agent_session_last(&p, &d);
		}
	}
	if (err == 0)
		err = agent_write_profile(p, &o, &d);
	profile_free(p);
	return err < 0 ? fail(err, &d) : 0;
}

NPROF_EXPORT int nprof_status(char *buf, size_t len)
{
	struct agent_options o;
	enum event_id eff;
	uint64_t samples = 0;

	if (!buf || !len)
		return -EINVAL;
	if (agent_session_info(&o, &eff, &samples))
		snprintf(buf, len, "running event=%s effective=%s samples=%llu weight_ns=%llu",
			 event_name(o.event), event_name(eff), (unsigned long long)samples,
			 (unsigned long long)agent_session_weight_ns());
	else
		snprintf(buf, len, "idle");
	return 0;
}

NPROF_EXPORT int nprof_control_start(void)
{
	struct diag d;
	int err;

	diag_clear(&d);
	err = agent_control_start(&d);
	return err < 0 ? fail(err, &d) : 0;
}

NPROF_EXPORT int nprof_http_start(const char *address)
{
	const char *env = getenv("NPROF_HTTP");
	struct diag d;
	int err;

	diag_clear(&d);
	last_error[0] = '\0';
	if (!address || !*address)
		address = env && *env ? env : "127.0.0.1:9870";
	err = agent_http_start(address, &d);
	return err < 0 ? fail(err, &d) : 0;
}

NPROF_EXPORT int nprof_http_stop(void)
{
	int err = agent_http_stop();

	last_error[0] = '\0';
	if (err < 0)
		snprintf(last_error, sizeof(last_error), "the HTTP endpoint is not running");
	return err;
}

NPROF_EXPORT int nprof_http_token_path(char *buf, size_t len)
{
	int err = buf ? agent_http_token_path(buf, len) : -EINVAL;

	last_error[0] = '\0';
	if (err < 0)
		snprintf(last_error, sizeof(last_error), "%s",
			 err == -ENOENT ? "the HTTP endpoint is not running" : strerror(-err));
	return err;
}

NPROF_EXPORT const char *nprof_last_error(void)
{
	return last_error;
}

NPROF_EXPORT const char *nprof_version(void)
{
	return "0.1.0";
}

/* fork(): see agent/process.h. */
static void after_fork_child(void)
{
	struct agent_options o;
	bool again;

	agent_threads_after_fork();
	again = agent_session_after_fork(&o);
	agent_control_after_fork();
	if (again) {
		agent_profile_file_fork_child(&o);
		if (start_session(&o) < 0)
			agent_log("NPROF_START in a forked child: %s", last_error);
	}
}

/* Heap profiling (docs/memory.md): on and off while the process runs. */
NPROF_EXPORT int nprof_heap_enable(const char *options)
{
	char text[16];
	struct profile *p = NULL;
	struct agent_options o;
	struct diag d;
	int err;

	diag_clear(&d);
	last_error[0] = '\0';
	err = agent_heap_request("enable", options, text, sizeof(text), &p, &o, &d);
	if (err == 0)
		err = agent_control_start(&d); /* it keeps the module list current */
	return err < 0 ? fail(err, &d) : 0;
}

NPROF_EXPORT int nprof_heap_disable(void)
{
	struct diag d;
	int err;

	diag_clear(&d);
	last_error[0] = '\0';
	err = agent_heap_disable(&d);
	return err < 0 ? fail(err, &d) : 0;
}

NPROF_EXPORT int nprof_heap_status(char *buf, size_t len)
{
	if (!buf || !len)
		return -EINVAL;
	agent_heap_status(buf, len);
	return 0;
}

NPROF_EXPORT int nprof_heap_dump(const char *options)
{
	char text[16];
	struct profile *p = NULL;
	struct agent_options o;
	struct diag d;
	int err;

	diag_clear(&d);
	last_error[0] = '\0';
	err = agent_options_parse(options, &o, &d);
	if (err == 0 && !o.file[0])
		err = diag_set(&d, -EINVAL, "nprof_heap_dump: give file=PATH");
	if (err == 0)
		err = agent_heap_request("dump", options, text, sizeof(text), &p, &o, &d);
	profile_free(p);
	return err < 0 ? fail(err, &d) : 0;
}

/* NPROF_START=event=heap without a file: heap profiling on from the
 * start, to be queried and dumped while the process runs (no session, so
 * cpu or wall profiles can still be taken). */
static bool heap_only(const char *start)
{
	struct agent_options o;
	struct diag d;

	diag_clear(&d);
	return agent_options_parse(start, &o, &d) == 0 && o.event == EVENT_HEAP &&
	       !o.file[0] && !o.duration_ns;
}

__attribute__((constructor)) static void agent_load(void)
{
	const char *start = getenv("NPROF_START");
	const char *ctl = getenv("NPROF_CONTROL");
	const char *http = getenv("NPROF_HTTP");
	struct diag d;

	agent_threads_init_main();
	pthread_atfork(agent_session_before_fork, agent_session_after_fork_parent, after_fork_child);
	agent_mem_route();
	diag_clear(&d);
	if (start && *start && heap_only(start)) {
		if (nprof_heap_enable(start) < 0)
			agent_log("NPROF_START=%s: %s", start, last_error);
	} else if (start && *start) {
		struct agent_options o;

		if (agent_options_parse(start, &o, &d) < 0) {
			agent_log("NPROF_START=%s: %s", start, d.msg);
		} else {
			agent_profile_file_claim(&o);
			agent_log_keep_stderr(); /* for the last line, at exit */
			if (start_session(&o) < 0)
				agent_log("NPROF_START=%s: %s", start, last_error);
		}
	} else if (!ctl || strcmp(ctl, "0")) {
		if (agent_control_start(&d) < 0)
			agent_log("%s", d.msg);
	}
	if (http && *http && nprof_http_start(http) < 0)
		agent_log("NPROF_HTTP=%s: %s", http, last_error);
}

__attribute__((destructor)) static void agent_unload(void)
{
	agent_session_finish("the process exited; this is what was recorded");
}
