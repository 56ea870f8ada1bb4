/* cfi: DWARF call frame information (.eh_frame, .debug_frame) parsed into
 * a compact, sorted table of unwind rows for x86-64.
 *
 * The parser reads untrusted bytes (any ELF file a profiled process maps).
 * It checks every length against its section, bounds every loop, and
 * rejects what it does not understand instead of guessing:
 *   - a structurally broken section (a length running past the end, an FDE
 *     pointing at something that is not a CIE) fails the build: -EINVAL;
 *   - a well-formed entry using something we do not support (an unknown
 *     augmentation, CFA opcode or expression) turns its address range into
 *     CFI_CFA_NONE rows, so the walker falls back to frame pointers there.
 *
 * A row covers [start, next row's start). Addresses in rows are the ELF's
 * link-time virtual addresses minus table->base, so a row needs only 32
 * bits of pc; the walker converts a runtime pc with the module's load bias.
 * See docs/unwinding.md for the row format and the recognised expressions.
 *
 * Concurrency: cfi_table_build and cfi_table_free allocate and run outside
 * signal context. A built table is immutable; cfi_table_find only reads it
 * and is async-signal-safe (no allocation, no locks, no errno). */
#ifndef NPROF_UNWIND_CFI_H
#define NPROF_UNWIND_CFI_H

#include <stddef.h>
#include <stdint.h>

/* How to compute the caller's CFA (its sp at the call, before the call
 * pushed the return address). 3 bits in a row. */
enum cfi_cfa_kind {
	CFI_CFA_NONE = 0,   /* no usable CFI here: use frame pointers */
	CFI_CFA_RSP = 1,    /* rsp + cfa_off */
	CFI_CFA_RBP = 2,    /* rbp + cfa_off */
	CFI_CFA_DEREF_RBP = 3, /* *(rbp + cfa_off): gcc's DRAP realignment */
	CFI_CFA_PLT = 4,    /* rsp + cfa_off + ((pc & 15) >= plt_thr ? 8 : 0) */
	CFI_CFA_SIGFRAME = 5, /* Linux rt_sigreturn frame: ucontext at rsp */
};

/* Where the return address is. 2 bits. AT_CFA is 0 so that an all-zero
 * row is the plain "no CFI" row. */
enum cfi_rip_kind {
	CFI_RIP_AT_CFA = 0,    /* *(cfa + rip_off) */
	CFI_RIP_UNDEFINED = 1, /* outermost frame (_start, clone3): stop */
};

/* Where the caller's rbp is. 3 bits. */
enum cfi_rbp_kind {
	CFI_RBP_SAME = 0,   /* unchanged by this frame */
	CFI_RBP_AT_CFA = 1, /* *(cfa + rbp_off) */
	CFI_RBP_UNKNOWN = 2, /* undefined or a rule we do not evaluate */
	CFI_RBP_AT_RBP = 3, /* *(rbp + rbp_off): DRAP frames */
	CFI_RBP_VAL_CFA = 4, /* cfa + rbp_off (DW_CFA_val_offset) */
};

/* One row: 12 bytes. rip_off is a byte offset that fits int8 (always -8
 * with x86-64 compilers); larger offsets make the row CFI_CFA_NONE. */
struct cfi_row {
	uint32_t start;  /* link-time vaddr - table->base */
	int32_t cfa_off;
	int16_t rbp_off; /* for CFI_CFA_PLT: the pc&15 threshold (rbp SAME) */
	int8_t rip_off;
	uint8_t kinds;   /* cfa:3 | rip:2 << 3 | rbp:3 << 5 */
};

static inline enum cfi_cfa_kind cfi_row_cfa(const struct cfi_row *r)
{
	return (enum cfi_cfa_kind)(r->kinds & 7);
}
static inline enum cfi_rip_kind cfi_row_rip(const struct cfi_row *r)
{
	return (enum cfi_rip_kind)((r->kinds >> 3) & 3);
}
static inline enum cfi_rbp_kind cfi_row_rbp(const struct cfi_row *r)
{
	return (enum cfi_rbp_kind)((r->kinds >> 5) & 7);
}

enum cfi_section_kind { CFI_EH_FRAME, CFI_DEBUG_FRAME };

/* One section's bytes. Sections given first win where FDEs overlap, so
 * pass .eh_frame before a debug file's .debug_frame. */
struct cfi_section {
	enum cfi_section_kind kind;
	const uint8_t *data;
	size_t size;
	uint64_t addr;      /* sh_addr: vaddr of data[0], base of pcrel */
	uint64_t text_addr; /* DW_EH_PE_textrel base; 0: reject textrel */
	uint64_t data_addr; /* DW_EH_PE_datarel base; 0: reject datarel */
};

/* Limits; a zero field takes the default in brackets. */
struct cfi_limits {
	uint64_t lo, hi;     /* keep FDEs inside [lo, hi); 0,0: any */
	uint32_t max_fdes;   /* [1 << 20] */
	uint32_t max_rows;   /* [1 << 24] whole table */
	uint32_t max_program; /* [64 KiB] bytes of CFA program per FDE */
};

/* What the build met, for docs, tests and "how much to trust it". */
struct cfi_stats {
	uint32_t cies, fdes;   /* well-formed entries seen */
	uint32_t fdes_used;    /* FDEs that made rows */
	uint32_t fdes_unsupported; /* made CFI_CFA_NONE rows */
	uint32_t fdes_dropped; /* empty, outside [lo,hi) or overlapping */
	uint32_t plt_rows, sigframe_rows, drap_rows;
};

struct cfi_table {
	uint64_t base;   /* link-time vaddr of row start 0 */
	uint32_t n;      /* rows; the last one is a CFI_CFA_NONE end marker */
	struct cfi_row *rows;
	struct cfi_stats stats;
};

/* Builds one table from nsec sections. -EINVAL: malformed input;
 * -E2BIG: a limit was hit; -ENOMEM. A table with no FDE is valid (n = 0). */
int cfi_table_build(const struct cfi_section *secs, unsigned nsec,
		    const struct cfi_limits *lim, struct cfi_table **ret_table);

void cfi_table_free(struct cfi_table *t);

/* The rows of one FDE only: for a caller that needs the rules at a few
 * addresses of a large file (a thread dump of a service whose binary has
 * 70,000 FDEs) rather than the whole table. fde_off is the FDE's offset
 * in sec (from cfi_hdr_index_find); its CIE is parsed for it, and its
 * rows are exactly those cfi_table_build makes for it (ending with its
 * CFI_CFA_NONE row), base = its start. An FDE that build would drop or
 * leave unsupported (outside [lo, hi), an unknown augmentation) gives a
 * table with n = 0. -EINVAL: no well-formed FDE at fde_off. */
int cfi_table_build_fde(const struct cfi_section *sec, uint64_t fde_off,
			const struct cfi_limits *lim, struct cfi_table **ret_table);

/* .eh_frame_hdr's binary search table (version 1, (datarel, sdata4)
 * pairs, which every linker writes): where the FDE for an address is,
 * found in place. Untrusted: a table out of order gives a wrong FDE,
 * whose own range then does not cover the address, never a read out of
 * bounds. */
struct cfi_hdr_index {
	const uint8_t *table;	/* n pairs of int32: location, FDE address,
				   relative to hdr_addr */
	uint32_t n;
	uint64_t hdr_addr;	/* sh_addr of .eh_frame_hdr */
};

/* Reads the header of .eh_frame_hdr (hdr, size bytes, at vaddr
 * hdr_addr). -ENOTSUP: another table encoding; -EINVAL: malformed. */
int cfi_hdr_index_init(const uint8_t *hdr, size_t size, uint64_t hdr_addr,
		       struct cfi_hdr_index *ret);

/* The offset in sec (the .eh_frame the header indexes) of the FDE whose
 * initial location is the last one <= vaddr. -ENOENT: none, or it points
 * outside sec. */
int cfi_hdr_index_find(const struct cfi_hdr_index *ix, const struct cfi_section *sec,
		       uint64_t vaddr, uint64_t *ret_off);

/* The row covering link-time vaddr, or NULL when none does or the row
 * covering it is CFI_CFA_NONE with a defined return address (no CFI:
 * frame pointers). Async-signal-safe; inline so that the walker's object
 * references nothing but itself (the agent's hot-symbol check). */
static inline const struct cfi_row *cfi_table_find(const struct cfi_table *t, uint64_t vaddr)
{
	uint64_t rel;
	uint32_t lo = 0, hi;
	const struct cfi_row *r;

	if (!t || !t->n || vaddr < t->base)
		return NULL;
	rel = vaddr - t->base;
	if (rel > UINT32_MAX)
		return NULL;
	/* The last row with start <= rel. */
	hi = t->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (t->rows[mid].start <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	r = &t->rows[lo - 1];
	if (cfi_row_cfa(r) == CFI_CFA_NONE && cfi_row_rip(r) == CFI_RIP_AT_CFA)
		return NULL;
	return r;
}

#endif
