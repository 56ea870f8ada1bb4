/* schedule_runner: schedules' periods, on a thread of their own
 * (schedule_runner.h). */
#include "daemon/api/schedule_runner.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/units.h"
#include "daemon/api/api.h"
#include "daemon/api/schedule_governor.h"
#include "daemon/core/log.h"
#include "daemon/store/artifacts.h"
#include "daemon/store/db.h"
#include "daemon/store/instances.h"
#include "profile/events.h"

/* The most workers a period looks at (as a list of workers does). */
#define SCAN_MAX 65536
/* The longest the thread sleeps between looks at the index: a stop, or
 * a schedule created or resumed, is seen within it (a write to the
 * index wakes it sooner). */
#define WAKE_NS 1000000000ull
/* How often what schedules keep is looked at, beside their periods. */
#define PRUNE_NS 2000000000ull


/* Schedules whose last period's own cost the runner keeps (a slot by
 * id; another schedule in a slot relearns it in one period). */
#define OWN_SLOTS 256

struct schedule_runner {
	struct daemon *d;
	pthread_t thread;
	atomic_bool stop;
	/* nprofd's own CPU (this thread's clock) in each schedule's last
	 * period: finding its workers, starting their recordings */
	struct { int64_t id; uint64_t ns; } own[OWN_SLOTS];
};

static uint64_t *own_slot(struct schedule_runner *r, int64_t id)
{
	size_t i = (size_t)id % OWN_SLOTS;

	if (r->own[i].id != id)
		r->own[i].id = id, r->own[i].ns = 0;
	return &r->own[i].ns;
}

bool schedule_user(const struct daemon *d, const struct schedule *s, struct user *ret)
{
	/* Root's schedules were made over the socket (root is an admin
	 * there only); the others act as their user does over HTTP. */
	*ret = (struct user){ .uid = s->uid, .via = s->uid == 0 ? "socket" : "schedule" };
	return user_complete(d, ret);
}

int schedule_matches(struct daemon *d, const struct schedule_selector *sel, const struct user *u,
		     struct worker **ret, size_t *n)
{
	struct worker *ws;
	size_t all, k = 0;
	/* (a scan of its own: the shared one's CPU shares are the lists') */
	int r = worker_scan(NULL, "/proc", SCAN_MAX, &ws, &all);

	if (r < 0)
		return r;
	for (size_t i = 0; i < all; i++)
		if (user_may_see(u, ws[i].uid) && schedule_selector_takes(d, sel, &ws[i]))
			ws[k++] = ws[i];
	*ret = ws;
	*n = k;
	return 0;
}

/* What one period did, for the schedule's message. */
struct tally {
	unsigned started, busy, refused;
	char first_refusal[200];
};

static void tally_reply(struct tally *t, const struct reply *rp, const char *what)
{
	const char *error = json_string_value(json_object_get(rp->json, "error"));

	if (rp->status == 201) {
		t->started++;
	} else if (rp->status == 409) {
		t->busy++;	/* recorded on demand: that one wins */
	} else {
		if (!t->refused++)
			snprintf(t->first_refusal, sizeof(t->first_refusal), "%s: %u %s", what,
				 rp->status, error ? error : "");
	}
}

/* One mode of s on worker w, as s's user u, the governor's note in it. */
static void record(struct daemon *d, const struct schedule *s, const struct user *u,
		   const struct worker *w, const struct event_def *ev, const char *note,
		   struct tally *t)
{
	struct request rq = { .method = "POST", .path = "/api/v1/schedules", .body = "",
			      .user = *u };
	struct reply rp = { .fd = -1 };
	struct worker pinned;
	char what[96];
	int pidfd = -1;

	snprintf(what, sizeof(what), "%s on %s", ev->name, w->id);
	if (api_worker(d, &rq, &rp, w->id, &pinned, &pidfd))
		profile_start(d, &rq, &rp, &pinned, pidfd, &(struct profile_request){
			.event = ev, .duration_ns = s->duration_ns, .format = "flamegraph",
			.schedule = s->id, .note = note });
	if (rp.status == 410)
		rp.status = 409;	/* gone since the scan: nothing to record */
	tally_reply(t, &rp, what);
	if (pidfd >= 0)
		close(pidfd);
	json_decref(rp.json);
	free(rp.body);
}

/* The schedule's modes, known events (checked when it was made). */
static size_t modes_of(const struct schedule *s, const struct event_def **evs, size_t max)
{
	char buf[SCHEDULE_MODES_MAX], *save = NULL;
	size_t n = 0;

	snprintf(buf, sizeof(buf), "%s", s->modes);
	for (char *m = strtok_r(buf, ",", &save); m && n < max; m = strtok_r(NULL, ",", &save))
		if ((evs[n] = event_find(m)))
			n++;
	return n;
}

/* What s started before its keep removed. */
static void prune(struct daemon *d, const struct schedule *s, uint64_t now)
{
	int64_t *ids = NULL;
	size_t n = 0;

	if (!s->keep_ns || now < s->keep_ns / 1000000 ||
	    instances_of_schedule_before(d->db, s->id, now - s->keep_ns / 1000000, &ids, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		if (artifacts_remove_instance(d, ids[i]) < 0)
			log_error("schedule %lld: instance %lld is past its keep and cannot be "
				  "removed", (long long)s->id, (long long)ids[i]);
	free(ids);
}

/* What its last period cost, its recordings' CPU and nprofd's own
 * (own_ns), a share of one CPU over the time since it began (recordings
 * still running count nothing yet). */
static double last_cost(struct daemon *d, const struct schedule *s, uint64_t own_ns,
			uint64_t now)
{
	int64_t used;

	if (!s->last_run_ms || now <= s->last_run_ms ||
	    (used = instances_cpu_of_schedule(d->db, s->id, s->last_run_ms, now)) < 0)
		return s->cost;
	return ((double)used + (double)own_ns) / ((double)(now - s->last_run_ms) * 1e6);
}

/* One recording a period wants: a worker, in a mode, last recorded at. */
struct wanted {
	const struct worker *w;
	const struct event_def *ev;
	uint64_t last_ms;	/* 0: never by this schedule */
};

static int least_recent_first(const void *a, const void *b)
{
	uint64_t x = ((const struct wanted *)a)->last_ms, y = ((const struct wanted *)b)->last_ms;

	return (x > y) - (x < y);
}

/* Every worker of ws in every mode of evs, the least recently recorded
 * first: into *ret (free it), or NULL when out of memory. */
static struct wanted *wanted_of(struct daemon *d, const struct schedule *s,
				const struct worker *ws, size_t n, const struct event_def **evs,
				size_t nev)
{
	struct wanted *want = calloc(n * nev + 1, sizeof(*want));
	struct recorded *done = NULL;
	size_t ndone = 0, k = 0;

	if (!want)
		return NULL;
	/* (unread, every worker is as if never recorded: all wait their turn alike) */
	if (instances_recorded_by(d->db, s->id, &done, &ndone) < 0)
		ndone = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t e = 0; e < nev; e++, k++) {
			want[k] = (struct wanted){ .w = &ws[i], .ev = evs[e] };
			for (size_t r = 0; r < ndone; r++)
				if (!strcmp(done[r].worker, ws[i].id) && !strcmp(done[r].mode, evs[e]->name))
					want[k].last_ms = done[r].last_ms;
		}
	free(done);
	/* stable enough: qsort keeps no order among ties, none is owed one */
	qsort(want, k, sizeof(*want), least_recent_first);
	return want;
}

/* One period of s, beginning now (ms). */
static void run_period(struct schedule_runner *rn, const struct schedule *s, uint64_t now)
{
	struct daemon *d = rn->d;
	uint64_t *own = own_slot(rn, s->id), began = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	const struct event_def *evs[EVENT_COUNT];
	size_t nev = modes_of(s, evs, EVENT_COUNT), n = 0;
	struct schedule_selector sel;
	struct worker *ws = NULL;
	struct wanted *want = NULL;
	struct tally t = { 0 };
	struct governor_plan plan = { .interval_ns = s->every_ns };
	char message[512], why[256], note[256], iv[32], governed[256] = "";
	json_error_t jerr;
	json_t *j = json_loads(s->selector, 0, &jerr);
	double cost = last_cost(d, s, *own, now);
	int64_t per = instances_cpu_per_recording(d->db, s->id, 20);
	struct user u;
	int r;

	if (schedule_selector_parse(j, &sel, why, sizeof(why)) < 0) {
		snprintf(message, sizeof(message), "its selector is not one this nprofd reads (%s)",
			 why);
	} else if (!schedule_user(d, s, &u)) {
		snprintf(message, sizeof(message), "user %s (uid %u) has no account any more: "
			 "nothing recorded", s->user, (unsigned)s->uid);
	} else if ((r = schedule_matches(d, &sel, &u, &ws, &n)) < 0) {
		snprintf(message, sizeof(message), "cannot read the host's processes: %s",
			 strerror(-r));
	} else if (!(want = wanted_of(d, s, ws, n, evs, nev))) {
		snprintf(message, sizeof(message), "out of memory: nothing recorded");
	} else {
		governor_plan(n * nev, per > 0 ? (uint64_t)per : 0, *own, s->budget, s->every_ns,
			      &plan);
		units_format_duration(plan.interval_ns, iv, sizeof(iv));
		snprintf(note, sizeof(note), "continuous profiling: interval=%s budget=%.2f%% "
			 "measured_cost=%.3f%% (of one CPU, the period before this one: its "
			 "recordings and nprofd's %.1f ms)", iv, s->budget * 100, cost * 100,
			 (double)*own / 1e6);
		for (size_t i = 0; i < plan.take; i++)
			record(d, s, &u, want[i].w, want[i].ev, note, &t);
		if (plan.over)
			snprintf(governed, sizeof(governed), "; one recording costs %.0f ms of CPU "
				 "(nprofd %.1f ms a period), more than its budget (%.2f%%) allows "
				 "even a day apart: it records once a day", (double)per / 1e6,
				 (double)*own / 1e6, s->budget * 100);
		else if (plan.interval_ns > s->every_ns)
			snprintf(governed, sizeof(governed), "; one recording costs %.0f ms of CPU "
				 "(nprofd %.1f ms a period), more than its budget (%.2f%% of a CPU) "
				 "allows a period: one every %s", (double)per / 1e6, (double)*own / 1e6,
				 s->budget * 100, iv);
		else if (plan.take < n * nev)
			snprintf(governed, sizeof(governed), "; %zu of the %zu recordings it wants this "
				 "period, the least recently recorded, to keep within its budget "
				 "(%.2f%% of a CPU, %.0f ms each, nprofd %.1f ms a period)", plan.take,
				 n * nev, s->budget * 100, (double)per / 1e6, (double)*own / 1e6);
		snprintf(message, sizeof(message), "%zu worker%s matched: %u recording%s started, "
			 "%u left to on-demand ones%s%u refused%s%s", n, n == 1 ? "" : "s",
			 t.started, t.started == 1 ? "" : "s", t.busy, ", ", t.refused,
			 t.refused ? " (" : "", t.refused ? t.first_refusal : "");
		if (t.refused)
			snprintf(message + strlen(message), sizeof(message) - strlen(message), ")");
		snprintf(message + strlen(message), sizeof(message) - strlen(message), "%s",
			 governed);
	}
	json_decref(j);
	free(want);
	free(ws);
	*own = clock_ns(CLOCK_THREAD_CPUTIME_ID) - began;
	/* (a period missed, nprofd down or the host too busy, is not made
	 * up: the next begins an interval from now) */
	if (schedule_ran(d->db, s->id, now, now + plan.interval_ns / 1000000, plan.interval_ns, cost,
			 message) < 0)
		log_error("schedule %lld: its period's end is not in the index: %s",
			  (long long)s->id, message);
}

/* What every schedule keeps, past its keep removed: also while a period
 * is stretched or the schedule paused, so that keep holds whatever the
 * governor does. */
static void prune_all(struct daemon *d, uint64_t now)
{
	struct schedule *all = NULL;
	size_t n = 0;

	if (schedules_list(d->db, true, 0, &all, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		prune(d, &all[i], now);
	free(all);
}

static void *run(void *arg)
{
	struct schedule_runner *r = arg;
	struct daemon *d = r->d;
	uint64_t pruned_ns = 0;

	while (!atomic_load(&r->stop)) {
		uint64_t gen = db_generation(d->db), now = now_ms(), wait = WAKE_NS;
		struct schedule *due = NULL;
		size_t n = 0;
		int64_t next;

		if (clock_ns(CLOCK_MONOTONIC) - pruned_ns >= PRUNE_NS) {
			prune_all(d, now);
			pruned_ns = clock_ns(CLOCK_MONOTONIC);
			gen = db_generation(d->db);	/* (its own removals wake no one) */
		}

		if (schedules_due(d->db, now, &due, &n) < 0)
			log_error("cannot read the schedules from the index");
		for (size_t i = 0; i < n && !atomic_load(&r->stop); i++)
			run_period(r, &due[i], now);
		free(due);
		if (n)
			continue;	/* (its own writes moved the generation on) */
		next = schedules_next_run(d->db);
		if (next > 0 && (uint64_t)next > now && ((uint64_t)next - now) * 1000000 < wait)
			wait = ((uint64_t)next - now) * 1000000;
		db_wait_change(d->db, gen, clock_ns(CLOCK_MONOTONIC) + wait);
	}
	return NULL;
}

struct schedule_runner *schedule_runner_start(struct daemon *d)
{
	struct schedule_runner *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->d = d;
	if (pthread_create(&r->thread, NULL, run, r) != 0) {
		free(r);
		return NULL;
	}
	return r;
}

void schedule_runner_stop(struct schedule_runner *r)
{
	if (!r)
		return;
	atomic_store(&r->stop, true);
	pthread_join(r->thread, NULL);
	free(r);
}
