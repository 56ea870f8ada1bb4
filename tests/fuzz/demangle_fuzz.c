/* demangle_fuzz: the simple-name rules on arbitrary text (what libiberty
 * prints is not trusted to be well formed), and demangling of arbitrary
 * mangled-looking names. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/demangle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), *simple, *dem;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	simple = demangle_simplify(s);
	if (simple && strlen(simple) > strlen(s))
		abort(); /* simplifying never adds text */
	free(simple);
	dem = demangle(s);
	if (dem) {
		simple = demangle_simplify(dem);
		free(simple);
		free(dem);
	}
	free(s);
	return 0;
}
