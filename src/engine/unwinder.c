/* Which unwinder serves which --cstack mode. */
#include "engine/unwinder.h"

#include <errno.h>
#include <stddef.h>

static const struct {
	enum cstack_mode mode;
	const struct unwinder *u;
} table[] = {
#if defined(__x86_64__)
	/* auto means "the best the target allows": DWARF, which engine.c
	 * turns into fp when the target's tables or the probe fail. */
	{ CSTACK_AUTO, &unwinder_dwarf },
	{ CSTACK_DWARF, &unwinder_dwarf },
#else
	{ CSTACK_AUTO, &unwinder_fp },
#endif
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
				"--cstack dwarf: the DWARF walker supports x86-64 only; use fp");
	return diag_set(d, -EINVAL, "--cstack: unknown mode %d", (int)mode);
}
