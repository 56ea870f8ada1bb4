/* kallsyms_fuzz: /proc/kallsyms text, then lookups. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/kallsyms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kallsyms k;

	if (kallsyms_init(&k) < 0)
		return 0;
	kallsyms_parse(&k, (const char *)data, size);
	kallsyms_finish(&k);
	for (size_t i = 0; i < k.n; i++) {
		const struct ksym *s = kallsyms_find(&k, k.syms[i].addr + 1);

		if (s && (strlen(kallsyms_name(&k, s)) == 0 || kallsyms_module(&k, s)[0] != '['))
			abort();
		if (i > 64)
			break;
	}
	kallsyms_release(&k);
	return 0;
}
