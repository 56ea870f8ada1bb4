/* chain_table_test: samples aggregated by address chain.
 *
 * The same chain of the same thread, kind, state and flags is one entry
 * whose samples and weights add up; any field that differs (a thread,
 * kind, state, flag, the kernel part, truncation, one address, the
 * length) makes another; chains without addresses are entries too; a
 * count of 0 makes the chain without a sample; ids are dense, in the
 * order chains were first seen, and stay right past the tables' first
 * sizes; the limits on chains and addresses fail with -E2BIG and change
 * nothing; reset empties the table for the next recording. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "profile/chain_table.h"
#include "test.h"

static uint32_t add(struct chain_table *t, const struct chain_key *k, unsigned count,
		    uint64_t weight)
{
	uint32_t id = ID_NONE;

	return chain_table_add(t, k, count, weight, &id) < 0 ? ID_NONE : id;
}

int main(void)
{
	static const uint64_t a[] = { 0x1000, 0x2000, 0x3000 };
	static const uint64_t b[] = { 0x1000, 0x2000, 0x3001 };
	struct chain_table t;
	struct chain_key k = { .ips = a, .n = 3, .tid = 10, .kind = 1 };
	uint32_t first, id;

	chain_table_init(&t, 1000, 1u << 20);
	first = add(&t, &k, 1, 100);
	CHECK(first == 0, "the first chain is id 0");
	CHECK(add(&t, &k, 1, 50) == first, "the same chain again is the same entry");
	CHECK(t.nchains == 1 && t.chains[0].samples == 2 && t.chains[0].weight == 150,
	      "its samples and weights add up (%llu, %llu)",
	      (unsigned long long)t.chains[0].samples, (unsigned long long)t.chains[0].weight);
	CHECK(t.chains[0].tid == 10 && t.chains[0].kind == 1 && t.chains[0].n == 3 &&
	      !memcmp(chain_table_ips(&t, &t.chains[0]), a, sizeof(a)),
	      "the entry keeps its key and a copy of the addresses");

	{
		struct chain_key v[8];
		int all_new = 1;

		for (int i = 0; i < 8; i++)
			v[i] = k;
		v[0].tid = 11;
		v[1].kind = 2;
		v[2].state = 'S';
		v[3].flags = 4;
		v[4].nkernel = 1;
		v[5].truncated = true;
		v[6].ips = b;
		v[7].n = 2;
		for (int i = 0; i < 8; i++)
			all_new &= add(&t, &v[i], 1, 1) == (uint32_t)(i + 1);
		CHECK(all_new && t.nchains == 9,
		      "thread, kind, state, flags, kernel part, truncation, an address, the "
		      "length: each makes another chain");
		for (int i = 0; i < 8; i++)
			all_new &= add(&t, &v[i], 1, 1) == (uint32_t)(i + 1);
		CHECK(all_new && t.nchains == 9, "and each is found again");
	}

	{
		struct chain_key empty = { .tid = 10, .kind = 3 };

		id = add(&t, &empty, 0, 0);
		CHECK(id == 9 && t.chains[id].samples == 0 && t.chains[id].n == 0,
		      "count 0 makes a chain without addresses and without a sample");
		CHECK(add(&t, &empty, 1, 7) == id && t.chains[id].samples == 1 &&
		      t.chains[id].weight == 7, "found again, then counted");
		CHECK(chain_table_ips(&t, &t.chains[id]) == NULL, "no addresses: NULL");
	}

	{
		uint64_t ips[4];
		int ok = 1;

		for (uint32_t i = 0; i < 900; i++) {
			struct chain_key m = { .ips = ips, .n = 4, .tid = 99 };

			for (int j = 0; j < 4; j++)
				ips[j] = 0x400000 + i * 16 + (uint64_t)j;
			ok &= add(&t, &m, 1, i) == 10 + i;
		}
		for (uint32_t i = 0; i < 900 && ok; i++) {
			const struct chain *c = &t.chains[10 + i];

			ok = c->weight == i && chain_table_ips(&t, c)[0] == 0x400000 + i * 16;
		}
		CHECK(ok && t.nchains == 910, "900 more chains: dense ids, in order, right");
	}

	{
		struct chain_key m = { .ips = b, .n = 3, .tid = 1234 };
		size_t n = t.nchains, nips = t.nips;
		int err;

		while (t.nchains < 1000) {
			m.tid++;
			if (chain_table_add(&t, &m, 1, 1, &id) < 0)
				break;
		}
		m.tid++;
		err = chain_table_add(&t, &m, 1, 1, &id);
		CHECK(err == -E2BIG && t.nchains == 1000, "past max_chains: -E2BIG (%d)", err);
		CHECK(add(&t, &k, 1, 1) == first, "a known chain still counts when full");
		CHECK(t.nips == nips + 3 * (1000 - n), "nothing kept of the refused chain");
	}
	chain_table_release(&t);

	chain_table_init(&t, 1000, 5);
	CHECK(add(&t, &k, 1, 1) == 0, "3 addresses of 5");
	k.tid++;
	CHECK(chain_table_add(&t, &k, 1, 1, &id) == -E2BIG && t.nchains == 1 && t.nips == 3,
	      "3 more than max_ips allows: -E2BIG, nothing kept");
	chain_table_reset(&t);
	CHECK(t.nchains == 0 && t.nips == 0, "reset empties the table");
	CHECK(add(&t, &k, 1, 9) == 0 && t.chains[0].samples == 1 && t.chains[0].weight == 9,
	      "and it fills again from id 0");
	chain_table_release(&t);
	chain_table_release(NULL);
	CHECK(1, "chain_table_release(NULL) is harmless");
	return test_done();
}
