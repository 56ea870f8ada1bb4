/* libslowinit: a library whose constructor takes 1.5 s (asleep), for the
 * attach test that kills nprof while the process it injects into is still
 * inside dlopen: the thread must then finish and restore itself. */
#include <time.h>

__attribute__((constructor)) static void slow_init(void)
{
	struct timespec t = { 1, 500000000 };

	while (nanosleep(&t, &t) != 0)
		;
}
