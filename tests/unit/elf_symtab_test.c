/* elf_symtab_test: file offset -> ELF address through PT_LOAD (PIE,
 * shared library and non-PIE layouts), alias choice and the lookup rules
 * (sized symbols, size-0 fallback, labels inside functions), and the
 * string pool the symbolizer hands names out of. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/elf_symtab.h"
#include "symbolize/strpool.h"
#include "test.h"

static void add(struct elf_symtab *t, uint64_t addr, uint64_t size,
		const char *name, uint8_t rank)
{
	uint32_t off;

	if (strtab_add(&t->strs, name, strlen(name), &off) < 0)
		abort();
	t->syms = realloc(t->syms, (t->n + 1) * sizeof(*t->syms));
	t->syms[t->n++] = (struct elf_sym){ addr, size, off, rank };
	t->cap = t->n;
}

static const char *find(struct elf_symtab *t, uint64_t vaddr)
{
	const struct elf_sym *s = elf_symtab_find(t, vaddr);

	return s ? elf_symtab_name(t, s) : NULL;
}

int main(void)
{
	int rc;
	struct elf_info lib = { .nloads = 4 }, exe = { .nloads = 2 };
	struct elf_symtab t;
	struct strpool p;
	uint64_t v = 0;
	const char *a, *b;

	/* libc.so.6's layout: offsets and addresses equal, except the data
	 * segment, which starts mid-page. */
	lib.loads[0] = (struct elf_load){ 0x0, 0x0, 0x25388, 0x25388, 4 };
	lib.loads[1] = (struct elf_load){ 0x26000, 0x26000, 0x1550fc, 0x1550fc, 5 };
	lib.loads[2] = (struct elf_load){ 0x17c000, 0x17c000, 0x52c31, 0x52c31, 4 };
	lib.loads[3] = (struct elf_load){ 0x1cf8d0, 0x1d08d0, 0x4f98, 0x12680, 6 };
	rc = elf_info_offset_to_vaddr(&lib, 0x3ffd0, &v);
	CHECK(rc == 0 && v == 0x3ffd0, "text offset = address");
	rc = elf_info_offset_to_vaddr(&lib, 0x1cf900, &v);
	CHECK(rc == 0 && v == 0x1d0900, "data segment shifted by a page");
	rc = elf_info_offset_to_vaddr(&lib, 0x1cf010, &v);
	CHECK(rc == 0 && v == 0x1d0010, "page before a mid-page segment");
	rc = elf_info_offset_to_vaddr(&lib, 0x900000, &v);
	CHECK(rc == -ENOENT, "offset past every segment");
	/* Non-PIE: mapped at 0x400000. */
	exe.loads[0] = (struct elf_load){ 0x0, 0x400000, 0x1000, 0x1000, 4 };
	exe.loads[1] = (struct elf_load){ 0x1000, 0x401000, 0x2000, 0x2000, 5 };
	rc = elf_info_offset_to_vaddr(&exe, 0x1234, &v);
	CHECK(rc == 0 && v == 0x401234, "non-PIE text");
	exe.nloads = 0;
	rc = elf_info_offset_to_vaddr(&exe, 0x1234, &v);
	CHECK(rc == 0 && v == 0x1234, "no segments: identity");

	elf_symtab_init(&t);
	add(&t, 0x3000, 0x100, "__GI_qsort", 4);	/* local alias */
	add(&t, 0x3000, 0x100, "qsort", 0);		/* global */
	add(&t, 0x3000, 0, "qsort_label", 1);		/* unsized */
	add(&t, 0x1000, 0x200, "outer", 0);
	add(&t, 0x1080, 0, "outer_loop", 5);		/* a label inside */
	add(&t, 0x2000, 0x10, "small", 0);
	add(&t, 0x5000, 0, "asm_stub", 1);
	elf_symtab_finish(&t);
	CHECK(t.n == 5, "aliases merged (%zu)", t.n);
	CHECK_STR(find(&t, 0x3010), "qsort", "global sized name wins");
	CHECK_STR(find(&t, 0x1010), "outer", "inside a function");
	CHECK_STR(find(&t, 0x1090), "outer", "a sized function beats a label in it");
	CHECK(find(&t, 0x2020) == NULL, "past a sized symbol: none");
	CHECK_STR(find(&t, 0x5100), "asm_stub", "unsized: nearest below");
	CHECK(find(&t, 0x10) == NULL, "below every symbol");
	elf_symtab_release(&t);
	elf_symtab_release(NULL);

	/* A table large enough for the radix sort, in a scrambled order,
	 * addresses across 64 bits: sorted, aliases chosen as above. */
	{
		uint64_t prev = 0;
		unsigned n = 3000, sorted = 1;
		char name[32];

		elf_symtab_init(&t);
		for (unsigned i = 0; i < n; i++) {
			unsigned k = (i * 1237u) % n; /* a permutation of 0..n-1 */
			uint64_t addr = (uint64_t)k * 0x10000 + (k % 3 == 0 ? 0xffff000000000000ull : 0);

			snprintf(name, sizeof(name), "f%u", k);
			add(&t, addr, 0x100, name, 2);
		}
		add(&t, 0x3000, 0x100, "__GI_qsort", 4);
		add(&t, 0x3000, 0x100, "qsort", 0);
		add(&t, 0x3000, 0, "qsort_label", 1);
		elf_symtab_finish(&t);
		for (size_t i = 0; i < t.n; i++) {
			if (i && t.syms[i].addr <= prev)
				sorted = 0;
			prev = t.syms[i].addr;
		}
		CHECK(t.n == n + 1 && sorted, "3,000 scrambled symbols: sorted, one per address "
		      "(%zu)", t.n);
		CHECK_STR(find(&t, 0x3010), "qsort", "and among them the global sized alias wins");
		CHECK(find(&t, 0xffff000000000000ull + 0x10010) == NULL,
		      "past f0's end, below f3: none");
		CHECK_STR(find(&t, 0xffff000000000000ull + 3 * 0x10000 + 8), "f3",
			  "a symbol high in the address space");
		CHECK_STR(find(&t, 2 * 0x10000 + 0x20), "f2", "one low");
		elf_symtab_release(&t);
	}

	strpool_init(&p, 64);
	a = strpool_intern(&p, "hello");
	b = strpool_intern_len(&p, "hello world", 5);
	CHECK(a && a == b, "equal strings interned once");
	for (int i = 0; i < 5000; i++) {
		char buf[32];

		snprintf(buf, sizeof(buf), "s%d", i);
		if (!strpool_intern(&p, buf))
			break;
	}
	CHECK_STR(a, "hello", "early strings survive growth");
	CHECK(p.bytes <= 64, "bounded by max_bytes (%zu)", p.bytes);
	strpool_release(&p);
	strpool_init(&p, 0);
	{
		char big[100000];

		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		a = strpool_intern(&p, big);
		b = strpool_intern(&p, "after");
		CHECK(a && strlen(a) == sizeof(big) - 1 && b && !strcmp(b, "after"),
		      "a string larger than a chunk");
	}
	strpool_release(&p);
	return test_done();
}
