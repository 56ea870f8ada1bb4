/* The PID argument every process command takes. */
#include <errno.h>
#include <stdlib.h>

#include "cli/cli.h"

int cli_parse_pid(const char *arg, pid_t *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v <= 0 || v > 0x7fffffff)
		return -EINVAL;
	*ret = (pid_t)v;
	return 0;
}
