/* fatal: writing the profile when the process is ended by a signal.
 * hot_on_fatal runs in signal context on whichever thread got the signal;
 * the control thread (never that thread: it blocks every signal) does the
 * writing and sets done. */
#ifndef NPROF_AGENT_HOT_FATAL_H
#define NPROF_AGENT_HOT_FATAL_H

#include <signal.h>
#include <stdatomic.h>

#define HOT_FATAL_WAIT_MS 5000 /* longest the dying thread waits */

struct hot_fatal {
	atomic_int armed;	/* the control thread runs and can write */
	atomic_int signo;	/* the first fatal signal, 0 before */
	atomic_int done;	/* the control thread has written */
	int wake_fd;		/* eventfd the control thread polls */
};

extern struct hot_fatal hot_fatal;

void hot_on_fatal(int sig);

#endif
