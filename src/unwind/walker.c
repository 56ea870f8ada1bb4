/* walker: CFI rows first, frame pointers where there are none. Runs in
 * signal handlers: no allocation, no locks, no stdio, every load through
 * the read function. Termination: each step either stops or writes one
 * address, and at most max are written. */
#include "unwind/walker.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* offsetof(ucontext_t, uc_mcontext.gregs[REG_*]) on x86-64 Linux: the
 * frame __restore_rt returns through. cfi.c recognises its FDE only when
 * the CFA expression matches this layout (rsp at 160). */
#define SIG_RBP 120
#define SIG_RSP 160
#define SIG_RIP 168

static int read_u64(unwind_read_fn read, void *ctx, uint64_t addr, uint64_t *ret)
{
	return read(ctx, addr, ret, sizeof(*ret));
}

/* The row for a pc: the module holding it, then its row; NULL: none
 * (frame pointers). */
static const struct cfi_row *row_find(const struct unwind_modules *mods, uint64_t pc)
{
	const struct unwind_module *mod = unwind_modules_find(mods, pc);

	if (!mod)
		return NULL;
	if (mod->table && mod->table->lazy && mods->find_lazy)
		return mods->find_lazy(mod->table, pc - mod->bias);
	return unwind_table_find(mod->table, pc - mod->bias);
}

static const struct cfi_row *row_find_cached(const struct unwind_modules *mods,
					     struct unwind_row_cache *rows, uint64_t pc)
{
	const struct cfi_row *row;

	if (!rows || !mods || !mods->generation)
		return row_find(mods, pc);
	if (unwind_row_cache_get(rows, mods->generation, pc, &row))
		return row;
	row = row_find(mods, pc);
	unwind_row_cache_put(rows, mods->generation, pc, row);
	return row;
}

unsigned unwind_walk_ex(const struct unwind_regs *regs, const struct unwind_modules *mods,
			unwind_read_fn read, void *ctx, uint64_t *ips, unsigned max,
			struct unwind_info *ret_info)
{
	return unwind_walk_cached(regs, mods, NULL, read, ctx, ips, max, ret_info);
}

unsigned unwind_walk_cached(const struct unwind_regs *regs, const struct unwind_modules *mods,
			    struct unwind_row_cache *rows, unwind_read_fn read, void *ctx,
			    uint64_t *ips, unsigned max, struct unwind_info *ret_info)
{
	struct unwind_info info = { .stop = UNWIND_STOP_MAX };
	uint64_t pc = regs->rip, sp = regs->rsp, bp = regs->rbp;
	bool bp_known = true, exact = true;
	unsigned n = 0;

	while (n < max) {
		const struct cfi_row *row;
		uint64_t cfa, ra, nbp = bp;
		bool nbp_known = bp_known;

		ips[n++] = pc;
		if (n == max)
			break;
		/* A return address points after the call, maybe at the next
		 * function or past the FDE's end: look up the call itself. */
		row = row_find_cached(mods, rows, exact ? pc : pc - 1);
		if (row) {
			int32_t off = row->cfa_off;

			if (cfi_row_rip(row) == CFI_RIP_UNDEFINED) {
				info.stop = UNWIND_STOP_END;
				break;
			}
			switch (cfi_row_cfa(row)) {
			case CFI_CFA_RSP:
				cfa = sp + (uint64_t)(int64_t)off;
				break;
			case CFI_CFA_RBP:
				if (!bp_known)
					goto no_info;
				cfa = bp + (uint64_t)(int64_t)off;
				break;
			case CFI_CFA_PLT:
				/* The stub pushes its index after the first
				 * bytes; rbp_off holds the pc&15 threshold. */
				cfa = sp + (uint64_t)(int64_t)off +
				      ((pc & 15) >= (uint64_t)row->rbp_off ? 8 : 0);
				break;
			case CFI_CFA_DEREF_RBP:
				if (!bp_known)
					goto no_info;
				if (read_u64(read, ctx, bp + (uint64_t)(int64_t)off, &cfa))
					goto fault;
				break;
			case CFI_CFA_SIGFRAME:
				/* The kernel's frame: the interrupted registers
				 * are in the ucontext at sp. The interrupted pc is
				 * exact, and sp may jump (sigaltstack). */
				if (read_u64(read, ctx, sp + SIG_RIP, &ra) ||
				    read_u64(read, ctx, sp + SIG_RSP, &cfa) ||
				    read_u64(read, ctx, sp + SIG_RBP, &nbp))
					goto fault;
				info.sig_frames++;
				if (!ra || !cfa) {
					info.stop = UNWIND_STOP_END;
					goto out;
				}
				pc = ra;
				sp = cfa;
				bp = nbp;
				bp_known = true;
				exact = true;
				continue;
			default:
				goto no_info;
			}
			if (cfa <= sp) {
				info.stop = UNWIND_STOP_BAD_SP;
				break;
			}
			if (read_u64(read, ctx, cfa + (uint64_t)(int64_t)row->rip_off, &ra))
				goto fault;
			switch (cfi_row_rbp(row)) {
			case CFI_RBP_SAME:
				break;
			case CFI_RBP_AT_CFA: {
				uint64_t at = cfa + (uint64_t)(int64_t)row->rbp_off;

				/* In an epilogue gcc keeps the rule after `pop
				 * %rbp`: a slot below sp was popped, so rbp already
				 * holds the caller's value (and a perf copy starts
				 * at sp: reading it would fault). */
				if (at < sp)
					break;
				if (read_u64(read, ctx, at, &nbp))
					goto fault;
				nbp_known = true;
				break;
			}
			case CFI_RBP_VAL_CFA:
				nbp = cfa + (uint64_t)(int64_t)row->rbp_off;
				nbp_known = true;
				break;
			case CFI_RBP_AT_RBP:
				if (!bp_known)
					nbp_known = false;
				else if (read_u64(read, ctx, bp + (uint64_t)(int64_t)row->rbp_off, &nbp))
					goto fault;
				break;
			default:
				nbp_known = false;
				break;
			}
			info.cfi_frames++;
		} else {
			uint64_t fr[2];

			/* Frame pointers: [rbp] = caller's rbp, [rbp+8] =
			 * return address. rbp 0 ends the chain (the ABI's
			 * marker); it must lie above sp and be aligned. */
			if (!bp_known)
				goto no_info;
			if (!bp) {
				info.stop = UNWIND_STOP_END;
				break;
			}
			if (bp < sp || (bp & 7) || bp + 16 < bp)
				goto no_info;
			if (read(ctx, bp, fr, sizeof(fr)))
				goto fault;
			nbp = fr[0];
			ra = fr[1];
			cfa = bp + 16;
			nbp_known = true;
			info.fp_frames++;
		}
		if (!ra) {
			info.stop = UNWIND_STOP_END;
			break;
		}
		pc = ra;
		sp = cfa;
		bp = nbp;
		bp_known = nbp_known;
		exact = false;
		continue;
no_info:
		info.stop = UNWIND_STOP_NO_INFO;
		break;
fault:
		info.stop = UNWIND_STOP_FAULT;
		break;
	}
out:
	if (ret_info)
		*ret_info = info;
	return n;
}

unsigned unwind_walk(const struct unwind_regs *regs, const struct unwind_modules *mods,
		     unwind_read_fn read, void *ctx, uint64_t *ips, unsigned max,
		     bool *ret_truncated)
{
	struct unwind_info info;
	unsigned n = unwind_walk_ex(regs, mods, read, ctx, ips, max, &info);

	if (ret_truncated)
		*ret_truncated = info.stop != UNWIND_STOP_END;
	return n;
}

/* Set bits of m (no libgcc __popcountdi2: keeps this object's symbol
 * list to the few syscalls the hot-path check allows). */
static unsigned bits_set(uint64_t m)
{
	unsigned n = 0;

	for (; m; m &= m - 1)
		n++;
	return n;
}

int unwind_regs_from_perf(const uint64_t *regs, unsigned nregs, uint64_t mask,
			  struct unwind_regs *ret_regs)
{
	uint64_t v[3];
	const unsigned bits[3] = { UNWIND_PERF_REG_IP, UNWIND_PERF_REG_SP, UNWIND_PERF_REG_BP };

	if ((mask & UNWIND_PERF_REGS_MASK) != UNWIND_PERF_REGS_MASK || bits_set(mask) > nregs)
		return -EINVAL;
	/* Each value sits at the count of set bits below its own. */
	for (unsigned i = 0; i < 3; i++)
		v[i] = regs[bits_set(mask & ((1ull << bits[i]) - 1))];
	ret_regs->rip = v[0];
	ret_regs->rsp = v[1];
	ret_regs->rbp = v[2];
	return 0;
}

int unwind_read_stack_copy(void *ctx, uint64_t addr, void *dst, size_t len)
{
	const struct unwind_stack_copy *s = ctx;
	uint64_t at;

	if (addr < s->base)
		return -1;
	at = addr - s->base;
	if (at > s->len || s->len - at < len)
		return -1;
	memcpy(dst, s->data + at, len);
	return 0;
}

void unwind_self_reader_init(struct unwind_self_reader *r, uint64_t safe_lo,
			     uint64_t safe_hi)
{
	r->pid = 0; /* looked up at the first read that needs it: a system call
		       (glibc keeps no copy), one per allocation sample else */
	r->safe_lo = safe_lo;
	r->safe_hi = safe_lo < safe_hi ? safe_hi : safe_lo;
	r->syscalls = 0;
}

/* The read of unwind_read_self outside the stack: a system call that
 * fails with EFAULT where a load would fault. Out of line so that the
 * plain loads pay nothing for its iovecs, its stack protector and errno
 * (only the system call can change errno: saved here, not on every read). */
static __attribute__((noinline)) int read_self_syscall(struct unwind_self_reader *r,
						       uint64_t addr, void *dst, size_t len)
{
	struct iovec local = { dst, len }, remote = { (void *)(uintptr_t)addr, len };
	int saved = errno;
	ssize_t got;

	r->syscalls++;
	if (!r->pid)
		r->pid = getpid();
	got = process_vm_readv(r->pid, &local, 1, &remote, 1, 0);
	errno = saved;
	return got == (ssize_t)len ? 0 : -1;
}

int unwind_read_self(void *ctx, uint64_t addr, void *dst, size_t len)
{
	struct unwind_self_reader *r = ctx;

	if (addr < r->safe_lo || addr >= r->safe_hi || r->safe_hi - addr < len)
		return read_self_syscall(r, addr, dst, len);
	/* The walker's reads are one word (a return address, a saved rbp)
	 * or two (a frame-pointer frame): sizes the compiler copies inline,
	 * where a variable one would call memcpy. */
	if (len == sizeof(uint64_t))
		memcpy(dst, (const void *)(uintptr_t)addr, sizeof(uint64_t));
	else if (len == 2 * sizeof(uint64_t))
		memcpy(dst, (const void *)(uintptr_t)addr, 2 * sizeof(uint64_t));
	else
		memcpy(dst, (const void *)(uintptr_t)addr, len);
	return 0;
}
