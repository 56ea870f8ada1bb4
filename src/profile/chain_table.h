/* chain_table: samples aggregated by address chain, before any symbol.
 *
 * A recording keeps one entry per distinct (thread, kind, state, chain of
 * addresses) and counts the samples that fall on it, so that a million
 * samples of a hot loop cost one hash and two additions each, and the
 * symbolizer later sees each chain once. The engine (recorder_read.c)
 * and the agent (session.c, on its drain thread) both aggregate here;
 * symbolize/chain_build.h turns a table into a profile.
 *
 * Bounded: past max_chains entries or max_ips addresses, adding fails
 * with -E2BIG and the caller counts the drop. Not thread-safe and not
 * for signal context (it allocates): one thread adds, under the caller's
 * lock if several may. */
#ifndef NPROF_PROFILE_CHAIN_TABLE_H
#define NPROF_PROFILE_CHAIN_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/id_index.h"

/* One distinct chain: ips[first..first+n) of its table, leaf first, the
 * first nkernel of them kernel addresses. */
struct chain {
	uint64_t first;
	uint32_t n, nkernel;
	pid_t tid;
	uint8_t kind;	  /* the source's: enum raw_kind, HOT_KIND_* */
	char state;	  /* a thread state letter, or 0 */
	bool truncated;	  /* the walk stopped before the outermost frame */
	uint8_t flags;	  /* the source's own bits */
	uint64_t samples; /* samples merged here */
	uint64_t weight;  /* the sum of their weights (periods, ns) */
};

/* What identifies a chain: every field of struct chain but the counts. */
struct chain_key {
	const uint64_t *ips; /* n of them, leaf first; NULL when n is 0 */
	uint32_t n, nkernel;
	pid_t tid;
	uint8_t kind;
	char state;
	bool truncated;
	uint8_t flags;
};

struct chain_table {
	struct chain *chains; /* ids index this */
	size_t nchains;
	uint64_t *ips;
	size_t nips;
	/* Private. */
	size_t max_chains, max_ips;
	size_t chains_cap, ips_cap;
	struct id_index index;
};

void chain_table_init(struct chain_table *t, size_t max_chains, size_t max_ips);
void chain_table_release(struct chain_table *t);
/* Empties t and keeps its memory, for the next recording. */
void chain_table_reset(struct chain_table *t);

/* Adds count samples of total weight to k's chain, a new one when k was
 * not seen (count 0 makes the chain without a sample). Its id in
 * *ret_id. 0, -E2BIG (a limit reached) or -ENOMEM; t is unchanged then. */
int chain_table_add(struct chain_table *t, const struct chain_key *k, unsigned count,
		    uint64_t weight, uint32_t *ret_id);

/* The addresses of chain c of t. */
static inline const uint64_t *chain_table_ips(const struct chain_table *t,
					      const struct chain *c)
{
	return c->n ? t->ips + c->first : NULL;
}

#endif
