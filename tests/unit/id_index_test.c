/* id_index_test: the open-addressing index from a key to a dense id.
 *
 * An empty index finds nothing and asks nothing; one entry is found by
 * its key and only by it; thousands of entries survive every growth of
 * the table; keys whose hashes collide (all of them, or in the low 32
 * bits only) are told apart by the caller's match function; a lookup
 * whose low 32 hash bits match no entry never calls match; extreme ids
 * and hashes work; release empties the index. */
#include <stdint.h>
#include <stdlib.h>

#include "base/id_index.h"
#include "test.h"

/* The caller's side: id i is keys[i]. */
struct keys {
	uint64_t *v;
	size_t n;
	unsigned long calls; /* match calls, to see when it is asked */
};

static int match(const void *ctx, uint32_t id, const void *key)
{
	struct keys *k = (struct keys *)ctx;

	k->calls++;
	return id < k->n && k->v[id] == *(const uint64_t *)key;
}

/* A hash whose low 32 bits differ for any two keys below 2^32 (murmur3's
 * finalizer: every step is a bijection on 32 bits) yet land in clustered
 * slots, with the key in the high bits. */
static uint64_t spread(uint64_t key)
{
	uint32_t h = (uint32_t)key;

	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return (key << 32) | h;
}

static int is_pow2(size_t v)
{
	return v && !(v & (v - 1));
}

static uint32_t find(const struct id_index *x, struct keys *k, uint64_t hash,
		     uint64_t key)
{
	return id_index_find(x, hash, match, k, &key);
}

static void test_empty_and_one(void)
{
	struct id_index x;
	struct keys k = { NULL, 0, 0 };
	uint64_t v[1] = { 1234 };

	id_index_init(&x);
	CHECK(x.cap == 0 && x.count == 0, "init: empty");
	CHECK(find(&x, &k, spread(1234), 1234) == ID_NONE, "empty: miss");
	CHECK(find(&x, &k, 0, 0) == ID_NONE, "empty: hash 0 misses");
	CHECK(k.calls == 0, "empty: match never called (%lu)", k.calls);

	k.v = v;
	k.n = 1;
	CHECK_INT(id_index_insert(&x, spread(1234), 0), ==, 0, "insert one");
	CHECK_UINT(x.count, ==, 1, "one: count");
	CHECK(is_pow2(x.cap) && x.cap > x.count, "one: cap %zu a power of two",
	      x.cap);
	CHECK_UINT(find(&x, &k, spread(1234), 1234), ==, 0, "one: found");
	CHECK(find(&x, &k, spread(1235), 1235) == ID_NONE, "one: other key misses");
	/* Same hash, other key: match says no. */
	CHECK(find(&x, &k, spread(1234), 99) == ID_NONE,
	      "one: same hash, other key misses");

	id_index_release(&x);
	CHECK(x.cap == 0 && x.count == 0 && !x.ids && !x.hashes,
	      "release: back to empty");
	k.calls = 0;
	CHECK(find(&x, &k, spread(1234), 1234) == ID_NONE && k.calls == 0,
	      "released: miss without a match call");
	CHECK_INT(id_index_insert(&x, spread(1234), 0), ==, 0,
		  "released index takes inserts again");
	CHECK_UINT(find(&x, &k, spread(1234), 1234), ==, 0, "and finds them");
	id_index_release(&x);
}

/* Thousands of keys inserted one by one, checked at every growth. */
static void test_many(void)
{
	enum { N = 20000 };
	struct id_index x;
	struct keys k = { calloc(N, sizeof(uint64_t)), 0, 0 };
	size_t growths = 0, bad = 0, last_cap = 0;
	int bad_cap = 0, err = 0;

	if (!k.v)
		abort();
	id_index_init(&x);
	for (uint32_t i = 0; i < N; i++) {
		k.v[i] = 3ull * i + 17;
		k.n = i + 1;
		if (id_index_insert(&x, spread(k.v[i]), i) < 0)
			err = 1;
		if (!is_pow2(x.cap) || x.cap <= x.count)
			bad_cap = 1;
		if (x.cap != last_cap) {
			growths++;
			last_cap = x.cap;
			/* Every id so far survives the rehash. */
			for (uint32_t j = 0; j <= i; j++)
				if (find(&x, &k, spread(k.v[j]), k.v[j]) != j)
					bad++;
		}
	}
	CHECK(!err, "many: every insert succeeds");
	CHECK_UINT(x.count, ==, N, "many: count");
	CHECK(!bad_cap, "many: cap always a power of two above count");
	CHECK_UINT(growths, >=, 5, "many: the table grew several times");
	CHECK_UINT(bad, ==, 0, "many: every id found right after each growth");

	bad = 0;
	k.calls = 0;
	for (uint32_t i = 0; i < N; i++)
		if (find(&x, &k, spread(k.v[i]), k.v[i]) != i)
			bad++;
	CHECK_UINT(bad, ==, 0, "many: every key finds its id");
	/* Low 32 bits unique: exactly one compare per hit. */
	CHECK_UINT(k.calls, ==, N, "many: one match call per hit");

	bad = 0;
	k.calls = 0;
	for (uint64_t key = 0; key < N; key++) {
		uint64_t miss = 3 * key + 18; /* never inserted */

		if (find(&x, &k, spread(miss), miss) != ID_NONE)
			bad++;
	}
	CHECK_UINT(bad, ==, 0, "many: absent keys miss");
	CHECK_UINT(k.calls, ==, 0,
		   "many: a miss on low hash bits never calls match");
	id_index_release(&x);
	free(k.v);
}

/* Every key with the same hash: the index still keeps them apart. */
static void test_all_collide(void)
{
	enum { N = 2000 };
	struct id_index x;
	struct keys k = { calloc(N, sizeof(uint64_t)), N, 0 };
	size_t bad = 0;
	int err = 0;

	if (!k.v)
		abort();
	id_index_init(&x);
	for (uint32_t i = 0; i < N; i++) {
		k.v[i] = i * 7 + 3;
		if (id_index_insert(&x, 42, i) < 0)
			err = 1;
	}
	CHECK(!err && x.count == N, "collide: %d inserts of one hash", N);
	for (uint32_t i = 0; i < N; i++)
		if (find(&x, &k, 42, k.v[i]) != i)
			bad++;
	CHECK_UINT(bad, ==, 0, "collide: each key finds its own id");
	CHECK(find(&x, &k, 42, 5) == ID_NONE, "collide: absent key misses");
	CHECK(find(&x, &k, 43, k.v[0]) == ID_NONE,
	      "collide: present key under another hash misses");
	id_index_release(&x);
	free(k.v);
}

/* Hashes equal in the low 32 bits, different above: match decides. */
static void test_high_bits(void)
{
	struct id_index x;
	uint64_t v[3] = { 10, 20, 30 };
	struct keys k = { v, 3, 0 };
	uint64_t h = 0x00000000deadbeefull;

	id_index_init(&x);
	CHECK(id_index_insert(&x, h, 0) == 0 &&
	      id_index_insert(&x, h | (1ull << 32), 1) == 0 &&
	      id_index_insert(&x, h | (0xffffull << 48), 2) == 0,
	      "high bits: three inserts");
	CHECK_UINT(find(&x, &k, h, 10), ==, 0, "high bits: first");
	CHECK_UINT(find(&x, &k, h | (1ull << 32), 20), ==, 1, "high bits: second");
	CHECK_UINT(find(&x, &k, h | (0xffffull << 48), 30), ==, 2,
		   "high bits: third");
	id_index_release(&x);
}

/* For ids that index no array: the key is the id itself. */
static int match_id(const void *ctx, uint32_t id, const void *key)
{
	(void)ctx;
	return id == *(const uint64_t *)key;
}

/* Extreme values: id 0, the largest id below ID_NONE, hash 0 and ~0. */
static void test_extremes(void)
{
	static const struct {
		uint64_t hash;
		uint32_t id;
	} e[] = { { 0, 0 }, { UINT64_MAX, ID_NONE - 1 }, { 1ull << 63, 12345 } };
	struct id_index x;
	uint64_t other = 99;

	id_index_init(&x);
	for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++)
		CHECK(id_index_insert(&x, e[i].hash, e[i].id) == 0,
		      "extreme: insert hash %#llx id %u",
		      (unsigned long long)e[i].hash, e[i].id);
	for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++) {
		uint64_t want = e[i].id;

		CHECK_UINT(id_index_find(&x, e[i].hash, match_id, NULL, &want), ==,
			   e[i].id, "extreme: hash %#llx finds id %u",
			   (unsigned long long)e[i].hash, e[i].id);
	}
	CHECK(id_index_find(&x, 1, match_id, NULL, &other) == ID_NONE,
	      "extreme: hash 1 misses");
	id_index_release(&x);
}

int main(void)
{
	test_empty_and_one();
	test_many();
	test_all_collide();
	test_high_bits();
	test_extremes();
	return test_done();
}
