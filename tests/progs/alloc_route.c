/* alloc_route: where this program's own PLT slots (JUMP_SLOT) of malloc,
 * free and pthread_mutex_lock point while the agent, preloaded, turns its
 * engines on and off through its C API (found with dlsym: the program is
 * not linked with it), for tests/integration/agent_route.sh; and whether
 * heap profiling's live set stays right across the switches.
 *
 *   alloc_route PROFILE_FILE
 *
 * Prints one line per step, "STEP malloc=X free=X pthread_mutex_lock=X"
 * where X is the file name of the module the slot points into
 * (libnprof.so, libc.so.6, ...; "self" for a lazy-binding stub not
 * resolved yet), and "STEP live=N" for the live sampled blocks that
 * nprof_heap_status reports. Built twice: lazily bound, and with
 * -z now (alloc_route_now: the slots in read-only RELRO pages). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progs.h"

#define BLOCKS 2000
#define BLOCK_BYTES 4099 /* a prime, as the other tests' sizes */

static const char *const names[] = { "malloc", "free", "pthread_mutex_lock" };
static void **slots[3];

/* The program's own JUMP_SLOT relocations naming each of names. */
static int find_slots(struct dl_phdr_info *info, size_t size, void *arg)
{
	const ElfW(Dyn) *dyn = NULL;
	const ElfW(Rela) *rel = NULL;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	size_t n = 0;

	(void)size;
	(void)arg;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		/* the loader relocates these in place, as a rule */
		uintptr_t v = dyn->d_un.d_ptr < info->dlpi_addr ? info->dlpi_addr + dyn->d_un.d_ptr
								 : dyn->d_un.d_ptr;

		if (dyn->d_tag == DT_JMPREL)
			rel = (const ElfW(Rela) *)v;
		if (dyn->d_tag == DT_PLTRELSZ)
			n = dyn->d_un.d_val / sizeof(ElfW(Rela));
		if (dyn->d_tag == DT_SYMTAB)
			symtab = (const ElfW(Sym) *)v;
		if (dyn->d_tag == DT_STRTAB)
			strtab = (const char *)v;
	}
	for (size_t i = 0; rel && symtab && strtab && i < n; i++)
		for (int k = 0; k < 3; k++)
			if (!strcmp(strtab + symtab[ELF64_R_SYM(rel[i].r_info)].st_name, names[k]))
				slots[k] = (void **)(info->dlpi_addr + rel[i].r_offset);
	return 1; /* the program is the first module */
}

/* The file name of the module p is in; "self" for this program. */
static const char *module_of(void *p)
{
	Dl_info dl, self;
	const char *base;

	if (!p || !dladdr(p, &dl) || !dl.dli_fname)
		return "none";
	if (dladdr((void *)module_of, &self) && dl.dli_fbase == self.dli_fbase)
		return "self";
	base = strrchr(dl.dli_fname, '/');
	return base ? base + 1 : dl.dli_fname;
}

static void show(const char *step)
{
	printf("%s", step);
	for (int k = 0; k < 3; k++)
		printf(" %s=%s", names[k], module_of(*slots[k]));
	printf("\n");
	fflush(stdout);
}

static int (*heap_status)(char *, size_t);

static void live(const char *step)
{
	char buf[512];
	const char *at;

	heap_status(buf, sizeof(buf));
	at = strstr(buf, " live sampled blocks");
	while (at && at > buf && at[-1] >= '0' && at[-1] <= '9')
		at--;
	printf("%s live=%ld\n", step, at ? atol(at) : -1L);
	fflush(stdout);
}

static void *blocks[BLOCKS];

NOINLINE static void allocate(void)
{
	KEEP_FRAME();
	for (int i = 0; i < BLOCKS; i++)
		blocks[i] = malloc(BLOCK_BYTES);
}

NOINLINE static void release(void)
{
	KEEP_FRAME();
	for (int i = 0; i < BLOCKS; i++)
		free(blocks[i]);
}

int main(int argc, char **argv)
{
	int (*start)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "nprof_start");
	int (*stop)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "nprof_stop");
	int (*heap_on)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT,
								   "nprof_heap_enable");
	int (*heap_off)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "nprof_heap_disable");
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	char options[4200];
	void *volatile one; /* volatile: not a malloc and free pair gcc may drop */

	heap_status = (int (*)(char *, size_t))dlsym(RTLD_DEFAULT, "nprof_heap_status");
	if (argc != 2 || !start || !stop || !heap_on || !heap_off || !heap_status) {
		fprintf(stderr, "usage: LD_PRELOAD=libnprof.so alloc_route PROFILE_FILE\n");
		return 2;
	}
	dl_iterate_phdr(find_slots, NULL);
	if (!slots[0] || !slots[1] || !slots[2]) {
		fprintf(stderr, "alloc_route: no PLT slot for malloc, free or pthread_mutex_lock\n");
		return 2;
	}
	/* Each called once, so that lazy slots are resolved as in most
	 * programs; the agent routes unresolved ones too. */
	one = malloc(1);
	free(one);
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	show("idle");

	/* Heap on, blocks sampled (interval < block), heap off, the blocks
	 * freed straight into the C library, heap on again: none live. */
	if (heap_on("interval=1k") < 0)
		return 3;
	show("heap");
	allocate();
	live("heap-allocated");
	if (heap_off() < 0)
		return 3;
	show("heap-off");
	release();
	if (heap_on("interval=1k") < 0)
		return 3;
	live("heap-again");
	allocate();
	release();
	live("heap-freed");
	if (heap_off() < 0)
		return 3;

	snprintf(options, sizeof(options), "event=alloc,interval=512k,file=%s", argv[1]);
	if (start(options) < 0)
		return 3;
	show("alloc");
	if (stop() < 0)
		return 3;
	show("alloc-off");
	snprintf(options, sizeof(options), "event=lock,file=%s", argv[1]);
	if (start(options) < 0)
		return 3;
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	show("lock");
	if (stop() < 0)
		return 3;
	show("lock-off");
	return 0;
}
