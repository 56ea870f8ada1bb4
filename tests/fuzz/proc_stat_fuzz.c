/* proc_stat_fuzz: any text as a /proc/PID/stat line (a process's name is
 * its owner's to choose): the parse ends, and what it returns is a
 * NUL-terminated name and a known state. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/proc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	struct proc_stat st;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (proc_stat_parse(text, &st) == 0 && (strlen(st.comm) >= sizeof(st.comm) || !st.state))
		abort();
	free(text);
	return 0;
}
