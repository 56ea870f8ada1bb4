/* offcpu_test: off-CPU spans from synthetic switch sequences (in order,
 * out of order across flushes, lost switches, exits, threads blocked
 * from the start) and the apportioning of samples among stacks. */
#include <stdlib.h>
#include <string.h>

#include "engine/offcpu.h"
#include "test.h"

#define MAX_SPANS 64

static struct offcpu_span spans[MAX_SPANS];
static size_t nspans, nseen;

static void on_span(void *ctx, const struct offcpu_span *s)
{
	(void)ctx;
	nseen++;
	if (nspans < MAX_SPANS)
		spans[nspans++] = *s;
}

static void out(struct offcpu *o, uint64_t t, pid_t tid, char state, uint32_t stack)
{
	struct offcpu_switch sw = { .time_ns = t, .tid = tid, .kind = OFFCPU_OUT,
				    .state = state, .stack = stack };

	offcpu_add(o, &sw);
}

static void in(struct offcpu *o, uint64_t t, pid_t tid)
{
	struct offcpu_switch sw = { .time_ns = t, .tid = tid, .kind = OFFCPU_IN };

	offcpu_add(o, &sw);
}

/* The total ns of tid's spans at stack. */
static uint64_t ns_of(pid_t tid, uint32_t stack)
{
	uint64_t t = 0;

	for (size_t i = 0; i < nspans; i++)
		if (spans[i].tid == tid && spans[i].stack == stack)
			t += spans[i].ns;
	return t;
}

static void test_in_order(void)
{
	struct offcpu o;

	nspans = 0;
	offcpu_init(&o, 1000, on_span, NULL);
	out(&o, 1100, 7, 'S', 1);
	in(&o, 1400, 7);
	out(&o, 1500, 7, 'D', 2);
	in(&o, 1550, 7);
	out(&o, 1600, 7, 'R', 3);
	offcpu_finish(&o, 2000);
	CHECK_UINT(nspans, ==, 3, "three spans");
	CHECK_UINT(ns_of(7, 1), ==, 300, "sleep 1100-1400");
	CHECK(spans[0].state == 'S' && spans[0].start_ns == 1100, "the sleep's state and start");
	CHECK_UINT(ns_of(7, 2), ==, 50, "uninterruptible 1500-1550");
	CHECK_UINT(ns_of(7, 3), ==, 400, "runnable from 1600 to the end");
	CHECK_UINT(o.unpaired, ==, 0, "nothing unpaired");
	offcpu_release(&o);
}

static void test_across_rings(void)
{
	struct offcpu o;

	nspans = 0;
	offcpu_init(&o, 0, on_span, NULL);
	/* Thread 5 leaves on one CPU and returns on another whose ring is
	 * read first; thread 6 likewise, the other way round. */
	in(&o, 300, 5);
	out(&o, 200, 6, 'S', 9);
	out(&o, 100, 5, 'S', 4);
	offcpu_flush(&o, 250);
	CHECK_UINT(nspans, ==, 0, "nothing closes before its in is accounted");
	in(&o, 260, 6);
	offcpu_flush(&o, 1000);
	CHECK_UINT(nspans, ==, 2, "both spans once both rings are read");
	CHECK_UINT(ns_of(5, 4), ==, 200, "thread 5: 100-300");
	CHECK_UINT(ns_of(6, 9), ==, 60, "thread 6: 200-260");
	offcpu_finish(&o, 2000);
	CHECK_UINT(nspans, ==, 2, "no span open at the end");
	offcpu_release(&o);
}

static void test_lost_and_exit(void)
{
	struct offcpu o;

	nspans = 0;
	offcpu_init(&o, 0, on_span, NULL);
	out(&o, 100, 3, 'S', 1);
	out(&o, 300, 3, 'S', 2); /* the in at ~200 was lost */
	in(&o, 400, 3);
	in(&o, 500, 3);		 /* its out lost: nothing to close */
	out(&o, 600, 3, 'X', 5); /* exits */
	offcpu_finish(&o, 1000);
	CHECK_UINT(nspans, ==, 1, "one span survives the losses");
	CHECK_UINT(ns_of(3, 2), ==, 100, "300-400 at the second stack");
	CHECK_UINT(ns_of(3, 1), ==, 0, "the span without an end is dropped");
	CHECK_UINT(o.unpaired, ==, 1, "and counted");
	CHECK_UINT(ns_of(3, 5), ==, 0, "an exiting thread's last switch opens nothing");
	offcpu_release(&o);
}

static void test_begin(void)
{
	struct offcpu o;

	nspans = 0;
	offcpu_init(&o, 1000, on_span, NULL);
	offcpu_thread_begin(&o, 1, false, 'S', 11); /* idle throughout */
	offcpu_thread_begin(&o, 2, false, 'D', 12); /* wakes at 1300 */
	offcpu_thread_begin(&o, 3, true, 'R', 0);   /* running at the start */
	in(&o, 1300, 2);
	out(&o, 1200, 3, 'S', 13);
	out(&o, 900, 4, 'S', 14); /* before the start: counted from it */
	in(&o, 1100, 4);
	offcpu_finish(&o, 5000);
	CHECK_UINT(ns_of(1, 11), ==, 4000, "an idle thread has the whole recording");
	CHECK_UINT(ns_of(2, 12), ==, 300, "blocked at the start until its first in");
	CHECK_UINT(ns_of(3, 13), ==, 3800, "a thread running at the start: from its out");
	CHECK_UINT(ns_of(4, 14), ==, 100, "a span that began before the start, from the start");
	offcpu_release(&o);
}

static void test_queue_bound(void)
{
	struct offcpu o;
	nspans = nseen = 0;
	offcpu_init(&o, 0, on_span, NULL);
	for (uint64_t i = 0; i < OFFCPU_MAX_QUEUE + 10; i += 2) {
		out(&o, 10 * i, 1, 'S', 1);
		in(&o, 10 * i + 5, 1);
	}
	CHECK_UINT(o.nqueue, <=, OFFCPU_MAX_QUEUE, "the queue stays bounded");
	CHECK_UINT(o.early, >, 0, "and says it accounted early");
	offcpu_finish(&o, UINT64_MAX);
	CHECK_UINT(nseen, ==, (OFFCPU_MAX_QUEUE + 10) / 2, "every span");
	CHECK_UINT(o.unpaired, ==, 0, "in-order switches still pair");
	offcpu_release(&o);
}

static void test_apportion(void)
{
	uint64_t ns[4] = { 14, 14, 3, 9 }, got[4];
	uint64_t one[1] = { 25 }, got1[1];
	uint64_t tiny[3] = { 1, 1, 1 }, got3[3];

	/* 40 ns at 10: 4 samples; floors 1 1 0 0, remainders 4 4 3 9:
	 * the two left go to 9, then to the first 4. */
	CHECK(offcpu_apportion(ns, 4, 10, got) == 0, "apportion");
	CHECK(got[0] == 2 && got[1] == 1 && got[2] == 0 && got[3] == 1,
	      "largest remainders get the rest (%llu %llu %llu %llu)",
	      (unsigned long long)got[0], (unsigned long long)got[1],
	      (unsigned long long)got[2], (unsigned long long)got[3]);
	CHECK(offcpu_apportion(ns, 4, 5, got) == 0 && got[0] + got[1] + got[2] + got[3] == 8,
	      "the sum is the total in units");
	CHECK(offcpu_apportion(one, 1, 10, got1) == 0 && got1[0] == 3, "2.5 units round to 3");
	CHECK(offcpu_apportion(tiny, 3, 10, got3) == 0 && got3[0] + got3[1] + got3[2] == 0,
	      "3 ns of 10 round to nothing");
	CHECK(offcpu_apportion(ns, 0, 10, got) == 0, "no stacks");
}

int main(void)
{
	test_in_order();
	test_across_rings();
	test_lost_and_exit();
	test_begin();
	test_queue_bound();
	test_apportion();
	return test_done();
}
