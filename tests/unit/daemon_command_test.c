/* command_argv: an operator's command line into an argv, no shell. */
#include <errno.h>
#include <stdlib.h>

#include "daemon/jobs/command.h"
#include "test.h"

static char *joined(char **argv)
{
	static char buf[1024];
	size_t n = 0;

	buf[0] = '\0';
	for (char **a = argv; a && *a; a++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s[%s]", a == argv ? "" : " ", *a);
	return buf;
}

int main(void)
{
	char **a;

	a = command_argv("perf stat -o %o -p %p -- sleep %d", 1234, 10, "/s/work/7/output");
	CHECK_STR(joined(a), "[perf] [stat] [-o] [/s/work/7/output] [-p] [1234] [--] [sleep] [10]",
		  "placeholders replaced, split on blanks");
	command_argv_free(a);

	a = command_argv("  sh -c 'kill -0 %p && echo \"alive %p\"'  ", 42, 0, NULL);
	CHECK_STR(joined(a), "[sh] [-c] [kill -0 42 && echo \"alive 42\"]",
		  "quotes group words, placeholders inside them too, blanks at the ends dropped");
	command_argv_free(a);

	a = command_argv("echo 100%% %x \"\"", 1, 0, NULL);
	CHECK_STR(joined(a), "[echo] [100%] [%x] []", "%%%% is %%, an unknown %%x kept, \"\" an empty word");
	command_argv_free(a);

	a = command_argv("gcore -o %o%p", 7, 0, "/w/output");
	CHECK_STR(joined(a), "[gcore] [-o] [/w/output7]", "placeholders run together");
	command_argv_free(a);

	errno = 0;
	a = command_argv("sh -c 'unbalanced", 1, 0, NULL);
	CHECK(!a && errno == EINVAL, "an unbalanced quote: NULL, EINVAL");
	errno = 0;
	a = command_argv("   ", 1, 0, NULL);
	CHECK(!a && errno == EINVAL, "nothing to run: NULL, EINVAL");
	command_argv_free(NULL);
	return test_done();
}
