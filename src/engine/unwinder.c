/* Which unwinder serves which --cstack mode. */
#include "engine/unwinder.h"

#include <errno.h>
#include <stddef.h>

static const struct {
	enum cstack_mode mode;
	const struct unwinder *u;
} table[] = {
	/* auto means "the best the target allows"; with one unwinder that
	 * is fp. DWARF goes here, and auto picks it per module later. */
	{ CSTACK_AUTO, &unwinder_fp },
	{ CSTACK_FP, &unwinder_fp },
};

int unwinder_select(enum cstack_mode mode, const struct unwinder **ret,
		    struct diag *d)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].mode == mode) {
			*ret = table[i].u;
			return 0;
		}
	if (mode == CSTACK_DWARF)
		return diag_set(d, -ENOTSUP,
				"--cstack dwarf: not available yet; use fp");
	return diag_set(d, -EINVAL, "--cstack: unknown mode %d", (int)mode);
}
