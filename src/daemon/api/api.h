/* api: the handlers of /api/v1 (docs/api.md), one file per resource —
 * api_workers.c workers, api_actions.c point-in-time actions, api_instances.c
 * profiling instances, api_schedules.c continuous profiling (run by
 * schedule_runner.c), api_profiles.c a service's recordings merged,
 * api_artifacts.c the files they produced,
 * api_tokens.c API tokens and the audit log, api_session.c signing in,
 * api_host.c and api_cluster.c this host and the others — and what
 * they share (api.c). route.c's table names which handler serves which method
 * and path; a handler finds the path's {parameters} in rq->param. */
#ifndef NPROF_DAEMON_API_H
#define NPROF_DAEMON_API_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon/api/route.h"
#include "daemon/core/daemon.h"
#include "daemon/core/wall_time.h" /* every handler dates what it writes */

/* Whether path is "PREFIX/SEG" or "PREFIX/SEG/SUFFIX" (suffix NULL: the
 * former); SEG (one path segment, at most len - 1 bytes) into seg. (The
 * table matches requests; this is for callers that test a path.) */
bool api_path(const char *path, const char *prefix, const char *suffix, char *seg, size_t len);

/* The worker named id, pinned (its pidfd into *ret_pidfd; close it) and
 * visible to rq's user. false when it replied an error: 400 for a
 * malformed id, 410 when the process is gone, 404 when there is no such
 * worker or it belongs to someone else (the two look the same). */
bool api_worker(struct daemon *d, const struct request *rq, struct reply *rp, const char *id,
		struct worker *ret, int *ret_pidfd);

/* The service section of w, or NULL. */
const struct service_config *api_service(const struct daemon *d, const struct worker *w);

/* The service w is part of, as core/service_name.c decides it with
 * w's [service] section. */
const char *api_service_name(const struct daemon *d, const struct worker *w);

/* Whether worker x, in svc by an exe: match, runs a program that only
 * root (or, where the match names one exact program, x's owner) can
 * change: then it is svc's in earnest, for a restart run as root
 * (api_actions.c). 0, or -errno with the reason in why. */
int api_service_program_held(const struct service_config *svc, const struct worker *x,
			     char *why, size_t whylen);

/* Whether rq's user may run perf events here (root's probe, and for
 * others kernel.perf_event_paranoid <= 2). */
bool api_perf_ok(const struct daemon *d, const struct user *u);
/* Whether u's instances may open the scheduler's tracepoint: an admin's
 * run as root, and this host has it. */
bool api_sched_ok(const struct daemon *d, const struct user *u);

/* A list rendered for a request like rq (the same user, path and query)
 * at version: into rp, and true. Else false, and the caller builds
 * rp->json and passes it to api_keep. version: db_generation for what
 * the index holds, the scan's number for workers. */
bool api_cached(struct daemon *d, const struct request *rq, struct reply *rp, uint64_t version);
void api_keep(struct daemon *d, const struct request *rq, struct reply *rp, uint64_t version);

/* What one instance runs, filled by the POST handlers: nprof with args,
 * or an operator's command line. */
struct launch {
	const char *kind;		/* profile, stacks, heapdump, coredump, restart, command */
	const char *mode;		/* a profile's event, a command's name; else NULL */
	uint64_t duration_ns;		/* a profile's duration, a command's %d */
	uint64_t time_limit_ns;		/* ended past it (plus grace); 0: duration_ns */
	const char *interval, *format;
	const char *art_format;		/* what its stdout holds; NULL: stdout is not kept */
	const char *art_ext;
	const char *args[16];		/* nprof's arguments; "PID" stands for the pid */
	size_t nargs;
	const char *run;		/* or a command line (%p %d %o %%), split on blanks */
	const char *target;		/* restart: the unit or [service] it goes through */
	bool as_root;			/* restart: root, whoever asked */
	bool as_owner;			/* commands: the worker's owner, whoever asked */
	bool work_dir;			/* %o: a private directory's file; what it holds is kept */
	int64_t schedule;		/* the schedule starting it; 0: on demand */
	int64_t parent;			/* the group it is a member of; 0: none */
};

/* Checks the limits and starts l on w: 201 with the instance, or the
 * error (409 one of a kind per worker, 429 max_concurrent, 507 quota).
 * pidfd: w pinned (api_worker's); the child runs only if w still runs
 * right before its exec (struct job_spec's target). */
void instance_launch(struct daemon *d, const struct request *rq, struct reply *rp,
		     const struct worker *w, int pidfd, struct launch *l);

/* rp answers with in as the API shows it (status already set), or a
 * 500 saying what was done (done: NULL when nothing) and that it cannot
 * be read back. */
struct instance;
void api_reply_instance(struct daemon *d, struct reply *rp, const struct instance *in,
			const char *done);

/* A profile to record (POST /api/v1/instances, or a schedule's period). */
struct profile_request {
	const struct event_def *event;
	uint64_t duration_ns;
	const char *interval, *format;	/* NULL: the event's, flamegraph */
	bool threads;			/* a root per thread */
	int64_t schedule;		/* 0: on demand */
	int64_t parent;			/* the group it is a member of; 0: none */
	const char *note;		/* a note in the profile (nprof record --note); NULL */
};

/* Checks that p's mode is allowed (403) and can run on w (400), then
 * instance_launch: 201 with the instance, or the error. */
void profile_start(struct daemon *d, const struct request *rq, struct reply *rp,
		   const struct worker *w, int pidfd, const struct profile_request *p);

/* A time the API shows: ISO 8601 UTC text, or null for 0 (not yet,
 * never). */
json_t *api_time_json(uint64_t ms);

/* Whether every key of the JSON object body is one of keys (NULL
 * ended): else false after a 400 naming it and listing those. */
bool api_known_keys(json_t *body, const char *const *keys, struct reply *rp);

/* What api_artifacts.c and api_profiles.c share (api_artifacts.c). */
struct artifact;
/* The stored file of a, opened read-only: its fd, or -errno. */
int api_open_stored(struct daemon *d, const struct artifact *a);
/* nprof with argv run as owner (in as its standard input, extra as its
 * fd 3 unless -1): what it wrote, as a new unlinked file; -1 after
 * replying the error, which what names. */
int api_run_nprof(struct daemon *d, char **argv, uid_t owner, int in, int extra,
		  const char *what, struct reply *rp);
/* As api_run_nprof, but what it writes is sent as it comes: the read end of a
 * pipe, with rp's stream callbacks set; -1 after replying the error,
 * which what names. */
int api_run_nprof_streamed(struct daemon *d, char **argv, uid_t owner, int in, int extra,
			   const char *what, struct reply *rp);
/* Sends fd (owned) as a file in format, named base plus the format's
 * extension; shown in the browser (sandboxed) when inl says so. */
void api_reply_file(struct reply *rp, int fd, const char *format, const char *base,
		    const char *inl);
/* The stored files of arts, each after its length, its roots (roots[i],
 * tab-separated root names; roots or roots[i] NULL: none) and a newline
 * (what nprof convert --parts reads), in a new unlinked file: its fd at
 * its start, or -errno. A file gone since arts was read is left out. */
int api_parts_file(struct daemon *d, const struct artifact *arts, const char *const *roots,
		   size_t n);
/* One part of such a file, appended to out: len bytes of buf, or all of
 * fd when buf is NULL, under root (NULL: none). 0, or -errno. */
int api_parts_append(int out, const char *root, int fd, const char *buf, size_t len);

/* inline=1|0|true|false, or absent: else false after a 400. */
bool api_inline_valid(const char *inl, struct reply *rp);

/* A worker changed in a way the last scan of /proc missed (its agent
 * loaded or detached): the next request scans again. */
void api_workers_changed(struct daemon *d);

/* At exit: what the API keeps between requests. */
void api_release(struct daemon *d);

/* ---- the handlers of route.c's table (route_fn) ---- */

/* api_workers.c: GET /api/v1/workers, /api/v1/workers/{id}; api.c: GET /api/v1/whoami */
void api_workers_list(struct daemon *d, struct request *rq, struct reply *rp);
void api_worker_get(struct daemon *d, struct request *rq, struct reply *rp);
void api_whoami(struct daemon *d, struct request *rq, struct reply *rp);
void api_meta(struct daemon *d, struct request *rq, struct reply *rp);
/* api_actions.c: POST /api/v1/workers/{id}/{action} and
 * /api/v1/workers/{id}/commands/{name}; GET /api/v1/commands */
void api_worker_act(struct daemon *d, struct request *rq, struct reply *rp);
void api_worker_command(struct daemon *d, struct request *rq, struct reply *rp);
void api_commands(struct daemon *d, struct request *rq, struct reply *rp);
/* api_schedules.c: /api/v1/schedules, /api/v1/schedules/{id} */
void api_schedules_list(struct daemon *d, struct request *rq, struct reply *rp);
void api_schedule_create(struct daemon *d, struct request *rq, struct reply *rp);
void api_schedule_get(struct daemon *d, struct request *rq, struct reply *rp);
void api_schedule_update(struct daemon *d, struct request *rq, struct reply *rp);
void api_schedule_delete(struct daemon *d, struct request *rq, struct reply *rp);
/* nprofd.conf's [schedule NAME] sections into the index, at start,
 * before the schedules run: each new one created, each changed one
 * updated in place (its id, so its history, kept), each no longer
 * declared removed. Their user is SCHEDULE_DECLARED_BY, with root's
 * authority; PATCH and DELETE refuse them (409). 0, or -errno with one
 * line in err. */
#define SCHEDULE_DECLARED_BY "nprofd.conf"
int schedules_declare(struct daemon *d, char *err, size_t errlen);
/* api_profiles.c: GET /api/v1/profiles (a service's, merged) and
 * /api/v1/profiles/series (their samples over time) */
void api_profiles(struct daemon *d, struct request *rq, struct reply *rp);
void api_profiles_series(struct daemon *d, struct request *rq, struct reply *rp);
/* and /api/v1/profiles/diff (two ranges of them compared) */
void api_profiles_diff(struct daemon *d, struct request *rq, struct reply *rp);
/* api_instances.c: /api/v1/instances, /api/v1/instances/{id}[/stop] */
void api_instances_list(struct daemon *d, struct request *rq, struct reply *rp);
void api_instance_create(struct daemon *d, struct request *rq, struct reply *rp);
void api_instance_get(struct daemon *d, struct request *rq, struct reply *rp);
void api_instance_stop(struct daemon *d, struct request *rq, struct reply *rp);
/* api_artifacts.c: /api/v1/artifacts, /api/v1/artifacts/{id}, and
 * GET /api/v1/diff?before=ID&after=ID[&format=flamegraph|flat|collapsed]:
 * two profile artifacts compared by nprof diff, run as their owner. */
void api_artifacts_list(struct daemon *d, struct request *rq, struct reply *rp);
void api_artifact_get(struct daemon *d, struct request *rq, struct reply *rp);
void api_artifact_delete(struct daemon *d, struct request *rq, struct reply *rp);
void api_diff(struct daemon *d, struct request *rq, struct reply *rp);
/* api_tokens.c: /api/v1/tokens, /api/v1/tokens/{id}, /api/v1/audit */
void api_token_create(struct daemon *d, struct request *rq, struct reply *rp);
void api_tokens_list(struct daemon *d, struct request *rq, struct reply *rp);
void api_token_revoke(struct daemon *d, struct request *rq, struct reply *rp);
void api_audit(struct daemon *d, struct request *rq, struct reply *rp);
/* api_session.c: POST /api/v1/session, the sign-in (ROUTE_PUBLIC):
 * before anyone is known (rq->user.via NULL) it checks the password with
 * PAM (failures limited per name and address, per address, and at the
 * door for rq->peer, who failed: signin_limit.h; rq->addr is the
 * client's address) and makes a session (its cookie Secure with
 * rq->tls); rq->user then names who tried, for the audit log. A user
 * the door knew already has nothing to sign in to (400). GET: the
 * session's user and CSRF token; DELETE: signing out. */
void api_signin(struct daemon *d, struct request *rq, struct reply *rp);
void api_session_get(struct daemon *d, struct request *rq, struct reply *rp);
void api_session_end(struct daemon *d, struct request *rq, struct reply *rp);
/* api_host.c: GET /api/v1/host: the host's name, kernel, CPUs, and what
 * its perf, ptrace and agent settings allow the user. */
void api_host(struct daemon *d, struct request *rq, struct reply *rp);
/* api_cluster.c: GET /api/v1/hosts: the hosts registered in etcd, or
 * this one alone. */
void api_hosts(struct daemon *d, struct request *rq, struct reply *rp);

/* ---- several hosts (api_cluster.c), as route_dispatch asks ---- */

/* A list route's ?host=NAME|* (ROUTE_FANOUT): the list of another host,
 * or of every host (in batches: batch=N, after=NAME), asked of their
 * daemons for rq's user, each item with its host; this host's from
 * local, the route's handler. */
void api_cluster_list(struct daemon *d, struct request *rq, struct reply *rp,
		      const char *host, route_fn *local);
/* Whether host names this daemon. */
bool api_cluster_is_self(struct daemon *d, const char *host);
/* This host's name: its name in the cluster, else the host name (buf,
 * len bytes, holds the latter). */
const char *api_cluster_self(struct daemon *d, char *buf, size_t len);
/* Any other route's ?host=NAME of another host (ROUTE_FORWARD): passed
 * to that host's daemon, signed for rq's user, and its reply passed
 * back as it came. */
void api_cluster_forward(struct daemon *d, const struct request *rq, struct reply *rp,
			 const char *host);
/* One other host's answer to api_cluster_gather. */
struct gathered {
	const char *name, *url, *pin;	/* into the registry's list */
	long status;			/* its HTTP status; 0 when none came */
	char *body;			/* what it sent (a file, or JSON), or NULL */
	size_t len;
	char error[512];		/* why no reply, or its error, when not 200 */
};
/* rq (as ROUTE_GATHER's ?host=*) asked of every other host registered:
 * its method and path, its query but host, with set_keys[i]=
 * set_values[i] in place of what it says of them (at most
 * GATHER_SET_MAX), body: at most fanout at once, each within
 * forward_timeout and [cluster] max_reply, signed for rq's user. A
 * GET's reply may be a file of any type. Their answers into *ret (free
 * with api_gathered_free), *ret_hosts the registry they point into; 0,
 * or -1 after replying the error. Outside a cluster: none. */
#define GATHER_SET_MAX 4
int api_cluster_gather(struct daemon *d, const struct request *rq, struct reply *rp,
		       const char *const *set_keys, const char *const *set_values, size_t nset,
		       const char *body, size_t body_len, struct gathered **ret, size_t *ret_n,
		       json_t **ret_hosts);
void api_gathered_free(struct gathered *g, size_t n, json_t *hosts);
/* A profile artifact id of another host for rq's user (a comparison of
 * two hosts' profiles): its record as that host describes it (a new
 * reference), and *ret_fd the read end of a pipe its stored file flows
 * into; NULL after replying the error, naming query argument key. */
json_t *api_cluster_artifact(struct daemon *d, const struct request *rq, struct reply *rp,
			     const char *host, const char *id, const char *key, int *ret_fd);

/* Instances that were running when nprofd last stopped: FAILED, their
 * partial files kept when they hold something, removed otherwise. */
void instances_recover(struct daemon *d);

/* A restart's command succeeded: waits (on a thread of its own) for the
 * worker's successor, then ends the instance. false if it could not. */
bool instances_restart_done(struct daemon *d, int64_t id);

/* The jobs' done callback (ctx: the daemon). */
struct job_end;
void instances_job_done(void *ctx, const struct job_end *end);

#endif
