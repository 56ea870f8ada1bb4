/* kallsyms: kernel function symbols from /proc/kallsyms text.
 *
 * Lines are "ADDR TYPE NAME[\t[MODULE]]". Only text symbols (t, T, w, W)
 * are kept. kallsyms has no sizes: an address belongs to the nearest
 * symbol below it, within KALLSYMS_MAX_GAP. When the kernel hides
 * addresses (kernel.kptr_restrict, or an unprivileged reader) every
 * address reads as zero; all_zero says so and lookups find nothing. */
#ifndef NPROF_SYMBOLIZE_KALLSYMS_H
#define NPROF_SYMBOLIZE_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strtab.h"

#define KALLSYMS_MAX_SYMBOLS (8u << 20)
/* Names and module tags, NULs included: only the 32-bit offsets bound
 * them (the symbol count and line length allow more). */
#define KALLSYMS_MAX_STRS STRTAB_MAX
#define KALLSYMS_MAX_LINE 1024
/* Kernel functions are far smaller; past this an address is unnamed. */
#define KALLSYMS_MAX_GAP (256 * 1024)

struct ksym {
	uint64_t addr;
	uint32_t name;		/* offset in strs: kallsyms_name */
	uint32_t module;	/* offset in strs of "[kernel]" or "[ext4]" */
};

struct kallsyms {
	struct ksym *syms;
	size_t n, cap;
	struct strtab strs;
	uint32_t kernel_module;	/* offset of "[kernel]" */
	uint32_t last_module;	/* the module of the previous line, reused */
	size_t nonzero;		/* symbols with a nonzero address */
	uint64_t text;		/* address of _text, or 0 */
	uint64_t skipped_lines;
	bool sorted;
};

int kallsyms_init(struct kallsyms *k);
void kallsyms_release(struct kallsyms *k);

/* Adds the symbols in the text (len bytes). Malformed lines are skipped
 * and counted. 0, -ENOMEM, -E2BIG past KALLSYMS_MAX_SYMBOLS or -ENOBUFS
 * past KALLSYMS_MAX_STRS. */
int kallsyms_parse(struct kallsyms *k, const char *buf, size_t len);

/* Sorts; call after parsing, before looking up. */
void kallsyms_finish(struct kallsyms *k);

/* True when symbols were read but every address is zero. */
static inline bool kallsyms_all_zero(const struct kallsyms *k)
{
	return k->n > 0 && k->nonzero == 0;
}

/* The symbol naming addr, or NULL. */
const struct ksym *kallsyms_find(const struct kallsyms *k, uint64_t addr);

/* A symbol's name and its module ("[kernel]", "[ext4]"). */
static inline const char *kallsyms_name(const struct kallsyms *k,
					const struct ksym *s)
{
	return strtab_get(&k->strs, s->name);
}

static inline const char *kallsyms_module(const struct kallsyms *k,
					  const struct ksym *s)
{
	return strtab_get(&k->strs, s->module);
}

#endif
