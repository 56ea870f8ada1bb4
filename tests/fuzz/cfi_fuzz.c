/* cfi_fuzz: arbitrary bytes as .eh_frame and as .debug_frame.
 *
 * Input: byte 0 picks the layout (bit 0: .debug_frame instead of
 * .eh_frame; bit 1: also split the rest in two sections, the second one
 * the other kind, as a main file plus its debug file); the rest is the
 * section. A successful build must give a sorted table whose lookups stay
 * inside it; any failure must be a clean -errno with nothing allocated.
 *
 * With bit 3, the lazy path of a thread dump instead: bytes 1-4 are the
 * length of an .eh_frame_hdr, 5-8 the distance from it to .eh_frame
 * (little-endian), then the header, then .eh_frame; addresses across the
 * header's table are looked up through it and each FDE found (and FDEs at
 * offsets through the section) built alone, each table checked as above. */
#include "unwind/cfi.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_table(const struct cfi_table *t)
{
	if (!t->n)
		return;
	for (uint32_t i = 1; i < t->n; i++)
		if (t->rows[i].start <= t->rows[i - 1].start)
			abort();
	if (cfi_row_cfa(&t->rows[t->n - 1]) != CFI_CFA_NONE)
		abort(); /* every FDE ends with a "no CFI" row */
	for (uint32_t i = 0; i < t->n; i++) {
		uint64_t pc = t->base + t->rows[i].start;
		const struct cfi_row *r = cfi_table_find(t, pc);

		if (r && r != &t->rows[i])
			abort();
		if (i) {
			const struct cfi_row *prev = cfi_table_find(t, pc - 1);
			if (prev && prev != &t->rows[i - 1])
				abort();
		}
	}
	(void)cfi_table_find(t, 0);
	(void)cfi_table_find(t, UINT64_MAX);
}

static void fuzz_lazy(const uint8_t *data, size_t size, const struct cfi_limits *lim)
{
	struct cfi_hdr_index ix;
	struct cfi_section eh;
	uint32_t hdr_len, gap;
	uint8_t *hdr, *body;
	size_t eh_len;

	if (size < 8)
		return;
	memcpy(&hdr_len, data, 4);
	memcpy(&gap, data + 4, 4);
	data += 8;
	size -= 8;
	if (hdr_len > size)
		hdr_len = (uint32_t)size;
	eh_len = size - hdr_len;
	/* Exact-size heap copies, so ASan sees any read past either end. */
	hdr = malloc(hdr_len ? hdr_len : 1);
	body = malloc(eh_len ? eh_len : 1);
	if (!hdr || !body)
		goto out;
	memcpy(hdr, data, hdr_len);
	memcpy(body, data + hdr_len, eh_len);
	eh = (struct cfi_section){ CFI_EH_FRAME, body, eh_len, 0x400000ull + gap, 0, 0 };
	if (cfi_hdr_index_init(hdr, hdr_len, 0x400000, &ix) == 0) {
		if (ix.table < hdr || ix.table + (size_t)ix.n * 8 > hdr + hdr_len)
			abort();
		for (uint32_t i = 0; i <= ix.n && i < 64; i++) {
			int32_t loc = 0;
			uint64_t off;

			if (i < ix.n)
				memcpy(&loc, ix.table + (size_t)i * 8, 4);
			for (int d = -1; d <= 1; d++) {
				struct cfi_table *t = NULL;
				uint64_t a = 0x400000ull + (uint64_t)(int64_t)loc + (uint64_t)(int64_t)d;

				if (cfi_hdr_index_find(&ix, &eh, a, &off))
					continue;
				if (off >= eh_len)
					abort();
				if (cfi_table_build_fde(&eh, off, lim, &t) == 0) {
					check_table(t);
					(void)cfi_table_find(t, a);
					cfi_table_free(t);
				} else if (t) {
					abort();
				}
			}
		}
	}
	for (size_t off = 0; off < eh_len && off < 4096; off += 4) {
		struct cfi_table *t = NULL;

		if (cfi_table_build_fde(&eh, off, lim, &t) == 0) {
			check_table(t);
			cfi_table_free(t);
		} else if (t) {
			abort();
		}
	}
out:
	free(hdr);
	free(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfi_section s[2];
	struct cfi_table *t = NULL;
	/* Small limits so the fuzzer reaches them too. */
	struct cfi_limits lim = { .max_fdes = 512, .max_rows = 4096, .max_program = 4096 };
	unsigned nsec = 1;
	uint8_t *copy;
	int err;

	if (size < 1)
		return 0;
	if (data[0] & 8) {
		if (data[0] & 4)
			lim.lo = 0x1000, lim.hi = 0x800000;
		fuzz_lazy(data + 1, size - 1, &lim);
		return 0;
	}
	/* An exact-size heap copy, so ASan sees any read past the end. */
	copy = malloc(size - 1 ? size - 1 : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 1, size - 1);
	memset(s, 0, sizeof(s));
	s[0] = (struct cfi_section){ (data[0] & 1) ? CFI_DEBUG_FRAME : CFI_EH_FRAME, copy,
				     size - 1, 0x400000, 0, 0 };
	if (data[0] & 2) {
		size_t half = (size - 1) / 2;

		s[0].size = half;
		s[1] = (struct cfi_section){ (data[0] & 1) ? CFI_EH_FRAME : CFI_DEBUG_FRAME,
					     copy + half, size - 1 - half, 0x500000, 0, 0 };
		nsec = 2;
	}
	if (data[0] & 4)
		lim.lo = 0x1000, lim.hi = 0x800000;
	err = cfi_table_build(s, nsec, &lim, &t);
	if (err) {
		if (t || err >= 0)
			abort();
	} else {
		if (!t)
			abort();
		check_table(t);
	}
	cfi_table_free(t);
	free(copy);
	return 0;
}
