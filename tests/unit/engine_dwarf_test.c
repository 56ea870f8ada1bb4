/* engine_dwarf_test: the dwarf unwinder (src/engine/unwind_dwarf.c) on
 * samples made by hand from this thread's own registers and stack, as
 * perf would deliver them: the walk through code without frame pointers,
 * the kernel part joined before the user part, why a stack ends (depth,
 * a copy too short, no registers), the module list kept current from
 * mapping records and emptied on exec; then the recorder with it on a
 * child process: every sample reaches main, none lost or truncated. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/events.h"
#include "engine/recorder.h"
#include "engine/unwinder.h"
#include "unwind/modules.h"
#include "test.h"
#include "../progs/work.h"

#define SECTION(s) __attribute__((noinline, section(s), used))
/* No frame pointers: only CFI can walk through these. */
#define NOFP(s) __attribute__((noinline, section(s), used, optimize("omit-frame-pointer")))
#define NOTAIL() __asm__ volatile("" ::: "memory")
#define COPY UNWIND_DWARF_STACK_BYTES
#define MAX 256

extern const char __start_dw_main[], __stop_dw_main[];
extern const char __start_dw_nofp[], __stop_dw_nofp[];

int main(void);

/* A perf sample in the making: regs in perf's order for
 * UNWIND_PERF_REGS_MASK (bp, sp, ip: lowest bit first). */
struct snap {
	uint64_t regs[3];
	uint8_t stack[COPY];
	uint64_t len;
};

static struct snap snap;
static uint64_t stack_end;

static void find_stack_end(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uint64_t sp = (uint64_t)(uintptr_t)__builtin_frame_address(0);

	while (f && fgets(line, sizeof(line), f)) {
		uint64_t lo, hi;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64, &lo, &hi) == 2 && sp >= lo && sp < hi)
			stack_end = hi;
	}
	if (f)
		fclose(f);
}

static __attribute__((noinline)) void capture(struct snap *s)
{
	uint64_t rip, rsp, rbp;
	size_t len;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(rip), "=r"(rsp), "=r"(rbp)::"memory");
	len = stack_end - rsp < COPY ? stack_end - rsp : COPY;
	memcpy(s->stack, (const void *)(uintptr_t)rsp, len);
	s->regs[0] = rbp;
	s->regs[1] = rsp;
	s->regs[2] = rip;
	s->len = len;
}

void nofp1(struct snap *s);
void nofp2(struct snap *s);
NOFP("dw_nofp") void nofp1(struct snap *s)
{
	/* A frame-pointer walk cannot pass through here. */
	__asm__ volatile("xor %%ebp, %%ebp" ::: "rbp", "memory");
	capture(s);
	NOTAIL();
}
NOFP("dw_nofp") void nofp2(struct snap *s)
{
	char pad[40];

	__asm__ volatile("" ::"r"(pad) : "memory");
	nofp1(s);
	NOTAIL();
}

static bool in(uint64_t a, const char *lo, const char *hi)
{
	return a >= (uint64_t)(uintptr_t)lo && a < (uint64_t)(uintptr_t)hi;
}

/* The raw sample perf would have delivered for s. */
static struct raw_sample sample_of(const struct snap *s, const uint64_t *chain,
				   uint64_t nr)
{
	return (struct raw_sample){
		.ip = s->regs[2],
		.nr = nr,
		.callchain = chain,
		.regs_abi = PERF_SAMPLE_REGS_ABI_64,
		.regs = s->regs,
		.nregs = 3,
		.stack_size = COPY,
		.stack = s->stack,
		.stack_dyn_size = s->len,
	};
}

static unsigned count_in(const uint64_t *ips, unsigned from, unsigned n,
			 const char *lo, const char *hi)
{
	unsigned k = 0;

	for (unsigned i = from; i < n; i++)
		k += in(ips[i] - (i > from), lo, hi);
	return k;
}

static void *state;

static void test_walk(void)
{
	uint64_t ips[MAX];
	uint64_t kchain[] = { PERF_CONTEXT_KERNEL, 0xffffffff81000010ull,
			      0xffffffff81000020ull };
	struct raw_sample s;
	struct unwound u;
	int err;

	nofp2(&snap);
	s = sample_of(&snap, NULL, 0);
	err = unwinder_dwarf.unwind(state, &s, ips, MAX, &u);
	CHECK(!err && !u.nkernel && u.n >= 5, "a user-only sample unwinds (%u frames)", u.n);
	CHECK(ips[0] == snap.regs[2], "the first address is the sampled pc");
	CHECK(count_in(ips, 0, u.n, __start_dw_nofp, __stop_dw_nofp) == 2,
	      "both frames without frame pointers are there");
	CHECK(count_in(ips, 0, u.n, __start_dw_main, __stop_dw_main) == 1,
	      "the walk reaches main through them");
	CHECK(!u.truncated && u.end == UNWOUND_COMPLETE, "and ends at the outermost frame (end %d)",
	      u.end);

	/* Kernel frames first, leaf side; the user part after them. */
	s = sample_of(&snap, kchain, 3);
	err = unwinder_dwarf.unwind(state, &s, ips, MAX, &u);
	CHECK(!err && u.nkernel == 2 && ips[0] == kchain[1] && ips[1] == kchain[2] &&
		      ips[2] == snap.regs[2],
	      "kernel frames, then the user frames from the sampled pc");
	CHECK(count_in(ips, 2, u.n, __start_dw_main, __stop_dw_main) == 1 && !u.truncated,
	      "the joined stack still reaches main");

	s = sample_of(&snap, kchain, 3);
	err = unwinder_dwarf.unwind(state, &s, ips, 4, &u);
	CHECK(!err && u.n == 4 && u.truncated && u.end == UNWOUND_DEPTH,
	      "max frames: cut, truncated, by depth");
	err = unwinder_dwarf.unwind(state, &s, ips, 2, &u);
	CHECK(!err && u.n == 2 && u.nkernel == 2 && u.end == UNWOUND_DEPTH,
	      "kernel frames alone filling max: by depth");

	/* A full copy that ends too soon: the stack goes on beyond it. */
	s = sample_of(&snap, NULL, 0);
	s.stack_size = s.stack_dyn_size = 64;
	err = unwinder_dwarf.unwind(state, &s, ips, MAX, &u);
	CHECK(!err && u.truncated && u.end == UNWOUND_COPY_END,
	      "a copy too short: truncated, the copy's size named (end %d)", u.end);
	/* A short copy (the kernel stopped at the stack's top): a read past
	 * it is a bad pointer, not a small copy. */
	s.stack_size = COPY;
	err = unwinder_dwarf.unwind(state, &s, ips, MAX, &u);
	CHECK(!err && u.truncated && u.end == UNWOUND_FAULT, "a read past a short copy: a fault");

	s = sample_of(&snap, NULL, 0);
	s.regs_abi = 0;
	err = unwinder_dwarf.unwind(state, &s, ips, MAX, &u);
	CHECK(!err && u.n == 1 && ips[0] == s.ip && u.end == UNWOUND_NO_REGS && u.truncated,
	      "no user registers: the pc alone, truncated");
	s.ip = 0;
	err = unwinder_dwarf.unwind(state, &s, ips, MAX, &u);
	CHECK(err == -ENODATA, "nothing at all: -ENODATA (counted by the recorder)");
}

/* Every executable mapping of this process as an MMAP2 record would
 * bring it. */
static unsigned replay_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	unsigned n = 0;

	while (f && fgets(line, sizeof(line), f)) {
		struct mapping m = { 0 };
		char perms[8];
		int at = 0;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n",
			   &m.start, &m.end, perms, &m.pgoff, &at) < 4 || !at ||
		    !strchr(perms, 'x'))
			continue;
		line[strcspn(line, "\n")] = '\0';
		m.path = line + at;
		m.prot = PROT_READ | PROT_EXEC;
		unwinder_dwarf.on_mapping(state, &m);
		n++;
	}
	if (f)
		fclose(f);
	return n;
}

static void test_mappings(void)
{
	const struct unwind_modules *mods = unwinder_dwarf_modules(state);
	uint64_t ips[MAX], text = (uint64_t)(uintptr_t)main & ~4095ull;
	const struct unwind_module *mod = unwind_modules_find(mods, text);
	struct raw_sample s = sample_of(&snap, NULL, 0);
	struct mapping anon = { .start = text, .end = text + 4096,
				.prot = PROT_READ | PROT_EXEC, .path = "//anon" };
	struct mapping data = anon;
	struct unwound u;
	unsigned before = mods->n, n;

	CHECK(mod && mod->table && mod->table->cfi, "this program's text has a table");
	if (!mod)
		return;
	/* Exec mappings only: data mappings are not for the walker. */
	data.prot = PROT_READ | PROT_WRITE;
	unwinder_dwarf.on_mapping(state, &data);
	CHECK(mods->n == before, "a data mapping changes nothing");
	/* A new mapping over part of a module replaces that part. */
	unwinder_dwarf.on_mapping(state, &anon);
	mod = unwind_modules_find(mods, text);
	CHECK(mod && mod->start == text && mod->end == text + 4096 && !mod->table &&
		      mods->n >= before + 1 && mods->n <= before + 2,
	      "an anonymous mapping over the text replaces that page (modules %u -> %u)",
	      before, mods->n);
	mod = unwind_modules_find(mods, text + 4096);
	CHECK(mod && mod->table, "the rest of the module keeps its table");

	unwinder_dwarf.on_exec(state);
	CHECK(mods->n == 0, "exec empties the list");
	unwinder_dwarf.unwind(state, &s, ips, MAX, &u);
	CHECK(!count_in(ips, 0, u.n, __start_dw_main, __stop_dw_main),
	      "without tables the walk cannot cross the frames without frame pointers");

	n = replay_maps();
	CHECK(n >= 3 && mods->n == n, "mapping records rebuild it (%u modules)", mods->n);
	unwinder_dwarf.unwind(state, &s, ips, MAX, &u);
	CHECK(count_in(ips, 0, u.n, __start_dw_main, __stop_dw_main) == 1 && !u.truncated,
	      "and the walk reaches main again");
}

/* The child's work, called from main's section so its samples can be
 * checked for main. */
static volatile uint64_t sink;
NOFP("dw_nofp") void child_leaf(uint64_t n);
NOFP("dw_nofp") void child_leaf(uint64_t n)
{
	__asm__ volatile("xor %%ebp, %%ebp" ::: "rbp", "memory");
	for (uint64_t i = 0; i < n; i++)
		sink += i * 7;
	NOTAIL();
}

/* CPU time of process pid (utime + stime), in ns. */
static uint64_t child_cpu_ns(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st);
	fclose(f);
	return (ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

static void test_recorder(pid_t child)
{
	struct recorder_config c = {
		.pid = child,
		.event = engine_event_find("cpu"),
		.unwinder = &unwinder_dwarf,
		.force_user_only = true,
	};
	struct recorder *r = NULL;
	struct diag d = { "" };
	uint64_t samples = 0, in_main = 0, in_leaf = 0, cpu0, cpu1;
	int err;

	cpu0 = child_cpu_ns(child);
	err = recorder_new(&c, &r, &d);
	if (!err)
		err = recorder_start(r, &d);
	if (!err)
		err = recorder_run(r, 600000000, NULL, &d);
	cpu1 = child_cpu_ns(child);
	CHECK(!err, "the recorder runs with the dwarf unwinder: %s", d.msg);
	if (err)
		goto out;
	for (size_t i = 0; i < r->chains.nchains; i++) {
		const struct chain *st = &r->chains.chains[i];
		const uint64_t *ips = chain_table_ips(&r->chains, st);

		samples += st->samples;
		if (count_in(ips, st->nkernel, st->n, __start_dw_main, __stop_dw_main))
			in_main += st->samples;
		if (st->n > st->nkernel && in(ips[st->nkernel], __start_dw_nofp, __stop_dw_nofp))
			in_leaf += st->samples;
	}
	printf("# %" PRIu64 " samples, %" PRIu64 " reach main, %" PRIu64
	       " in the leaf; lost %" PRIu64 ", truncated %" PRIu64 ", ring %zu KiB; "
	       "the child used %.3f s of CPU\n",
	       samples, in_main, in_leaf, r->stats.lost, r->stats.truncated,
	       r->stats.ring_bytes >> 10, (cpu1 - cpu0) / 1e9);
	/* One sample per 10 ms of the CPU time the kernel charged the child
	 * over the call (engine_raw_test's 70%): not a count for one host. */
	CHECK(samples > 0 && samples * 10000000 >= (cpu1 - cpu0) * 7 / 10 &&
		      in_leaf * 10 >= samples * 9,
	      "samples land in the child's leaf (%" PRIu64 " of %" PRIu64 ")", in_leaf, samples);
	CHECK(in_main * 100 >= samples * 99, "every sample reaches main (%" PRIu64 " of %" PRIu64 ")",
	      in_main, samples);
	CHECK(!r->stats.lost && !r->stats.truncated && !r->stats.unwind_failed,
	      "none lost, truncated or failed");
	CHECK(r->stats.ring_wanted == (1u << 20) && r->stats.ring_bytes >= (64u << 10),
	      "1 MiB rings wanted (%zu KiB mapped)", r->stats.ring_bytes >> 10);
out:
	recorder_free(r);
}

__attribute__((section("dw_main"))) int main(void)
{
	struct diag d = { "" };
	pid_t child;
	int err;

	find_stack_end();
	err = unwinder_dwarf.state_new(getpid(), &state, &d);
	CHECK(!err && state, "state for this process: %s", d.msg);
	if (err)
		return test_done();
	CHECK(unwinder_dwarf_modules(state)->n == 0,
	      "state_new builds no table: that waits for state_load, once sampling runs");
	unwinder_dwarf.state_load(state);
	test_walk();
	NOTAIL();
	test_mappings();
	NOTAIL();
	unwinder_dwarf.state_free(state);
	unwinder_dwarf.state_free(NULL);

	child = fork();
	if (child == 0) {
		uint64_t n = work_chunk(1000000);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			child_leaf(n);
	}
	if (child > 0) {
		test_recorder(child);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	return test_done();
}
