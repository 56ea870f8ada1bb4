/* door_limit: a peer's share, the socket refusing past it and HTTP
 * closing the peer's own oldest connection still receiving; the door
 * full, its reserve kept for the privileged, a connection still
 * receiving closed to make room and one busy with its request never;
 * the deadline cutting a connection that has not received its request
 * whole, from its start or its last reply, and never one whose request
 * is in; what libmicrohttpd never took forgotten. Time is passed in;
 * the cuts are recorded, not done. */
#include "daemon/door/door_limit.h"
#include "test.h"

#include <stdlib.h>

#define SEC 1000000000ull

static int cuts[4096], n_cuts;
static enum door_cut last_why;

static void record(void *ctx, int fd, enum door_cut why)
{
	(void)ctx;
	cuts[n_cuts++ % 4096] = fd;
	last_why = why;
}

static bool was_cut(int fd)
{
	for (int i = 0; i < n_cuts && i < 4096; i++)
		if (cuts[i] == fd)
			return true;
	return false;
}

static struct door_slot *slots[1000];
static uint64_t now = 100 * SEC;

/* fd admitted and taken by libmicrohttpd: DOOR_ADMIT or the verdict. */
static enum door_verdict open_one(struct door_limit *l, int fd, const char *peer, bool privileged)
{
	enum door_verdict v = door_limit_admit(l, fd, peer, privileged, now);

	if (v == DOOR_ADMIT)
		slots[fd] = door_limit_started(l, fd);
	return v;
}

static void close_one(struct door_limit *l, int fd)
{
	door_limit_closed(l, slots[fd]);
	slots[fd] = NULL;
}

static void test_socket(void)
{
	struct door_limit *l = door_limit_new(&(struct door_limits){ .max = 10, .reserved = 3,
								     .per_peer = 4, .deadline_ns = 2 * SEC },
					      record, NULL);
	int fd = 10;

	n_cuts = 0;
	for (int i = 0; i < 4; i++)
		CHECK(open_one(l, fd++, "uid:1001", false) == DOOR_ADMIT, "uid 1001: connection %d", i + 1);
	CHECK(open_one(l, fd++, "uid:1001", false) == DOOR_PEER_FULL && n_cuts == 0,
	      "its fifth: refused (the socket does not close a user's own), nothing cut");
	CHECK(door_limit_held(l, "uid:1001") == 4, "it holds 4");
	for (int i = 0; i < 3; i++)
		CHECK(open_one(l, fd++, "uid:1002", false) == DOOR_ADMIT, "uid 1002: connection %d", i + 1);
	/* 7 of 10 held; 7 = max - reserved: the unprivileged are full */
	door_limit_received(l, slots[10]);
	for (int i = 11; i < 14; i++)
		door_limit_received(l, slots[i]);
	for (int i = 15; i < 18; i++)
		door_limit_received(l, slots[i]);
	CHECK(open_one(l, 30, "uid:1003", false) == DOOR_FULL && n_cuts == 0,
	      "a third user, every connection busy with its request: refused (the rest is root's)");
	for (int i = 0; i < 3; i++)
		CHECK(open_one(l, 31 + i, "uid:0", true) == DOOR_ADMIT, "root: %d of the reserve", i + 1);
	CHECK(open_one(l, 34, "uid:0", true) == DOOR_FULL, "root past max, nothing to close: refused");
	door_limit_idle(l, slots[15], now);
	CHECK(open_one(l, 35, "uid:0", true) == DOOR_ADMIT && was_cut(15) && last_why == DOOR_CUT_ROOM,
	      "a connection waiting for its next request: closed to make room for root");
	close_one(l, 15);
	CHECK(open_one(l, 36, "uid:0", true) == DOOR_FULL, "root's own are never closed for room");
	door_limit_free(l);
}

static void test_http(void)
{
	struct door_limit *l = door_limit_new(&(struct door_limits){ .max = 8, .per_peer = 3,
								     .evict_own = true,
								     .deadline_ns = 2 * SEC },
					      record, NULL);

	n_cuts = 0;
	for (int i = 0; i < 3; i++) {
		CHECK(open_one(l, 100 + i, "uid:1001", false) == DOOR_ADMIT, "a loopback client: %d", i + 1);
		now += SEC / 10;
	}
	CHECK(open_one(l, 103, "uid:1001", false) == DOOR_ADMIT && was_cut(100) &&
		      door_limit_held(l, "uid:1001") == 3,
	      "past its share: its oldest still receiving is closed, the new one taken");
	door_limit_received(l, slots[101]);
	door_limit_received(l, slots[102]);
	door_limit_received(l, slots[103]);
	close_one(l, 100);
	CHECK(open_one(l, 104, "uid:1001", false) == DOOR_PEER_FULL,
	      "all three busy with their requests: refused");
	CHECK(open_one(l, 105, "ip:192.0.2.1", false) == DOOR_ADMIT, "another peer: taken");
	CHECK(open_one(l, 106, "ip:192.0.2.9", true) == DOOR_ADMIT &&
		      open_one(l, 107, "ip:192.0.2.9", true) == DOOR_ADMIT &&
		      open_one(l, 108, "ip:192.0.2.9", true) == DOOR_ADMIT &&
		      open_one(l, 109, "ip:192.0.2.9", true) == DOOR_ADMIT,
	      "a trusted proxy: past the share");
	CHECK(open_one(l, 110, "ip:192.0.2.2", false) == DOOR_ADMIT && was_cut(105),
	      "the door full (8): the oldest still receiving (192.0.2.1's) closed for a new peer");
	door_limit_free(l);
}

static void test_deadline(void)
{
	struct door_limit *l = door_limit_new(&(struct door_limits){ .max = 8, .per_peer = 8,
								     .deadline_ns = 2 * SEC },
					      record, NULL);
	uint64_t next;

	n_cuts = 0;
	open_one(l, 200, "uid:5", false);
	now += SEC / 2;
	open_one(l, 201, "uid:5", false);
	open_one(l, 202, "uid:5", false);
	door_limit_received(l, slots[202]);
	next = door_limit_expire(l, now);
	CHECK(next == 3 * SEC / 2 && n_cuts == 0, "nothing due yet; the next in 1.5 s");
	now += 3 * SEC / 2;
	next = door_limit_expire(l, now);
	CHECK(n_cuts == 1 && was_cut(200) && last_why == DOOR_CUT_DEADLINE && next == SEC / 2,
	      "2 s after its start, still receiving: cut; the next due in 0.5 s");
	now += 10 * SEC;
	door_limit_expire(l, now);
	CHECK(was_cut(201) && !was_cut(202), "the other receiving one too; the one whose request is in, never");
	door_limit_idle(l, slots[202], now);
	now += SEC;
	door_limit_expire(l, now);
	CHECK(!was_cut(202), "its reply gone, it waits for its next request: 1 s, kept");
	now += SEC;
	door_limit_expire(l, now);
	CHECK(was_cut(202), "2 s after its reply: cut");

	CHECK(door_limit_admit(l, 300, "uid:6", false, now) == DOOR_ADMIT, "admitted, never started");
	now += 11 * SEC;
	door_limit_expire(l, now);
	CHECK(door_limit_held(l, "uid:6") == 0 && !was_cut(300),
	      "forgotten after 10 s, never cut (the fd was never libmicrohttpd's)");
	CHECK(door_limit_admit(l, 301, "uid:6", false, now) == DOOR_ADMIT, "admitted again");
	door_limit_drop(l, 301);
	CHECK(door_limit_held(l, "uid:6") == 0, "dropped when it could not be handed on");
	CHECK(door_limit_admit(l, 302, "uid:6", false, now) == DOOR_ADMIT &&
		      door_limit_admit(l, 302, "uid:6", false, now) == DOOR_ADMIT &&
		      door_limit_held(l, "uid:6") == 1,
	      "an fd number accepted again: the first is gone, counted once");
	door_limit_free(l);
}

int main(void)
{
	test_socket();
	test_http();
	test_deadline();
	return test_done();
}
