/* unwind_fuzz: random registers and random stack bytes through the
 * walker, with the real tables of this process (the fuzzer binary, libc,
 * the vDSO...) built once at start. The walk must end, write at most max
 * addresses and never read outside the stack copy.
 *
 * Input: 3 words rip, rsp, rbp, then the stack bytes. So that random
 * input reaches deep paths, a word whose top 16 bits are 0xfffe is moved
 * into a real executable mapping (low bits: which one and where) and one
 * with 0xfffd into the stack copy; other words stay as they are. */
#include "unwind/modules.h"
#include "unwind/unwind_table.h"
#include "unwind/walker.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define STACK_BASE 0x7ffc12340000ull
#define MAX_STACK (64u << 10)
#define MAX_FRAMES 256

static struct unwind_cache *cache;
static struct unwind_modules mods;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	cache = unwind_cache_new();
	unwind_modules_init(&mods);
	if (!cache || unwind_modules_from_maps(&mods, cache, 0) || !mods.n)
		abort();
	return 0;
}

static uint64_t steer(uint64_t w, size_t stack_len)
{
	uint64_t low = w & 0xffffffffffffull;

	if (w >> 48 == 0xfffe) {
		const struct unwind_module *m = &mods.v[(low >> 32) % mods.n];
		return m->start + (low & 0xffffffff) % (m->end - m->start);
	}
	if (w >> 48 == 0xfffd)
		return STACK_BASE + (stack_len ? low % stack_len : 0);
	return w;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unwind_regs regs;
	struct unwind_stack_copy sc;
	struct unwind_info info;
	uint64_t ips[MAX_FRAMES], w[3];
	unsigned n, max;
	uint8_t *stack;
	size_t len;

	if (size < 25)
		return 0;
	max = 1 + data[24] % MAX_FRAMES;
	len = size - 25 > MAX_STACK ? MAX_STACK : size - 25;
	stack = malloc(len ? len : 1); /* exact size: ASan catches overreads */
	if (!stack)
		return 0;
	memcpy(w, data, 24);
	memcpy(stack, data + 25, len);
	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t v;
		memcpy(&v, stack + i, 8);
		v = steer(v, len);
		memcpy(stack + i, &v, 8);
	}
	regs.rip = steer(w[0], len);
	regs.rsp = w[1] >> 48 == 0xfffd ? steer(w[1], len) : STACK_BASE + (w[1] & 0xff);
	regs.rbp = steer(w[2], len);
	sc = (struct unwind_stack_copy){ STACK_BASE, stack, len };
	n = unwind_walk_ex(&regs, &mods, unwind_read_stack_copy, &sc, ips, max, &info);
	if (n > max || (max && !n) || (n && ips[0] != regs.rip))
		abort();
	if (info.stop > UNWIND_STOP_NO_INFO)
		abort();
	free(stack);
	return 0;
}
