/* instance_group: a profile of every worker a selector takes
 * (instance_group.h). */
#include "daemon/api/instance_group.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "daemon/api/schedule_runner.h"
#include "daemon/api/schedule_selector.h"
#include "daemon/core/log.h"
#include "daemon/jobs/jobs.h"
#include "daemon/store/artifact_rows.h"
#include "daemon/store/artifacts.h"
#include "daemon/store/db.h"
#include "daemon/store/instances.h"
#include "profile/events.h"
#include "profile/profile.h"

/* A merge of a group's profiles is given this long (then grace). */
#define MERGE_TIME_LIMIT_NS (300ull * 1000000000ull)

/* Whose the group's profile is: the workers' owner, or root (admins
 * alone see it, and nobody reads it: user_reader_uid) when they are
 * several users'. */
static uid_t group_owner(const struct worker *ws, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (ws[i].uid != ws[0].uid)
			return 0;
	return ws[0].uid;
}

/* The workers' service when they share one, else NULL. */
static const char *group_service(const struct daemon *d, const struct worker *ws, size_t n)
{
	const char *first = api_service_name(d, &ws[0]);

	for (size_t i = 1; first && i < n; i++) {
		const char *s = api_service_name(d, &ws[i]);

		if (!s || strcmp(s, first))
			return NULL;
	}
	return first;
}

/* What starting the members did. */
struct started {
	unsigned n, refused;
	int first_status;
	char first_refusal[300];
};

/* p on w as a member of group. */
static void start_member(struct daemon *d, const struct request *rq, const struct worker *w,
			 const struct profile_request *p, int64_t group, struct started *st)
{
	struct reply rp = { .fd = -1 };
	struct profile_request member = *p;
	struct worker pinned;
	int pidfd = -1;

	member.parent = group;
	if (api_worker(d, rq, &rp, w->id, &pinned, &pidfd))
		profile_start(d, rq, &rp, &pinned, pidfd, &member);
	if (rp.status == 201) {
		st->n++;
	} else if (!st->refused++) {
		const char *why = json_string_value(json_object_get(rp.json, "error"));

		st->first_status = rp.status;
		snprintf(st->first_refusal, sizeof(st->first_refusal), "worker %s (%s): %s", w->id,
			 w->name, why ? why : "refused");
	}
	if (pidfd >= 0)
		close(pidfd);
	json_decref(rp.json);
	free(rp.body);
}

void group_start(struct daemon *d, const struct request *rq, struct reply *rp, json_t *selector,
		 const struct profile_request *p)
{
	struct schedule_selector sel;
	struct worker *ws = NULL;
	struct instance *shown = NULL;
	struct started st = { 0 };
	json_t *shown_sel = NULL;
	char why[256], msg[512], *sel_text = NULL;
	int64_t running, id = 0;
	size_t n = 0;

	if (schedule_selector_parse(selector, &sel, why, sizeof(why)) < 0) {
		reply_error(rp, 400, "selector", "%s", why);
		return;
	}
	if (schedule_matches(d, &sel, &rq->user, &ws, &n) < 0) {
		reply_error(rp, 500, NULL, "cannot list the workers in /proc (see nprofd's log)");
		return;
	}
	if (!n) {
		reply_error(rp, 404, "selector", "no worker that you may see matches the selector; "
			    "GET /api/v1/workers lists them");
		goto out;
	}
	/* The members and the group's own merge, each an instance: all of
	 * them must fit, or the profile would be of some workers only. */
	running = instances_running_count(d->db);
	if (running < 0) {
		reply_error(rp, 500, NULL, "cannot read the index (see nprofd's log)");
		goto out;
	}
	if ((uint64_t)running + n + 1 > d->cfg.max_concurrent) {
		reply_error(rp, 429, "selector", "the selector takes %zu workers: with its merge, %zu "
			    "instances beside the %lld running, more than this host runs at once "
			    "([instances] max_concurrent = %u); narrow the selector, raise it, or "
			    "try again when some end", n, n + 1, (long long)running,
			    d->cfg.max_concurrent);
		goto out;
	}
	shown_sel = schedule_selector_json(&sel);
	if (!shown_sel || !(sel_text = json_dumps(shown_sel, JSON_COMPACT | JSON_SORT_KEYS)) ||
	    instance_insert(d->db, &(struct instance){
		    .kind = "profile", .worker = "", .worker_uid = group_owner(ws, n),
		    .service = group_service(d, ws, n), .user = rq->user.name, .uid = rq->user.uid,
		    .mode = p->event->name, .duration_ns = (int64_t)p->duration_ns,
		    .interval = p->interval, .format = p->format ? p->format : "flamegraph",
		    .created_ms = now_ms(), .selector = sel_text }, &id) < 0) {
		reply_error(rp, 500, NULL, "cannot write the index (see nprofd's log)");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		start_member(d, rq, &ws[i], p, id, &st);
	if (!st.n) {
		snprintf(msg, sizeof(msg), "none of the %zu workers the selector takes could be "
			 "recorded; first, %s", n, st.first_refusal);
		if (instance_end(d->db, id, INSTANCE_FAILED, msg, now_ms(), NULL) < 0)
			log_error("group %lld stays RUNNING in the index until nprofd restarts",
				  (long long)id);
		reply_error(rp, st.first_status, "selector", "%s", msg);
		goto out;
	}
	if (st.refused)
		snprintf(msg, sizeof(msg), "recording %u of the %zu workers the selector takes; %u "
			 "could not be: first, %s", st.n, n, st.refused, st.first_refusal);
	else
		snprintf(msg, sizeof(msg), "recording the %u workers the selector takes", st.n);
	/* Members' ends merge once this is written (members >= 0); one that
	 * ended before it is looked at below. */
	pthread_mutex_lock(&d->start_lock);
	if (instance_set_message(d->db, id, msg) < 0 || instance_set_members(d->db, id, st.n) < 0)
		log_error("group %lld: its members not written to the index", (long long)id);
	pthread_mutex_unlock(&d->start_lock);
	group_member_ended(d, id);
	rp->status = 201;
	snprintf(rp->result, sizeof(rp->result), "group %lld of %u workers", (long long)id, st.n);
	if (instance_get(d->db, id, &shown) < 0)
		reply_error(rp, 500, NULL, "group %lld started; it cannot be read back from the index "
			    "(see nprofd's log)", (long long)id);
	else
		api_reply_instance(d, rp, shown, "started");
out:
	instance_free(shown);
	json_decref(shown_sel);
	free(sel_text);
	free(ws);
}

/* "[NAME pid=PID]", NAME as a root may hold it: the process chose it. */
static void member_root(const struct member *m, char *buf, size_t len)
{
	char name[sizeof(m->name)];

	snprintf(name, sizeof(name), "%s", m->name);
	for (char *c = name; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f || *c == '[' || *c == ']')
			*c = '?';
	profile_process_root_name(buf, len, name, m->pid);
}

/* The group's artifact, made for its merge (which runs as uid): its
 * file's fd, or -errno. */
static int group_artifact(struct daemon *d, const struct instance *g, uid_t uid)
{
	struct artifact a = { .instance = g->id, .worker_uid = g->worker_uid,
			      .created_ms = g->created_ms, .complete = ARTIFACT_WRITING };
	char when[40];
	int fd;

	iso_time(g->created_ms, when, sizeof(when));
	/* cpu-nginx-20261202-140500.pb.gz, as a worker's but for the pid */
	snprintf(a.name, sizeof(a.name), "%s-%.64s-%.4s%.2s%.2s-%.2s%.2s%.2s.pb.gz", g->mode,
		 g->service ? g->service : "workers", when, when + 5, when + 8, when + 11,
		 when + 14, when + 17);
	for (char *c = a.name; *c; c++)
		if (*c == '/' || *c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
			*c = '_';
	snprintf(a.format, sizeof(a.format), "pprof");
	snprintf(a.file, sizeof(a.file), "%lld.pb.gz", (long long)g->id);
	if ((fd = artifacts_create(d, a.file, uid)) < 0)
		return fd;
	if (artifact_insert(d->db, &a, NULL) < 0) {
		close(fd);
		return -EIO;
	}
	return fd;
}

/* The members' profiles of g, each under its process's root, merged
 * into g's artifact by g's own job. */
static void merge(struct daemon *d, const struct instance *g, const struct member *ms, size_t n)
{
	char *argv[] = { d->nprof, "convert", "--parts", "-", "-", "-o", "pprof", NULL };
	struct artifact *arts = NULL;
	int64_t *ids = calloc(n + 1, sizeof(*ids));
	char (*roots)[64] = calloc(n + 1, sizeof(*roots));
	const char **root_of = calloc(n + 1, sizeof(*root_of));
	uid_t uid = user_reader_uid(g->worker_uid);
	size_t m = 0, k = 0;
	int parts = -1, out = -1, r = -ENOMEM;
	const char *why = "out of memory";
	char msg[200];
	pid_t child;

	for (size_t i = 0; ids && i < n; i++)
		ids[i] = ms[i].id;
	if (!ids || !roots || !root_of || artifacts_of_instances(d->db, ids, n, &arts, &m) < 0) {
		why = "its members' profiles cannot be read from the index";
		goto failed;
	}
	/* the complete ones, each with its member's root */
	for (size_t i = 0; i < m; i++) {
		if (arts[i].complete != ARTIFACT_COMPLETE || strcmp(arts[i].format, "pprof"))
			continue;
		for (size_t j = 0; j < n; j++)
			if (ms[j].id == arts[i].instance)
				member_root(&ms[j], roots[k], sizeof(roots[k]));
		root_of[k] = roots[k];
		arts[k++] = arts[i];
	}
	if (!k) {
		snprintf(msg, sizeof(msg), "none of its members recorded a profile (GET "
			 "/api/v1/instances?parent=%lld says why of each)", (long long)g->id);
		why = msg;
		goto failed;
	}
	if ((parts = api_parts_file(d, arts, root_of, k)) < 0 ||
	    (out = group_artifact(d, g, uid)) < 0) {
		why = "cannot write the merge's files in the state directory";
		goto failed;
	}
	r = jobs_start(d->jobs, &(struct job_spec){
			       .id = g->id, .argv = argv, .uid = uid, .gid = user_primary_gid(uid),
			       .stdin_fd = parts, .stdout_fd = out, .stop_signal = SIGTERM,
			       .deadline_ns = clock_ns(CLOCK_MONOTONIC) + MERGE_TIME_LIMIT_NS },
		       &child);
	if (r < 0) {
		why = "cannot start nprof convert to merge its members' profiles";
		artifacts_settle(d, g->id, false);
		goto failed;
	}
	if (k < n)
		snprintf(msg, sizeof(msg), "the profiles of %zu of its %zu workers, a root per "
			 "process (GET /api/v1/instances?parent=%lld says why of the others)", k, n,
			 (long long)g->id);
	else
		snprintf(msg, sizeof(msg), "the profiles of its %zu workers, a root per process", n);
	if (instance_set_message(d->db, g->id, msg) < 0)
		log_error("group %lld: its message not written to the index", (long long)g->id);
	if (instance_set_child(d->db, g->id, child) < 0)
		log_error("group %lld: its merge's pid not written to the index", (long long)g->id);
	goto out;
failed:
	if (instance_end(d->db, g->id, INSTANCE_FAILED, why, now_ms(), NULL) < 0)
		log_error("group %lld: how it ended not written to the index", (long long)g->id);
	log_info("group %lld FAILED: %s", (long long)g->id, why);
out:
	if (parts >= 0)
		close(parts);
	if (out >= 0)
		close(out);
	free(arts);
	free(ids);
	free(roots);
	free(root_of);
}

void group_member_ended(struct daemon *d, int64_t group)
{
	struct instance *g = NULL;
	struct member *ms = NULL;
	size_t n = 0, ended = 0;
	bool ready = false;

	/* Claimed once (its child pid set to -1 before the merge starts),
	 * under the lock that group_start writes its members under. */
	pthread_mutex_lock(&d->start_lock);
	if (instance_get(d->db, group, &g) == 0 && g->status == INSTANCE_RUNNING &&
	    g->members >= 0 && !g->child_pid && instance_members(d->db, group, &ms, &n) == 0) {
		for (size_t i = 0; i < n; i++)
			ended += ms[i].status != INSTANCE_RUNNING;
		ready = ended == n && instance_set_child(d->db, group, -1) == 0;
	}
	pthread_mutex_unlock(&d->start_lock);
	if (ready)
		merge(d, g, ms, n);
	free(ms);
	instance_free(g);
}

unsigned group_stop(struct daemon *d, int64_t group)
{
	struct member *ms = NULL;
	size_t n = 0;
	unsigned asked = 0;

	if (instance_members(d->db, group, &ms, &n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (ms[i].status == INSTANCE_RUNNING && jobs_stop(d->jobs, ms[i].id) == 0)
			asked++;
	free(ms);
	return asked;
}
