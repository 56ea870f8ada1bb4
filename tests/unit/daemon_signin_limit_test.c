/* signin_limit: the waits of one name from one address (doubling past
 * max_failures), of one address, the door's rate for clients that
 * failed (and not for those that did not), attempts in flight counted,
 * a success forgetting its pair, records forgotten after the window, no
 * lockout of a name by failures from elsewhere. Time is passed in. */
#include "daemon/auth/signin_limit.h"
#include "test.h"

#include <errno.h>
#include <stdlib.h>

#define SEC 1000000000ull
#define MIN (60 * SEC)

static struct signin_limit *l;
static struct signin_attempt a;
static enum signin_refusal why;
static uint64_t wait_s;
static uint64_t now = 1000 * SEC;

static int try(const char *user, const char *addr, const char *peer)
{
	why = (enum signin_refusal)-1;
	wait_s = 0;
	return signin_limit_try(l, user, addr, peer, now, &a, &why, &wait_s);
}

/* An attempt that fails. */
static int fail(const char *user, const char *addr, const char *peer)
{
	int r = try(user, addr, peer);

	if (r == 0)
		signin_limit_failed(l, &a, now);
	return r;
}

static void fresh(unsigned pair, unsigned address, unsigned rate)
{
	signin_limit_free(l);
	l = signin_limit_new(&(struct signin_limits){ .max_failures = pair,
						      .max_address_failures = address,
						      .failures_per_minute = rate,
						      .window_ns = 5 * MIN });
}

static void test_pair(void)
{
	int r;

	fresh(3, 100, 1000);
	for (int i = 0; i < 3; i++)
		CHECK(fail("admin", "127.0.0.2", "uid:1001") == 0, "failure %d of admin from .2 checked", i + 1);
	r = try("admin", "127.0.0.2", "uid:1001");
	CHECK(r == -EAGAIN && why == SIGNIN_PAIR && wait_s == 1,
	      "past max_failures: refused by the pair, 1 s (%d, %d, %llu)", r, why, (unsigned long long)wait_s);
	CHECK(try("admin", "127.0.0.1", "uid:0") == 0, "admin from .1 (nothing failed there): checked");
	signin_limit_succeeded(l, &a, now);
	CHECK(try("bob", "127.0.0.2", "uid:1001") == 0, "another name from .2: checked");
	signin_limit_failed(l, &a, now);
	now += SEC;
	CHECK(fail("admin", "127.0.0.2", "uid:1001") == 0, "after 1 s: checked again (and fails)");
	r = try("admin", "127.0.0.2", "uid:1001");
	CHECK(r == -EAGAIN && wait_s == 2, "then the wait doubles: 2 s (%llu)", (unsigned long long)wait_s);
	now += 2 * SEC;
	CHECK(fail("admin", "127.0.0.2", "uid:1001") == 0, "after 2 s: checked");
	try("admin", "127.0.0.2", "uid:1001");
	CHECK(wait_s == 4, "then 4 s (%llu)", (unsigned long long)wait_s);
	for (int i = 0; i < 20; i++) {
		now += 10 * MIN;
		fail("admin", "127.0.0.2", "uid:1001");
	}
	CHECK(wait_s == 0, "a record is forgotten a window after its last failure");
	for (int i = 0; i < 12; i++) {
		now += MIN;
		fail("x", "127.0.0.9", "uid:5");
		now += 5 * MIN - 1;
		try("x", "127.0.0.9", "uid:5");
	}
	CHECK(try("x", "127.0.0.9", "uid:5") == -EAGAIN && wait_s <= 300 && wait_s >= 1,
	      "the wait is at most the window (%llu s)", (unsigned long long)wait_s);
	now += 5 * MIN;
	CHECK(try("x", "127.0.0.9", "uid:5") == 0, "and past it, checked");
	signin_limit_failed(l, &a, now);

	fresh(3, 100, 1000);
	fail("carol", "10.0.0.1", "ip:10.0.0.1");
	fail("carol", "10.0.0.1", "ip:10.0.0.1");
	CHECK(try("carol", "10.0.0.1", "ip:10.0.0.1") == 0, "two typos, then the right password: checked");
	signin_limit_succeeded(l, &a, now);
	fail("carol", "10.0.0.1", "ip:10.0.0.1");
	fail("carol", "10.0.0.1", "ip:10.0.0.1");
	CHECK(try("carol", "10.0.0.1", "ip:10.0.0.1") == 0,
	      "a success forgot them: two more typos are below max_failures again");
	signin_limit_succeeded(l, &a, now);
}

static void test_in_flight(void)
{
	struct signin_attempt first;

	fresh(1, 100, 1000);
	CHECK(try("dave", "127.0.0.5", "uid:7") == 0, "one attempt in flight");
	first = a;
	CHECK(try("dave", "127.0.0.5", "uid:7") == -EAGAIN && why == SIGNIN_PAIR,
	      "a second at the same time counts the first as a failure: refused");
	signin_limit_succeeded(l, &first, now);
	CHECK(try("dave", "127.0.0.5", "uid:7") == 0, "the first succeeded: no longer counted");
	signin_limit_succeeded(l, &a, now);
}

static void test_address(void)
{
	char name[32];

	fresh(5, 4, 1000);
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "user%d", i);
		CHECK(fail(name, "192.0.2.9", "ip:192.0.2.9") == 0, "%s from 192.0.2.9: checked", name);
	}
	CHECK(try("eve", "192.0.2.9", "ip:192.0.2.9") == -EAGAIN && why == SIGNIN_ADDRESS &&
		      wait_s == 1,
	      "past max_address_failures, any name from there: refused by the address, 1 s");
	CHECK(try("eve", "192.0.2.10", "ip:192.0.2.10") == 0, "eve from another address: checked");
	signin_limit_succeeded(l, &a, now);
}

static void test_door(void)
{
	char addr[32];
	int r;

	fresh(5, 100, 3);
	for (int i = 0; i < 3; i++) {
		snprintf(addr, sizeof(addr), "127.0.1.%d", i);
		CHECK(fail("spray", addr, "uid:1001") == 0, "spray from %s: checked (a token)", addr);
	}
	r = try("spray", "127.0.1.200", "uid:1001");
	CHECK(r == -EAGAIN && why == SIGNIN_DOOR && wait_s >= 19 && wait_s <= 21,
	      "the bucket (3 a minute) empty: the client that failed is refused from a fresh "
	      "address, for about 20 s (%llu)", (unsigned long long)wait_s);
	CHECK(try("admin", "127.0.0.1", "uid:0") == 0, "a client that has not failed is checked");
	signin_limit_succeeded(l, &a, now);
	CHECK(try("admin", "127.0.0.1", "uid:0") == 0, "and again after its success");
	signin_limit_failed(l, &a, now);
	CHECK(try("admin", "127.0.0.1", "uid:0") == -EAGAIN && why == SIGNIN_DOOR,
	      "once it failed, it waits too");
	now += 20 * SEC;
	CHECK(try("spray", "127.0.1.201", "uid:1001") == 0, "20 s on, a token: checked");
	signin_limit_failed(l, &a, now);
	CHECK(try("spray", "127.0.1.202", "uid:1001") == -EAGAIN, "and the next one waits again");

	fresh(5, 100, 2);
	CHECK(try("frank", "10.1.1.1", "ip:10.1.1.1") == 0, "frank takes a token");
	signin_limit_succeeded(l, &a, now);
	fail("g", "10.1.1.2", "ip:10.1.1.2");
	CHECK(fail("g", "10.1.1.2", "ip:10.1.1.2") == 0,
	      "a success gives its token back: two failures still fit a bucket of 2");
	CHECK(try("g", "10.1.1.2", "ip:10.1.1.2") == -EAGAIN && why == SIGNIN_DOOR, "a third does not");
}

static void test_full_table(void)
{
	char addr[32], name[32];

	fresh(3, 1000000, 100000);
	for (int i = 0; i < 3; i++)
		fail("admin", "127.0.0.2", "uid:1001");
	now += SEC / 2;
	for (int i = 0; i < 5000; i++) {
		snprintf(addr, sizeof(addr), "10.%d.%d.1", i / 250, i % 250);
		snprintf(name, sizeof(name), "n%d", i);
		fail(name, addr, "uid:1002");
	}
	CHECK(try("n4999", "10.19.249.1", "uid:1002") == 0, "5000 pairs failing: the table holds the newest");
	signin_limit_failed(l, &a, now);
}

int main(void)
{
	test_pair();
	test_in_flight();
	test_address();
	test_door();
	test_full_table();
	signin_limit_free(l);
	return test_done();
}
