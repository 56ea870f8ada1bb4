/* cfi: hand-assembled .eh_frame and .debug_frame sections with known
 * rows; malformed and unsupported input; limits. */
#include "unwind/cfi.h"
#include "test.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

struct bb {
	uint8_t b[4096];
	size_t n;
};

static void u8(struct bb *b, uint8_t v) { b->b[b->n++] = v; }
static void u32(struct bb *b, uint32_t v) { memcpy(b->b + b->n, &v, 4); b->n += 4; }
static void u64(struct bb *b, uint64_t v) { memcpy(b->b + b->n, &v, 8); b->n += 8; }
static void bytes(struct bb *b, const char *s, size_t n) { memcpy(b->b + b->n, s, n); b->n += n; }

static void uleb(struct bb *b, uint64_t v)
{
	do {
		uint8_t c = v & 0x7f;
		v >>= 7;
		u8(b, c | (v ? 0x80 : 0));
	} while (v);
}

static void sleb(struct bb *b, int64_t v)
{
	for (;;) {
		uint8_t c = v & 0x7f;
		v >>= 7;
		if ((v == 0 && !(c & 0x40)) || (v == -1 && (c & 0x40))) {
			u8(b, c);
			return;
		}
		u8(b, c | 0x80);
	}
}

/* An entry: length placeholder now, filled by entry_end. */
static size_t entry_begin(struct bb *b)
{
	size_t at = b->n;
	u32(b, 0);
	return at;
}

static void entry_end(struct bb *b, size_t at)
{
	uint32_t len = (uint32_t)(b->n - at - 4);
	memcpy(b->b + at, &len, 4);
}

#define EH_ADDR 0x1000 /* sh_addr of the test .eh_frame */

/* CIE "zR", pcrel|sdata4, CFA = rsp+8, rip at CFA-8. */
static size_t eh_cie(struct bb *b, const char *aug, uint8_t enc)
{
	size_t at = entry_begin(b);
	u32(b, 0);
	u8(b, 1);
	bytes(b, aug, strlen(aug) + 1);
	uleb(b, 1);
	sleb(b, -8);
	u8(b, 16);
	u8(b, 1);
	u8(b, enc);
	u8(b, 0x0c), u8(b, 7), u8(b, 8);
	u8(b, 0x90), u8(b, 1);
	entry_end(b, at);
	return at;
}

static void eh_fde(struct bb *b, size_t cie, uint64_t start, uint32_t len, const char *prog,
		   size_t plen)
{
	size_t at = entry_begin(b);
	u32(b, (uint32_t)(b->n - cie));
	u32(b, (uint32_t)(int32_t)(start - (EH_ADDR + b->n)));
	u32(b, len);
	uleb(b, 0);
	bytes(b, prog, plen);
	entry_end(b, at);
}

#define FDE(b, cie, start, len, prog) eh_fde(b, cie, start, len, prog, sizeof(prog) - 1)

static struct cfi_section eh(const struct bb *b)
{
	return (struct cfi_section){ CFI_EH_FRAME, b->b, b->n, EH_ADDR, 0, 0 };
}

static bool row_is(const struct cfi_table *t, uint64_t pc, enum cfi_cfa_kind cfa, int off,
		   enum cfi_rbp_kind rbp, int rbp_off)
{
	const struct cfi_row *r = cfi_table_find(t, pc);

	if (!r) {
		printf("# %#lx: no row\n", (unsigned long)pc);
		return false;
	}
	if (cfi_row_cfa(r) != cfa || r->cfa_off != off || cfi_row_rbp(r) != rbp ||
	    (rbp != CFI_RBP_SAME && r->rbp_off != rbp_off) || cfi_row_rip(r) != CFI_RIP_AT_CFA ||
	    r->rip_off != -8) {
		printf("# %#lx: cfa %d%+d rbp %d%+d rip %d%+d\n", (unsigned long)pc, cfi_row_cfa(r),
		       r->cfa_off, cfi_row_rbp(r), r->rbp_off, cfi_row_rip(r), r->rip_off);
		return false;
	}
	return true;
}

static void test_eh_frame(void)
{
	static struct bb b;
	struct cfi_section s;
	struct cfi_table *t = NULL;
	const struct cfi_row *r;
	size_t cie, cie_x, cie_ind;
	int err;

	b.n = 0;
	cie = eh_cie(&b, "zR", 0x1b);
	/* push rbp; mov rsp,rbp; ...; remember; epilogue; ret; restore. */
	FDE(&b, cie, 0x2000, 0x40,
	    "\x41\x0e\x10\x86\x02\x43\x0d\x06\x02\x30\x0a\x0c\x07\x08\xc6\x41\x0b");
	FDE(&b, cie, 0x2040, 0x10, "\x07\x10");	   /* _start: rip undefined */
	FDE(&b, cie, 0x3000, 0x20,		   /* PLT0 + PLT entries */
	    "\x0e\x10\x46\x0e\x18\x4a\x0f\x0b\x77\x08\x80\x00\x3f\x1a\x3b\x2a\x33\x24\x22");
	FDE(&b, cie, 0x4000, 0x10, "\x42\x1d\x00\x00"); /* MIPS advance_loc8: unknown */
	FDE(&b, cie, 0x2010, 0x10, "");		   /* overlaps the first: dropped */
	FDE(&b, cie, 0x5000, 0, "");		   /* empty: dropped */
	/* Identical rows merge: only the first row and the end remain. */
	FDE(&b, cie, 0x6000, 0x10, "\x41\x00\x41\x0e\x08\x41\x0c\x07\x08");
	/* DRAP: CFA = *(rbp - 8), rbp at rbp+0. */
	FDE(&b, cie, 0x7000, 0x10, "\x44\x0f\x03\x76\x78\x06\x10\x06\x02\x76\x00");
	cie_x = eh_cie(&b, "zX", 0x1b);	   /* unknown augmentation */
	FDE(&b, cie_x, 0x8000, 0x10, "");
	cie_ind = eh_cie(&b, "zR", 0x9b);  /* indirect|pcrel|sdata4 */
	FDE(&b, cie_ind, 0x9000, 0x10, "");
	u32(&b, 0); /* terminator */
	s = eh(&b);
	err = cfi_table_build(&s, 1, NULL, &t);
	CHECK(err == 0 && t, "hand-made .eh_frame builds (%d)", err);
	if (!t)
		return;
	CHECK(t->base == 0x2000, "base is the lowest FDE start");
	CHECK(row_is(t, 0x2000, CFI_CFA_RSP, 8, CFI_RBP_SAME, 0), "entry: rsp+8");
	CHECK(row_is(t, 0x2001, CFI_CFA_RSP, 16, CFI_RBP_AT_CFA, -16), "after push: rsp+16");
	CHECK(row_is(t, 0x2004, CFI_CFA_RBP, 16, CFI_RBP_AT_CFA, -16) &&
	      row_is(t, 0x2033, CFI_CFA_RBP, 16, CFI_RBP_AT_CFA, -16), "body: rbp+16");
	CHECK(row_is(t, 0x2034, CFI_CFA_RSP, 8, CFI_RBP_SAME, 0), "epilogue: restore rbp");
	CHECK(row_is(t, 0x2035, CFI_CFA_RBP, 16, CFI_RBP_AT_CFA, -16) &&
	      row_is(t, 0x203f, CFI_CFA_RBP, 16, CFI_RBP_AT_CFA, -16),
	      "restore_state brings back the CFA and rbp rule");
	r = cfi_table_find(t, 0x2040);
	CHECK(r && cfi_row_rip(r) == CFI_RIP_UNDEFINED, "DW_CFA_undefined rip: outermost");
	CHECK(!cfi_table_find(t, 0x2050) && !cfi_table_find(t, 0x2fff), "gap: no row");
	CHECK(row_is(t, 0x3005, CFI_CFA_RSP, 16, CFI_RBP_SAME, 0) &&
	      row_is(t, 0x3006, CFI_CFA_RSP, 24, CFI_RBP_SAME, 0), "PLT0 rows");
	r = cfi_table_find(t, 0x3010);
	CHECK(r && cfi_row_cfa(r) == CFI_CFA_PLT && r->cfa_off == 8 && r->rbp_off == 11 &&
	      cfi_row_rip(r) == CFI_RIP_AT_CFA && r->rip_off == -8,
	      "PLT expression: rsp+8 (+8 when pc&15 >= 11)");
	CHECK(row_is(t, 0x4001, CFI_CFA_RSP, 8, CFI_RBP_SAME, 0) && !cfi_table_find(t, 0x4002),
	      "unknown opcode: rows before it stand, none after");
	CHECK(!cfi_table_find(t, 0x2010 + 0x40) && !cfi_table_find(t, 0x5000),
	      "overlapping and empty FDEs dropped");
	{
		unsigned n6 = 0;
		for (unsigned i = 0; i < t->n; i++)
			if (t->base + t->rows[i].start >= 0x6000 &&
			    t->base + t->rows[i].start <= 0x6010)
				n6++;
		CHECK(n6 == 2, "identical rows merged (%u rows for 0x6000..0x6010)", n6);
	}
	r = cfi_table_find(t, 0x7008);
	CHECK(r && cfi_row_cfa(r) == CFI_CFA_DEREF_RBP && r->cfa_off == -8 &&
	      cfi_row_rbp(r) == CFI_RBP_AT_RBP && r->rbp_off == 0, "DRAP: CFA = *(rbp-8)");
	CHECK(!cfi_table_find(t, 0x8000) && !cfi_table_find(t, 0x9000),
	      "unknown augmentation and indirect encoding: no rows");
	CHECK(t->stats.fdes == 10 && t->stats.fdes_dropped == 2 && t->stats.fdes_unsupported == 3,
	      "stats: %u fdes, %u dropped, %u unsupported", t->stats.fdes, t->stats.fdes_dropped,
	      t->stats.fdes_unsupported);
	for (unsigned i = 1; i < t->n; i++)
		if (t->rows[i].start <= t->rows[i - 1].start)
			err = -1;
	CHECK(!err && cfi_row_cfa(&t->rows[t->n - 1]) == CFI_CFA_NONE,
	      "rows sorted, last is the end marker");
	cfi_table_free(t);
	t = NULL;

	{
		struct cfi_limits lim = { .max_fdes = 3 };
		struct cfi_table *keep = (struct cfi_table *)&b;

		t = keep;
		err = cfi_table_build(&s, 1, &lim, &t);
		CHECK(err == -E2BIG && t == keep,
		      "max_fdes: -E2BIG, out-param untouched");
		t = NULL;
		lim = (struct cfi_limits){ .lo = 0x3000, .hi = 0x4000 };
		err = cfi_table_build(&s, 1, &lim, &t);
		CHECK(err == 0 && t && !cfi_table_find(t, 0x2004) &&
		      cfi_table_find(t, 0x3010), "[lo, hi) keeps only FDEs inside");
		cfi_table_free(t);
		t = NULL;
	}
}

static void test_debug_frame(void)
{
	static struct bb d, b;
	struct cfi_section s[2];
	struct cfi_table *t = NULL;
	size_t at, cie4, cie1, cie;
	int err;

	/* .debug_frame: CIE v4 and v1, FDEs with absolute 8-byte addresses. */
	d.n = 0;
	cie4 = at = entry_begin(&d);
	u32(&d, 0xffffffffu), u8(&d, 4), u8(&d, 0), u8(&d, 8), u8(&d, 0);
	uleb(&d, 1), sleb(&d, -8), uleb(&d, 16);
	u8(&d, 0x0c), u8(&d, 7), u8(&d, 8), u8(&d, 0x90), u8(&d, 1);
	entry_end(&d, at);
	cie1 = at = entry_begin(&d);
	u32(&d, 0xffffffffu), u8(&d, 1), u8(&d, 0);
	uleb(&d, 1), sleb(&d, -8), u8(&d, 16);
	u8(&d, 0x0c), u8(&d, 7), u8(&d, 8), u8(&d, 0x90), u8(&d, 1);
	entry_end(&d, at);
	at = entry_begin(&d);
	u32(&d, (uint32_t)cie4), u64(&d, 0x5000), u64(&d, 0x20);
	u8(&d, 0x44), u8(&d, 0x0e), u8(&d, 0x10); /* adv 4; cfa off 16 */
	entry_end(&d, at);
	at = entry_begin(&d);
	u32(&d, (uint32_t)cie1), u64(&d, 0x2000), u64(&d, 0x20); /* under .eh_frame's */
	u8(&d, 0x0e), u8(&d, 0x30);
	entry_end(&d, at);

	b.n = 0;
	cie = eh_cie(&b, "zR", 0x1b);
	FDE(&b, cie, 0x2000, 0x20, "\x41\x0e\x10");
	s[0] = eh(&b);
	s[1] = (struct cfi_section){ CFI_DEBUG_FRAME, d.b, d.n, 0, 0, 0 };
	err = cfi_table_build(s, 2, NULL, &t);
	CHECK(err == 0 && t, ".eh_frame + .debug_frame build (%d)", err);
	if (!t)
		return;
	CHECK(row_is(t, 0x5000, CFI_CFA_RSP, 8, CFI_RBP_SAME, 0) &&
	      row_is(t, 0x5004, CFI_CFA_RSP, 16, CFI_RBP_SAME, 0) && !cfi_table_find(t, 0x5020),
	      ".debug_frame v4 rows");
	CHECK(row_is(t, 0x2001, CFI_CFA_RSP, 16, CFI_RBP_SAME, 0),
	      ".eh_frame wins over .debug_frame for the same range");
	cfi_table_free(t);
}

static int build1(enum cfi_section_kind k, const struct bb *b)
{
	struct cfi_section s = { k, b->b, b->n, EH_ADDR, 0, 0 };
	struct cfi_table *t = NULL;
	int err = cfi_table_build(&s, 1, NULL, &t);

	cfi_table_free(t);
	return err;
}

/* CHECK evaluates its condition twice: calls go before it. */
static void test_malformed(void)
{
	static struct bb b;
	size_t cie, at;
	int err;

	b.n = 0;
	cie = eh_cie(&b, "zR", 0x1b);
	FDE(&b, cie, 0x2000, 0x10, "\x41");
	err = build1(CFI_EH_FRAME, &b);
	CHECK(err == 0, "baseline builds");
	b.b[0] += 1; /* CIE length one too long: its tail shifts */
	err = build1(CFI_EH_FRAME, &b);
	CHECK(err == -EINVAL, "shifted entry: -EINVAL");
	b.b[0] -= 1;
	b.n -= 1; /* the last entry runs past the section */
	err = build1(CFI_EH_FRAME, &b);
	CHECK(err == -EINVAL, "truncated section: -EINVAL");

	b.n = 0;
	cie = eh_cie(&b, "zR", 0x1b);
	at = b.n;
	FDE(&b, cie, 0x2000, 0x10, "");
	eh_fde(&b, at, 0x3000, 0x10, "", 0); /* its "CIE" is an FDE */
	err = build1(CFI_EH_FRAME, &b);
	CHECK(err == -EINVAL, "CIE pointer at an FDE: -EINVAL");

	b.n = 0;
	cie = eh_cie(&b, "zR", 0x1b);
	at = entry_begin(&b);
	u32(&b, 0x7fffffff); /* CIE pointer before the section */
	u32(&b, 0), u32(&b, 0x10), u8(&b, 0);
	entry_end(&b, at);
	err = build1(CFI_EH_FRAME, &b);
	CHECK(err == -EINVAL, "CIE pointer out of the section: -EINVAL");

	b.n = 0;
	cie = eh_cie(&b, "zR", 0x1b);
	FDE(&b, cie, 0x2000, 0x10, "\x41\x0c\x07"); /* def_cfa missing its offset */
	err = build1(CFI_EH_FRAME, &b);
	CHECK(err == -EINVAL, "truncated operand: -EINVAL");

	b.n = 0;
	cie = eh_cie(&b, "zR", 0x1b);
	FDE(&b, cie, 0x2000, 0x10, "\x0f\x40\x77"); /* expression longer than the FDE */
	err = build1(CFI_EH_FRAME, &b);
	CHECK(err == -EINVAL, "expression past the end: -EINVAL");

	b.n = 0;
	cie = eh_cie(&b, "zR", 0x1b);
	FDE(&b, cie, 0x2000, 0x10, "\x41\x0e\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01");
	err = build1(CFI_EH_FRAME, &b);
	CHECK(err == -EINVAL, "overlong LEB128: -EINVAL");

	b.n = 0;
	u32(&b, 0xffffffffu), u64(&b, 4), u32(&b, 0xffffffffu);
	err = build1(CFI_DEBUG_FRAME, &b);
	CHECK(err == -EINVAL, "64-bit .debug_frame refused");
	b.n = 0;
	u32(&b, 0);
	err = build1(CFI_EH_FRAME, &b);
	CHECK(err == 0, "a lone terminator is an empty table");
	err = build1(CFI_EH_FRAME, &(struct bb){ .n = 3 });
	CHECK(err == -EINVAL, "3 bytes: -EINVAL");
	{
		struct cfi_section s = { CFI_EH_FRAME, NULL, 10, 0, 0, 0 };
		struct cfi_table *t = NULL;
		err = cfi_table_build(&s, 1, NULL, &t);
		CHECK(err == -EINVAL && !t, "NULL data refused");
	}
	cfi_table_free(NULL);
	CHECK(cfi_table_find(NULL, 0) == NULL, "find on NULL table");
}

int main(void)
{
	test_eh_frame();
	test_debug_frame();
	test_malformed();
	return test_done();
}
