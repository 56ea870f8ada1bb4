/* sched_format_fuzz: a tracepoint format file (sched:sched_switch's), then
 * a state read from a raw record of the size it claims. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sched_switch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sched_switch_format f = { 0 };
	uint8_t raw[64] = { 0 };

	if (sched_switch_parse_format((const char *)data, size, &f) < 0)
		return 0;
	if (f.state_size != 4 && f.state_size != 8)
		abort();
	/* Offsets past the record must read as unknown, never past it. */
	sched_switch_state(&f, raw, sizeof(raw));
	return 0;
}
