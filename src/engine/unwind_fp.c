/* fp: stacks from the kernel's callchain, which walks frame pointers in
 * user space (and the kernel's own unwinder, ORC or fp, for kernel
 * frames). Costs nothing in the target beyond the kernel's walk; code
 * built without frame pointers yields short or skipping stacks, which is
 * what the DWARF unwinder is for. */
#include "engine/unwinder.h"

#include <errno.h>

static void fp_prepare_attr(struct perf_event_attr *a, unsigned max_stack)
{
	a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	a->sample_max_stack = (uint16_t)max_stack;
}

/* The chain is segments, each opened by a PERF_CONTEXT_* marker:
 * [KERNEL k0 k1 ...] [USER u0 u1 ...], leaf first. Hypervisor and guest
 * segments are not ours to name and are skipped. The kernel caps the
 * entries (markers excluded) at sample_max_stack, walking from the leaf,
 * so a full chain means the root-most frames were cut. */
static int fp_unwind(void *state, const struct raw_sample *s, uint64_t *ips,
		     unsigned max, struct unwound *ret)
{
	enum { SEG_NONE, SEG_KERNEL, SEG_USER } seg = SEG_NONE;
	struct unwound u = { 0 };
	unsigned entries = 0;

	(void)state;
	for (uint64_t i = 0; i < s->nr; i++) {
		uint64_t a = s->callchain[i];

		if (a >= PERF_CONTEXT_MAX) {
			seg = a == PERF_CONTEXT_KERNEL ? SEG_KERNEL
			      : a == PERF_CONTEXT_USER ? SEG_USER
						       : SEG_NONE;
			continue;
		}
		entries++;
		if (seg == SEG_NONE)
			continue;
		/* Kernel frames come before user ones; a kernel entry after
		 * user ones would break nkernel's meaning: drop it. */
		if (seg == SEG_KERNEL && u.n != u.nkernel)
			continue;
		if (u.n == max) {
			u.truncated = true;
			break;
		}
		ips[u.n++] = a;
		if (seg == SEG_KERNEL)
			u.nkernel++;
	}
	if (!s->nr && s->ip && max) {
		/* No chain at all (should not happen): keep the pc. */
		ips[0] = s->ip;
		u.n = 1;
	}
	if (max && entries >= max)
		u.truncated = true;
	/* The kernel's walk ends at a zero or implausible frame pointer,
	 * which looks the same whether the root was reached or code without
	 * frame pointers hid the callers: only the depth cap is known. */
	u.end = u.truncated ? UNWOUND_DEPTH : UNWOUND_COMPLETE;
	*ret = u;
	return u.n ? 0 : -ENODATA;
}

const struct unwinder unwinder_fp = {
	.name = "fp",
	.prepare_attr = fp_prepare_attr,
	.unwind = fp_unwind,
};
