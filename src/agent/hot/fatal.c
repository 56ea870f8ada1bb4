/* fatal: the handler for signals that end the process (SIGTERM, SIGINT,
 * SIGSEGV, ...), installed only when a profile is to be written at the
 * end and only over the default action. It asks the control thread to
 * write the profile, waits for it a bounded time, then restores the
 * default action and re-raises, so the process ends as it would have. */
#include "agent/hot/fatal.h"

#include <errno.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

struct hot_fatal hot_fatal = { .wake_fd = -1 };

void hot_on_fatal(int sig)
{
	int saved = errno;
	struct sigaction dfl;

	if (atomic_load(&hot_fatal.armed)) {
		uint64_t one = 1;
		int expect = 0;

		/* The first fatal signal asks; any later one (another thread
		 * crashing meanwhile) only waits with it. */
		if (atomic_compare_exchange_strong(&hot_fatal.signo, &expect, sig) &&
		    write(hot_fatal.wake_fd, &one, sizeof(one)) < 0)
			atomic_store(&hot_fatal.done, 1);
		for (int i = 0; i < HOT_FATAL_WAIT_MS / 10 && !atomic_load(&hot_fatal.done); i++) {
			struct timespec ts = { 0, 10000000 };

			nanosleep(&ts, NULL);
		}
	}
	dfl.sa_handler = SIG_DFL;
	dfl.sa_flags = 0;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	/* Pending until we return (sig is blocked in its handler), then the
	 * default action; a fault re-executes and ends the same way. */
	raise(sig);
	errno = saved;
}
