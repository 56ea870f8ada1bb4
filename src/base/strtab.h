/* strtab: strings packed end to end in one growing buffer, each named by
 * its offset, as symbol tables keep their names (kallsyms, ELF symbols,
 * perf maps): a 4-byte offset beside each entry instead of an 8-byte
 * pointer and an allocation per name.
 *
 * The buffer moves as it grows: keep offsets, and turn one into a pointer
 * (strtab_get) only until the next strtab_add. Strings are not interned;
 * for names handed out as pointers that must stay valid, see
 * symbolize/strpool.h. Not thread-safe. */
#ifndef NPROF_BASE_STRTAB_H
#define NPROF_BASE_STRTAB_H

#include <stddef.h>
#include <stdint.h>

/* The most any table holds, NULs included: offsets are 32-bit. */
#define STRTAB_MAX ((size_t)UINT32_MAX)

struct strtab {
	char *buf;
	size_t len, cap;	/* bytes used, bytes allocated */
	size_t max;		/* bytes at the most, NULs included */
	uint64_t refused;	/* appends refused past max */
};

/* An empty table of at most max bytes (clamped to STRTAB_MAX). */
void strtab_init(struct strtab *t, size_t max);

/* Frees the strings; the table is empty again, with the same max. */
void strtab_release(struct strtab *t);

/* Appends len bytes of s (need not be NUL-terminated) and a NUL; the
 * string's offset goes to *ret_off. 0, -ENOBUFS past max (counted in
 * refused) or -ENOMEM; the table is unchanged on failure. */
int strtab_add(struct strtab *t, const char *s, size_t len, uint32_t *ret_off);

/* Makes room for len more bytes, NULs included, so that the appends
 * that fill it do not move the buffer again and again (a symbol table's
 * names: its string section's size). 0, -ENOBUFS past max, -ENOMEM. */
int strtab_reserve(struct strtab *t, size_t len);

/* The string at off, an offset strtab_add returned. */
static inline const char *strtab_get(const struct strtab *t, uint32_t off)
{
	return t->buf + off;
}

#endif
