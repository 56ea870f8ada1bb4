/* BUILD/sanitize/bin/llvm-symbolizer (make sanitize-asan, sanitize-tsan):
 * the sanitizers' symbolizer, started without the preloaded agent.
 *
 * tests/integration/agent_sanitize.sh preloads a sanitizer build of
 * libnprof.so, which needs the sanitizer runtime linked into the program;
 * the runtime starts llvm-symbolizer with the same LD_PRELOAD, where the
 * agent cannot load. This program is static, so LD_PRELOAD does not touch
 * it: it drops the variable and becomes SYMBOLIZER (the Makefile's
 * -DSYMBOLIZER="/usr/bin/llvm-symbolizer-N"). */
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	(void)argc;
	unsetenv("LD_PRELOAD");
	argv[0] = (char *)SYMBOLIZER;
	execv(argv[0], argv);
	return 127;
}
