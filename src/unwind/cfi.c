/* cfi: .eh_frame / .debug_frame to a compact row table (see cfi.h and
 * docs/unwinding.md).
 *
 * Two passes. The first walks every entry, checks its structure, parses
 * each CIE once (with the rules its initial instructions set) and records
 * each FDE's address range. The FDEs are then sorted by address, overlaps
 * dropped (the earlier section wins), and the second pass runs each FDE's
 * CFA program from its CIE's initial rules, appending rows. Every FDE ends
 * with a CFI_CFA_NONE row, so gaps between FDEs mean "no CFI". */
#include "unwind/cfi.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* x86-64 DWARF register numbers. */
#define DW_REG_RBP 6
#define DW_REG_RSP 7
#define DW_REG_RIP 16

#define MAX_CIES 4096	     /* distinct CIEs per build (real files: < 10) */
#define MAX_STATE_STACK 16   /* DW_CFA_remember_state depth */
#define MAX_AUG 8	     /* augmentation string characters */
#define SIGFRAME_RSP_OFF 160 /* offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP]) */

/* A bounded byte cursor. Reads past the end set `bad` and return 0, so a
 * parser can read a few fields and check once. */
struct cur {
	const uint8_t *p, *end;
	bool bad;
};

static size_t cur_left(const struct cur *c)
{
	return (size_t)(c->end - c->p);
}

static bool cur_take(struct cur *c, void *dst, size_t n)
{
	if (c->bad || cur_left(c) < n) {
		c->bad = true;
		memset(dst, 0, n);
		return false;
	}
	memcpy(dst, c->p, n);
	c->p += n;
	return true;
}

static uint8_t cur_u8(struct cur *c)
{
	uint8_t v;
	cur_take(c, &v, 1);
	return v;
}

static uint16_t cur_u16(struct cur *c)
{
	uint16_t v;
	cur_take(c, &v, 2);
	return v;
}

static uint32_t cur_u32(struct cur *c)
{
	uint32_t v;
	cur_take(c, &v, 4);
	return v;
}

static uint64_t cur_u64(struct cur *c)
{
	uint64_t v;
	cur_take(c, &v, 8);
	return v;
}

/* LEB128 longer than 10 bytes or with bits beyond 64 is malformed. */
static uint64_t cur_uleb(struct cur *c)
{
	uint64_t v = 0;
	for (unsigned shift = 0;; shift += 7) {
		uint8_t b = cur_u8(c);
		if (c->bad)
			return 0;
		if (shift == 63 && (b & 0x7e)) {
			c->bad = true;
			return 0;
		}
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
		if (shift == 63) {
			c->bad = true;
			return 0;
		}
	}
}

static int64_t cur_sleb(struct cur *c)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;
	do {
		b = cur_u8(c);
		if (c->bad)
			return 0;
		if (shift > 63) {
			c->bad = true;
			return 0;
		}
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

/* DW_EH_PE_* */
enum {
	PE_ABSPTR = 0x00, PE_ULEB = 0x01, PE_UDATA2 = 0x02, PE_UDATA4 = 0x03,
	PE_UDATA8 = 0x04, PE_SLEB = 0x09, PE_SDATA2 = 0x0a, PE_SDATA4 = 0x0b,
	PE_SDATA8 = 0x0c, PE_PCREL = 0x10, PE_TEXTREL = 0x20,
	PE_DATAREL = 0x30, PE_INDIRECT = 0x80, PE_OMIT = 0xff,
};

/* Reads the value part of an encoded pointer. -EINVAL: not a format. */
static int read_enc_value(struct cur *c, uint8_t enc, uint64_t *ret)
{
	switch (enc & 0x0f) {
	case PE_ABSPTR: *ret = cur_u64(c); break;
	case PE_ULEB: *ret = cur_uleb(c); break;
	case PE_UDATA2: *ret = cur_u16(c); break;
	case PE_UDATA4: *ret = cur_u32(c); break;
	case PE_UDATA8: *ret = cur_u64(c); break;
	case PE_SLEB: *ret = (uint64_t)cur_sleb(c); break;
	case PE_SDATA2: *ret = (uint64_t)(int64_t)(int16_t)cur_u16(c); break;
	case PE_SDATA4: *ret = (uint64_t)(int64_t)(int32_t)cur_u32(c); break;
	case PE_SDATA8: *ret = cur_u64(c); break;
	default: return -EINVAL;
	}
	return c->bad ? -EINVAL : 0;
}

/* A full encoded address. -ENOTSUP: an application we cannot evaluate
 * here (indirect needs the target's memory; funcrel and aligned are not
 * used for FDE addresses). */
static int read_enc_addr(struct cur *c, uint8_t enc, const struct cfi_section *s,
			 uint64_t *ret)
{
	uint64_t field = s->addr + (uint64_t)(c->p - s->data), v = 0;
	int err;

	if (enc == PE_OMIT)
		return -EINVAL;
	err = read_enc_value(c, enc, &v);
	if (err)
		return err;
	switch (enc & 0x70) {
	case 0: break;
	case PE_PCREL: v += field; break;
	case PE_TEXTREL:
		if (!s->text_addr)
			return -ENOTSUP;
		v += s->text_addr;
		break;
	case PE_DATAREL:
		if (!s->data_addr)
			return -ENOTSUP;
		v += s->data_addr;
		break;
	default: return -ENOTSUP;
	}
	if (enc & PE_INDIRECT)
		return -ENOTSUP;
	*ret = v;
	return 0;
}

/* ---- rules and the state a CFA program updates ---- */

enum rule_how {
	R_UNSET,	/* never given: the row is unusable for rip */
	R_UNDEF,
	R_SAME,
	R_OFFSET,	/* saved at cfa + off */
	R_VAL_OFFSET,	/* value is cfa + off */
	R_AT_RBP,	/* saved at rbp + off (expression breg6 off) */
	R_UNKNOWN,	/* register, other expressions */
};

enum cfa_how {
	C_UNKNOWN,
	C_REG,		/* reg + off */
	C_PLT,		/* rsp + off + ((pc & 15) >= thr ? 8 : 0) */
	C_DEREF_RBP,	/* *(rbp + off) */
	C_SIGFRAME,
};

struct rule {
	uint8_t how;
	int64_t off;
};

struct state {
	uint8_t cfa_how;
	uint8_t plt_thr;
	uint64_t cfa_reg;
	int64_t cfa_off;
	struct rule rip, rbp;
};

struct cie {
	uint32_t sec, off;	/* identity: section index, entry offset */
	bool usable;		/* false: FDEs using it are dropped */
	bool has_z, signal;
	uint8_t fde_enc;
	uint64_t code_align;
	int64_t data_align;
	struct state init;	/* after the initial instructions */
	bool init_ok;		/* false: initial instructions unsupported */
};

struct fde_ref {
	uint64_t start, end;
	uint32_t sec, off;	/* entry offset */
};

struct builder {
	const struct cfi_section *secs;
	unsigned nsec;
	struct cfi_limits lim;
	struct cie *cies;
	uint32_t ncie, capcie;
	struct fde_ref *fdes;
	uint32_t nfde, capfde;
	struct cfi_row *rows;
	uint32_t nrow, caprow;
	uint64_t base;
	struct cfi_stats st;
};

/* ---- rows ---- */

static bool fits(int64_t v, int64_t lo, int64_t hi)
{
	return v >= lo && v <= hi;
}

static void row_from_state(struct cfi_row *r, const struct state *s)
{
	unsigned cfa = CFI_CFA_NONE, rip = CFI_RIP_AT_CFA, rbp = CFI_RBP_SAME;

	memset(r, 0, sizeof(*r));
	if (s->rip.how == R_UNDEF) {
		/* Outermost: nothing else matters. */
		r->kinds = (uint8_t)(CFI_CFA_RSP | CFI_RIP_UNDEFINED << 3);
		return;
	}
	switch (s->cfa_how) {
	case C_REG:
		if (s->cfa_reg == DW_REG_RSP)
			cfa = CFI_CFA_RSP;
		else if (s->cfa_reg == DW_REG_RBP)
			cfa = CFI_CFA_RBP;
		break;
	case C_PLT: cfa = CFI_CFA_PLT; break;
	case C_DEREF_RBP: cfa = CFI_CFA_DEREF_RBP; break;
	case C_SIGFRAME:
		r->kinds = CFI_CFA_SIGFRAME;
		return;
	}
	if (cfa == CFI_CFA_NONE || !fits(s->cfa_off, INT32_MIN, INT32_MAX))
		return;
	if (s->rip.how != R_OFFSET || !fits(s->rip.off, INT8_MIN, INT8_MAX))
		return;
	r->cfa_off = (int32_t)s->cfa_off;
	r->rip_off = (int8_t)s->rip.off;
	switch (s->rbp.how) {
	case R_UNSET:
	case R_SAME: rbp = CFI_RBP_SAME; break;
	case R_OFFSET: rbp = CFI_RBP_AT_CFA; break;
	case R_VAL_OFFSET: rbp = CFI_RBP_VAL_CFA; break;
	case R_AT_RBP: rbp = CFI_RBP_AT_RBP; break;
	default: rbp = CFI_RBP_UNKNOWN; break;
	}
	if (rbp != CFI_RBP_SAME && rbp != CFI_RBP_UNKNOWN) {
		if (fits(s->rbp.off, INT16_MIN, INT16_MAX))
			r->rbp_off = (int16_t)s->rbp.off;
		else
			rbp = CFI_RBP_UNKNOWN;
	}
	if (cfa == CFI_CFA_PLT) {
		/* The threshold lives in rbp_off: PLT stubs never save rbp. */
		if (rbp != CFI_RBP_SAME)
			return;
		r->rbp_off = s->plt_thr;
	}
	r->kinds = (uint8_t)(cfa | rip << 3 | rbp << 5);
}

static bool row_same_rule(const struct cfi_row *a, const struct cfi_row *b)
{
	return a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off &&
	       a->rip_off == b->rip_off && a->kinds == b->kinds;
}

/* Appends the row starting at link-time pc. A row at the same start as
 * the last one replaces it (the last one covered nothing); a row with the
 * same rule as the last one is merged into it. */
static int emit(struct builder *b, uint64_t pc, const struct cfi_row *r)
{
	struct cfi_row row = *r;

	row.start = (uint32_t)(pc - b->base);
	while (b->nrow && b->rows[b->nrow - 1].start >= row.start)
		b->nrow--; /* ranges are emitted in order; >= only on replace */
	if (b->nrow && row_same_rule(&b->rows[b->nrow - 1], &row))
		return 0;
	if (b->nrow == b->caprow) {
		uint32_t cap = b->caprow ? b->caprow * 2 : 1024;
		struct cfi_row *n;

		if (b->nrow >= b->lim.max_rows)
			return -E2BIG;
		if (cap > b->lim.max_rows)
			cap = b->lim.max_rows;
		n = realloc(b->rows, (size_t)cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		b->rows = n;
		b->caprow = cap;
	}
	b->rows[b->nrow++] = row;
	return 0;
}

static int emit_state(struct builder *b, uint64_t pc, const struct state *s)
{
	struct cfi_row r;

	row_from_state(&r, s);
	return emit(b, pc, &r);
}

static int emit_none(struct builder *b, uint64_t pc)
{
	struct cfi_row r;

	memset(&r, 0, sizeof(r));
	return emit(b, pc, &r);
}

/* ---- expressions we recognise (everything else: unknown) ---- */

/* glibc/binutils PLT: breg7 N; breg16 0; lit15; and; litK; ge; lit3; shl;
 * plus. CFA = rsp + N, plus 8 once the stub has pushed its index. */
static bool match_plt(const uint8_t *p, size_t n, int64_t *ret_off, uint8_t *ret_thr)
{
	struct cur c = { p, p + n, false };
	int64_t off;
	uint8_t k;

	if (cur_u8(&c) != 0x77)
		return false;
	off = cur_sleb(&c);
	if (cur_u8(&c) != 0x80 || cur_sleb(&c) != 0 || cur_u8(&c) != 0x3f ||
	    cur_u8(&c) != 0x1a)
		return false;
	k = cur_u8(&c);
	if (k < 0x30 || k > 0x4f || cur_u8(&c) != 0x2a || cur_u8(&c) != 0x33 ||
	    cur_u8(&c) != 0x24 || cur_u8(&c) != 0x22 || c.bad || cur_left(&c))
		return false;
	*ret_off = off;
	*ret_thr = (uint8_t)(k - 0x30);
	return true;
}

/* bregN off [; deref]: the register, offset and whether it dereferences. */
static bool match_breg(const uint8_t *p, size_t n, unsigned *ret_reg, int64_t *ret_off,
		       bool *ret_deref)
{
	struct cur c = { p, p + n, false };
	uint8_t op = cur_u8(&c);
	int64_t off;
	bool deref = false;

	if (op < 0x70 || op > 0x8f)
		return false;
	off = cur_sleb(&c);
	if (cur_left(&c) == 1 && *c.p == 0x06) {
		deref = true;
		c.p++;
	}
	if (c.bad || cur_left(&c))
		return false;
	*ret_reg = op - 0x70u;
	*ret_off = off;
	*ret_deref = deref;
	return true;
}

/* ---- the CFA program ---- */

struct exec {
	struct builder *b;
	const struct cie *cie;
	const struct cfi_section *sec;
	struct state cur, stack[MAX_STATE_STACK];
	unsigned depth;
	uint64_t loc, end;
	bool in_cie;
};

static struct rule *rule_for(struct exec *x, uint64_t reg)
{
	if (reg == DW_REG_RIP)
		return &x->cur.rip;
	if (reg == DW_REG_RBP)
		return &x->cur.rbp;
	return NULL; /* a register we do not track */
}

static void set_rule(struct exec *x, uint64_t reg, uint8_t how, int64_t off)
{
	struct rule *r = rule_for(x, reg);

	if (r) {
		r->how = how;
		r->off = off;
	}
}

/* Moves loc to `to`, emitting the row for [loc, to). Returns 1 when the
 * FDE's range is done (rows past its end mean nothing). */
static int advance_to(struct exec *x, uint64_t to)
{
	int err;

	if (x->in_cie)
		return -ENOTSUP;
	if (to >= x->end)
		return 1;
	if (to == x->loc)
		return 0;
	err = emit_state(x->b, x->loc, &x->cur);
	if (err)
		return err;
	x->loc = to;
	return 0;
}

static int advance(struct exec *x, uint64_t delta)
{
	uint64_t to;

	if (__builtin_mul_overflow(delta, x->cie->code_align, &delta) ||
	    __builtin_add_overflow(x->loc, delta, &to))
		return 1;
	return advance_to(x, to);
}

static int scaled(struct exec *x, int64_t v, int64_t *ret)
{
	return __builtin_mul_overflow(v, x->cie->data_align, ret) ? -ENOTSUP : 0;
}

/* Runs one program. 0: ran to the end (or past the FDE's range);
 * -ENOTSUP: an instruction we do not support, rules from loc on are
 * unknown; -EINVAL: truncated operands; other -errno from emit. */
static int run(struct exec *x, const uint8_t *p, const uint8_t *end)
{
	struct cur c = { p, end, false };
	int err = 0;

	while (!err && cur_left(&c)) {
		uint8_t op = cur_u8(&c);
		uint64_t reg, u;
		int64_t s, off;
		const uint8_t *blk;

		switch (op >> 6) {
		case 1: err = advance(x, op & 0x3f); continue;
		case 2:
			u = cur_uleb(&c);
			if (c.bad)
				err = -EINVAL;
			else if (u > INT64_MAX || scaled(x, (int64_t)u, &off))
				err = -ENOTSUP;
			else
				set_rule(x, op & 0x3f, R_OFFSET, off);
			continue;
		case 3:
			if (x->in_cie)
				err = -ENOTSUP;
			else if (rule_for(x, op & 0x3f))
				*rule_for(x, op & 0x3f) = (op & 0x3f) == DW_REG_RIP
					? x->cie->init.rip : x->cie->init.rbp;
			continue;
		}
		switch (op) {
		case 0x00: break; /* nop */
		case 0x01: /* set_loc */
			if (x->in_cie || read_enc_addr(&c, x->cie->fde_enc, x->sec, &u)) {
				err = c.bad ? -EINVAL : -ENOTSUP;
				break;
			}
			err = u < x->loc ? -ENOTSUP : advance_to(x, u);
			break;
		case 0x02: err = advance(x, cur_u8(&c)); break;
		case 0x03: err = advance(x, cur_u16(&c)); break;
		case 0x04: err = advance(x, cur_u32(&c)); break;
		case 0x05: /* offset_extended */
		case 0x14: /* val_offset */
			reg = cur_uleb(&c);
			u = cur_uleb(&c);
			if (u > INT64_MAX || scaled(x, (int64_t)u, &off))
				err = -ENOTSUP;
			else
				set_rule(x, reg, op == 0x05 ? R_OFFSET : R_VAL_OFFSET, off);
			break;
		case 0x11: /* offset_extended_sf */
		case 0x15: /* val_offset_sf */
			reg = cur_uleb(&c);
			if (scaled(x, cur_sleb(&c), &off))
				err = -ENOTSUP;
			else
				set_rule(x, reg, op == 0x11 ? R_OFFSET : R_VAL_OFFSET, off);
			break;
		case 0x2f: /* GNU_negative_offset_extended */
			reg = cur_uleb(&c);
			u = cur_uleb(&c);
			if (u > INT64_MAX || scaled(x, -(int64_t)u, &off))
				err = -ENOTSUP;
			else
				set_rule(x, reg, R_OFFSET, off);
			break;
		case 0x06: /* restore_extended */
			reg = cur_uleb(&c);
			if (x->in_cie)
				err = -ENOTSUP;
			else if (rule_for(x, reg))
				*rule_for(x, reg) = reg == DW_REG_RIP ? x->cie->init.rip
								      : x->cie->init.rbp;
			break;
		case 0x07: set_rule(x, cur_uleb(&c), R_UNDEF, 0); break;
		case 0x08: set_rule(x, cur_uleb(&c), R_SAME, 0); break;
		case 0x09: /* register */
			reg = cur_uleb(&c);
			cur_uleb(&c);
			set_rule(x, reg, R_UNKNOWN, 0);
			break;
		case 0x0a: /* remember_state */
			if (x->depth == MAX_STATE_STACK)
				err = -ENOTSUP;
			else
				x->stack[x->depth++] = x->cur;
			break;
		case 0x0b: /* restore_state, CFA included: gcc's epilogues
			    * rely on it (remember; def_cfa_offset 8; ret;
			    * restore_state), as libgcc's unwinder does. */
			if (!x->depth)
				err = -ENOTSUP;
			else
				x->cur = x->stack[--x->depth];
			break;
		case 0x0c: /* def_cfa */
			x->cur.cfa_reg = cur_uleb(&c);
			u = cur_uleb(&c);
			x->cur.cfa_how = C_REG;
			if (u > INT64_MAX)
				err = -ENOTSUP;
			x->cur.cfa_off = (int64_t)u;
			break;
		case 0x12: /* def_cfa_sf */
			x->cur.cfa_reg = cur_uleb(&c);
			x->cur.cfa_how = C_REG;
			if (scaled(x, cur_sleb(&c), &x->cur.cfa_off))
				err = -ENOTSUP;
			break;
		case 0x0d: /* def_cfa_register */
			x->cur.cfa_reg = cur_uleb(&c);
			if (x->cur.cfa_how != C_REG)
				err = -ENOTSUP; /* only meaningful for reg+off */
			break;
		case 0x0e: /* def_cfa_offset */
			u = cur_uleb(&c);
			if (x->cur.cfa_how != C_REG || u > INT64_MAX)
				err = -ENOTSUP;
			x->cur.cfa_off = (int64_t)u;
			break;
		case 0x13: /* def_cfa_offset_sf */
			s = cur_sleb(&c);
			if (x->cur.cfa_how != C_REG || scaled(x, s, &x->cur.cfa_off))
				err = -ENOTSUP;
			break;
		case 0x0f: /* def_cfa_expression */
			u = cur_uleb(&c);
			if (c.bad || u > cur_left(&c)) {
				err = -EINVAL;
				break;
			}
			blk = c.p;
			c.p += u;
			{
				unsigned breg;
				bool deref;

				x->cur.cfa_how = C_UNKNOWN;
				if (match_plt(blk, u, &off, &x->cur.plt_thr)) {
					x->cur.cfa_how = C_PLT;
					x->cur.cfa_off = off;
				} else if (match_breg(blk, u, &breg, &off, &deref) && deref) {
					if (breg == DW_REG_RBP) {
						x->cur.cfa_how = C_DEREF_RBP;
						x->cur.cfa_off = off;
					} else if (breg == DW_REG_RSP && off == SIGFRAME_RSP_OFF &&
						   x->cie->signal) {
						x->cur.cfa_how = C_SIGFRAME;
					}
				}
			}
			break;
		case 0x10: /* expression */
		case 0x16: /* val_expression */
			reg = cur_uleb(&c);
			u = cur_uleb(&c);
			if (c.bad || u > cur_left(&c)) {
				err = -EINVAL;
				break;
			}
			blk = c.p;
			c.p += u;
			{
				unsigned breg;
				bool deref;

				if (op == 0x10 && match_breg(blk, u, &breg, &off, &deref) &&
				    !deref && breg == DW_REG_RBP)
					set_rule(x, reg, R_AT_RBP, off);
				else
					set_rule(x, reg, R_UNKNOWN, 0);
			}
			break;
		case 0x2e: cur_uleb(&c); break; /* GNU_args_size */
		default: err = -ENOTSUP; break;
		}
		if (c.bad)
			err = -EINVAL;
	}
	if (c.bad)
		err = -EINVAL;
	return err == 1 ? 0 : err;
}

/* ---- entries ---- */

struct entry {
	uint64_t off;		/* of the length field */
	const uint8_t *body;	/* after length */
	const uint8_t *end;	/* of the entry */
	uint32_t id;		/* CIE id or CIE pointer */
	const uint8_t *after_id;
	bool term;		/* zero length: end of section */
};

/* Reads the entry at off. 32-bit DWARF only for .debug_frame; .eh_frame
 * also accepts the 64-bit length (its CIE pointer stays 4 bytes). */
static int read_entry(const struct cfi_section *s, uint64_t off, struct entry *e)
{
	struct cur c = { s->data + off, s->data + s->size, false };
	uint64_t len = cur_u32(&c);

	memset(e, 0, sizeof(*e));
	e->off = off;
	if (c.bad)
		return -EINVAL;
	if (len == 0) {
		e->term = true;
		return 0;
	}
	if (len >= 0xfffffff0u) {
		if (len != 0xffffffffu || s->kind != CFI_EH_FRAME)
			return -EINVAL;
		len = cur_u64(&c);
	}
	if (c.bad || len < 4 || len > cur_left(&c))
		return -EINVAL;
	e->body = c.p;
	e->end = c.p + len;
	e->id = cur_u32(&c);
	e->after_id = c.p;
	return 0;
}

static bool entry_is_cie(const struct cfi_section *s, const struct entry *e)
{
	return s->kind == CFI_EH_FRAME ? e->id == 0 : e->id == 0xffffffffu;
}

/* Parses a CIE. -EINVAL: broken; a CIE we do not support parses fine
 * with usable = false. */
static int parse_cie(struct builder *b, uint32_t sec, const struct entry *e, struct cie *cie)
{
	const struct cfi_section *s = &b->secs[sec];
	struct cur c = { e->after_id, e->end, false };
	char aug[MAX_AUG + 1];
	unsigned naug = 0;
	uint8_t version;
	uint64_t ra;
	const uint8_t *aug_end = NULL;

	memset(cie, 0, sizeof(*cie));
	cie->sec = sec;
	cie->off = (uint32_t)e->off;
	cie->fde_enc = PE_ABSPTR;
	version = cur_u8(&c);
	for (;;) {
		char ch = (char)cur_u8(&c);
		if (c.bad)
			return -EINVAL;
		if (!ch)
			break;
		if (naug == MAX_AUG)
			return 0; /* usable = false */
		aug[naug++] = ch;
	}
	aug[naug] = '\0';
	if (s->kind == CFI_EH_FRAME ? version != 1 && version != 3
				    : version != 1 && version != 3 && version != 4)
		return 0;
	if (version == 4) {
		uint8_t asz = cur_u8(&c), ssz = cur_u8(&c);
		if (!c.bad && (asz != 8 || ssz != 0))
			return 0;
	}
	cie->code_align = cur_uleb(&c);
	cie->data_align = cur_sleb(&c);
	ra = version == 1 ? cur_u8(&c) : cur_uleb(&c);
	if (c.bad)
		return -EINVAL;
	if (naug && aug[0] == 'z') {
		uint64_t alen = cur_uleb(&c);
		if (c.bad || alen > cur_left(&c))
			return -EINVAL;
		aug_end = c.p + alen;
		cie->has_z = true;
	}
	for (unsigned i = cie->has_z; i < naug; i++) {
		uint8_t enc;
		uint64_t ignored;

		switch (aug[i]) {
		case 'R':
			cie->fde_enc = cur_u8(&c);
			break;
		case 'L':
			cur_u8(&c);
			break;
		case 'P':
			enc = cur_u8(&c);
			if (c.bad)
				return -EINVAL;
			if ((enc & 0x70) > PE_DATAREL ||
			    read_enc_value(&c, enc, &ignored))
				return c.bad ? -EINVAL : 0;
			break;
		case 'S':
			cie->signal = true;
			break;
		default:
			return 0; /* unknown augmentation: do not guess */
		}
		if (c.bad || (aug_end && c.p > aug_end))
			return -EINVAL;
	}
	if (naug && !cie->has_z && !(naug == 1 && aug[0] == 'S'))
		return 0; /* "eh" and friends: layout unknown */
	if (aug_end)
		c.p = aug_end;
	if (ra != DW_REG_RIP || !cie->code_align)
		return 0;
	cie->usable = true;

	/* Initial rules: rip unset until the CIE says (gcc: offset -8). */
	{
		struct exec x;

		memset(&x, 0, sizeof(x));
		x.b = b;
		x.cie = cie;
		x.sec = s;
		x.in_cie = true;
		x.cur.cfa_how = C_UNKNOWN;
		x.cur.rip.how = R_UNSET;
		x.cur.rbp.how = R_SAME;
		if ((size_t)(e->end - c.p) > b->lim.max_program)
			return 0;
		int err = run(&x, c.p, e->end);
		if (err == -EINVAL)
			return err;
		cie->init = x.cur;
		cie->init_ok = err == 0 && x.depth == 0;
	}
	return 0;
}

/* The CIE index for the CIE at (sec, off), parsing it the first time. */
static int get_cie(struct builder *b, uint32_t sec, uint64_t off, uint32_t *ret)
{
	const struct cfi_section *s = &b->secs[sec];
	struct entry e;
	uint32_t lo = 0, hi = b->ncie;
	int err;

	/* cies is sorted by (sec, off). */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct cie *m = &b->cies[mid];
		if (m->sec < sec || (m->sec == sec && m->off < off))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < b->ncie && b->cies[lo].sec == sec && b->cies[lo].off == off) {
		*ret = lo;
		return 0;
	}
	if (off >= s->size)
		return -EINVAL;
	err = read_entry(s, off, &e);
	if (err)
		return err;
	if (e.term || !entry_is_cie(s, &e))
		return -EINVAL;
	if (b->ncie == MAX_CIES)
		return -E2BIG;
	if (b->ncie == b->capcie) {
		uint32_t cap = b->capcie ? b->capcie * 2 : 8;
		struct cie *n = realloc(b->cies, (size_t)cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		b->cies = n;
		b->capcie = cap;
	}
	memmove(&b->cies[lo + 1], &b->cies[lo], (b->ncie - lo) * sizeof(*b->cies));
	err = parse_cie(b, sec, &e, &b->cies[lo]);
	if (err) {
		memmove(&b->cies[lo], &b->cies[lo + 1], (b->ncie - lo) * sizeof(*b->cies));
		return err;
	}
	b->ncie++;
	b->st.cies++;
	*ret = lo;
	return 0;
}

/* An FDE's header: its CIE, range and where its program starts.
 * -EINVAL: broken; -ENOTSUP: its CIE or address encoding is unsupported. */
static int parse_fde(struct builder *b, uint32_t sec, const struct entry *e,
		     uint32_t *ret_cie, uint64_t *ret_start, uint64_t *ret_len,
		     const uint8_t **ret_prog)
{
	const struct cfi_section *s = &b->secs[sec];
	struct cur c = { e->after_id, e->end, false };
	uint64_t cie_off, start, len;
	uint32_t ci;
	const struct cie *cie;
	int err;

	if (s->kind == CFI_EH_FRAME) {
		/* The pointer is relative to its own field. */
		uint64_t field = (uint64_t)(e->body - s->data);
		if (e->id > field)
			return -EINVAL;
		cie_off = field - e->id;
	} else {
		cie_off = e->id;
	}
	err = get_cie(b, sec, cie_off, &ci);
	if (err)
		return err;
	cie = &b->cies[ci];
	if (!cie->usable)
		return -ENOTSUP;
	err = read_enc_addr(&c, cie->fde_enc, s, &start);
	if (err)
		return c.bad ? -EINVAL : err;
	err = read_enc_value(&c, cie->fde_enc & 0x0f, &len);
	if (err)
		return -EINVAL;
	if (cie->has_z) {
		uint64_t alen = cur_uleb(&c);
		if (c.bad || alen > cur_left(&c))
			return -EINVAL;
		c.p += alen;
	}
	*ret_cie = ci;
	*ret_start = start;
	*ret_len = len;
	*ret_prog = c.p;
	return 0;
}

/* Pass 1: every entry of one section. */
static int collect(struct builder *b, uint32_t sec)
{
	const struct cfi_section *s = &b->secs[sec];
	uint64_t off = 0;

	if (s->size > UINT32_MAX)
		return -E2BIG;
	while (off < s->size) {
		struct entry e;
		uint64_t start, len;
		uint32_t ci;
		const uint8_t *prog;
		int err = read_entry(s, off, &e);

		if (err)
			return err;
		if (e.term)
			break;
		off = (uint64_t)(e.end - s->data);
		if (entry_is_cie(s, &e)) {
			err = get_cie(b, sec, e.off, &ci);
			if (err)
				return err;
			continue;
		}
		b->st.fdes++;
		err = parse_fde(b, sec, &e, &ci, &start, &len, &prog);
		if (err == -ENOTSUP) {
			b->st.fdes_unsupported++;
			continue;
		}
		if (err)
			return err;
		if (!len || start + len < start ||
		    (b->lim.hi && (start < b->lim.lo || start + len > b->lim.hi))) {
			b->st.fdes_dropped++;
			continue;
		}
		if (b->nfde == b->lim.max_fdes)
			return -E2BIG;
		if (b->nfde == b->capfde) {
			uint32_t cap = b->capfde ? b->capfde * 2 : 256;
			struct fde_ref *n = realloc(b->fdes, (size_t)cap * sizeof(*n));
			if (!n)
				return -ENOMEM;
			b->fdes = n;
			b->capfde = cap;
		}
		b->fdes[b->nfde++] = (struct fde_ref){
			.start = start, .end = start + len, .sec = sec,
			.off = (uint32_t)e.off,
		};
	}
	return 0;
}

static int fde_cmp(const void *pa, const void *pb)
{
	const struct fde_ref *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->sec != b->sec)
		return a->sec < b->sec ? -1 : 1;
	return a->off < b->off ? -1 : a->off > b->off;
}

/* Pass 2: one FDE's rows. */
static int run_fde(struct builder *b, const struct fde_ref *f)
{
	const struct cfi_section *s = &b->secs[f->sec];
	const struct cie *cie;
	struct entry e;
	uint64_t start, len;
	uint32_t ci;
	const uint8_t *prog;
	struct exec x;
	int err;

	err = read_entry(s, f->off, &e);
	if (!err)
		err = parse_fde(b, f->sec, &e, &ci, &start, &len, &prog);
	if (err)
		return err == -ENOTSUP ? -EINVAL : err; /* pass 1 accepted it */
	cie = &b->cies[ci]; /* indices are stable once pass 1 is done */
	memset(&x, 0, sizeof(x));
	x.b = b;
	x.cie = cie;
	x.sec = s;
	x.loc = f->start;
	x.end = f->end;
	x.cur = cie->init;
	if (!cie->init_ok || (size_t)(e.end - prog) > b->lim.max_program) {
		err = -ENOTSUP;
	} else {
		err = run(&x, prog, e.end);
		if (!err)
			err = emit_state(b, x.loc, &x.cur);
	}
	if (err == -ENOTSUP) {
		/* Rows before loc stand; from loc on we do not know. */
		b->st.fdes_unsupported++;
		err = emit_none(b, x.loc);
	} else if (!err) {
		b->st.fdes_used++;
	}
	if (err)
		return err;
	return emit_none(b, f->end);
}

static void count_rows(struct cfi_table *t)
{
	for (uint32_t i = 0; i < t->n; i++) {
		switch (cfi_row_cfa(&t->rows[i])) {
		case CFI_CFA_PLT: t->stats.plt_rows++; break;
		case CFI_CFA_SIGFRAME: t->stats.sigframe_rows++; break;
		case CFI_CFA_DEREF_RBP: t->stats.drap_rows++; break;
		default: break;
		}
	}
}

static void builder_init(struct builder *b, const struct cfi_section *secs, unsigned nsec,
			 const struct cfi_limits *lim)
{
	memset(b, 0, sizeof(*b));
	b->secs = secs;
	b->nsec = nsec;
	if (lim)
		b->lim = *lim;
	if (!b->lim.max_fdes)
		b->lim.max_fdes = 1u << 20;
	if (!b->lim.max_rows)
		b->lim.max_rows = 1u << 24;
	if (!b->lim.max_program)
		b->lim.max_program = 64u << 10;
}

/* The table of b's rows (taken from b). */
static int finish_table(struct builder *b, struct cfi_table **ret_table)
{
	struct cfi_table *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->base = b->base;
	t->n = b->nrow;
	t->rows = b->rows;
	b->rows = NULL;
	if (t->n) {
		/* Give back the slack: tables live as long as the process. */
		struct cfi_row *shrunk = realloc(t->rows, (size_t)t->n * sizeof(*t->rows));
		if (shrunk)
			t->rows = shrunk;
	}
	t->stats = b->st;
	count_rows(t);
	*ret_table = t;
	return 0;
}

int cfi_table_build(const struct cfi_section *secs, unsigned nsec,
		    const struct cfi_limits *lim, struct cfi_table **ret_table)
{
	struct builder b;
	uint64_t last_end = 0;
	int err = 0;

	builder_init(&b, secs, nsec, lim);
	if (b.lim.hi && b.lim.hi <= b.lim.lo) {
		err = -EINVAL;
		goto out;
	}
	for (uint32_t i = 0; i < nsec && !err; i++)
		if (secs[i].data || secs[i].size)
			err = secs[i].data ? collect(&b, i) : -EINVAL;
	if (err)
		goto out;
	if (b.nfde) {
		qsort(b.fdes, b.nfde, sizeof(*b.fdes), fde_cmp);
		b.base = b.fdes[0].start;
	}
	for (uint32_t i = 0; i < b.nfde; i++) {
		const struct fde_ref *f = &b.fdes[i];

		/* Overlaps: keep the first (lowest start, then earliest
		 * section); rows need 32-bit offsets from base. */
		if ((i && f->start < last_end) || f->end - b.base > UINT32_MAX) {
			b.st.fdes_dropped++;
			continue;
		}
		err = run_fde(&b, f);
		if (err)
			goto out;
		last_end = f->end;
	}
	err = finish_table(&b, ret_table);
out:
	free(b.rows);
	free(b.fdes);
	free(b.cies);
	return err;
}

/* ---- one FDE, found through .eh_frame_hdr ---- */

int cfi_table_build_fde(const struct cfi_section *sec, uint64_t fde_off,
			const struct cfi_limits *lim, struct cfi_table **ret_table)
{
	struct builder b;
	struct entry e;
	struct fde_ref f;
	uint64_t start, len;
	uint32_t ci;
	const uint8_t *prog;
	int err;

	builder_init(&b, sec, 1, lim);
	if ((b.lim.hi && b.lim.hi <= b.lim.lo) || !sec->data || sec->size > UINT32_MAX ||
	    fde_off >= sec->size)
		return -EINVAL;
	err = read_entry(sec, fde_off, &e);
	if (!err && (e.term || entry_is_cie(sec, &e)))
		err = -EINVAL;
	if (err)
		goto out;
	b.st.fdes++;
	err = parse_fde(&b, 0, &e, &ci, &start, &len, &prog);
	if (err == -ENOTSUP) {
		/* As the whole build: no rows, frame pointers there. */
		b.st.fdes_unsupported++;
		err = 0;
	} else if (!err && (!len || start + len < start || len > UINT32_MAX ||
			    (b.lim.hi && (start < b.lim.lo || start + len > b.lim.hi)))) {
		b.st.fdes_dropped++;
	} else if (!err) {
		b.base = start;
		f = (struct fde_ref){ .start = start, .end = start + len, .sec = 0,
				      .off = (uint32_t)fde_off };
		err = run_fde(&b, &f);
	}
	if (!err)
		err = finish_table(&b, ret_table);
out:
	free(b.rows);
	free(b.cies);
	return err;
}

int cfi_hdr_index_init(const uint8_t *hdr, size_t size, uint64_t hdr_addr,
		       struct cfi_hdr_index *ret)
{
	struct cfi_section s = { CFI_EH_FRAME, hdr, size, hdr_addr, 0, 0 };
	struct cur c = { hdr, hdr + size, false };
	uint8_t version, ptr_enc, count_enc, table_enc;
	uint64_t eh_ptr, count;

	version = cur_u8(&c);
	ptr_enc = cur_u8(&c);
	count_enc = cur_u8(&c);
	table_enc = cur_u8(&c);
	if (c.bad || version != 1)
		return -EINVAL;
	/* The pointer to .eh_frame (not needed: the section header says)
	 * and the count, in their encodings. */
	if (ptr_enc == PE_OMIT || read_enc_addr(&c, ptr_enc, &s, &eh_ptr) ||
	    count_enc == PE_OMIT || (count_enc & 0x70) || read_enc_value(&c, count_enc, &count))
		return -ENOTSUP;
	/* Every linker writes (datarel | sdata4) pairs, relative to the
	 * header's start: the only kind a binary search can index in place. */
	if (table_enc != (PE_DATAREL | PE_SDATA4))
		return -ENOTSUP;
	if (count > cur_left(&c) / 8 || count > UINT32_MAX)
		return -EINVAL;
	ret->table = c.p;
	ret->n = (uint32_t)count;
	ret->hdr_addr = hdr_addr;
	return 0;
}

static int64_t hdr_word(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

int cfi_hdr_index_find(const struct cfi_hdr_index *ix, const struct cfi_section *sec,
		       uint64_t vaddr, uint64_t *ret_off)
{
	uint32_t lo = 0, hi = ix->n;
	uint64_t fde;

	/* The last entry whose initial location is <= vaddr. A table that
	 * is not sorted gives a wrong FDE at worst, which the FDE's own
	 * range then does not cover: no row. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ix->hdr_addr + (uint64_t)hdr_word(ix->table + (size_t)mid * 8) <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	fde = ix->hdr_addr + (uint64_t)hdr_word(ix->table + (size_t)(lo - 1) * 8 + 4);
	if (fde < sec->addr || fde - sec->addr >= sec->size)
		return -ENOENT;
	*ret_off = fde - sec->addr;
	return 0;
}

void cfi_table_free(struct cfi_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t);
}
