/* api_instances: profiling instances (a timed recording in one mode)
 * and point-in-time actions (thread dump, heap snapshot, core file) —
 * one shape, one table, each a child process with a deadline. */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/units.h"
#include "daemon/api/api.h"
#include "daemon/api/instance_group.h"
#include "daemon/core/log.h"
#include "daemon/core/nouns.h"
#include "daemon/core/service_name.h"
#include "daemon/jobs/command.h"
#include "daemon/jobs/jobs.h"
#include "daemon/store/artifact_rows.h"
#include "daemon/store/artifacts.h"
#include "daemon/store/db.h"
#include "daemon/store/instances.h"
#include "output/output.h"



/* The artifacts of the n instances in list, in one query: an object
 * from instance id (text) to its artifacts as the API shows them, by
 * id. NULL when the index cannot be read. */
static json_t *artifacts_of(struct daemon *d, struct instance *const *list, size_t n)
{
	int64_t *ids = calloc(n ? n : 1, sizeof(*ids));
	struct artifact *arts = NULL;
	size_t m = 0;
	json_t *by;

	for (size_t i = 0; ids && i < n; i++)
		ids[i] = list[i]->id;
	if (!ids || artifacts_of_instances(d->db, ids, n, &arts, &m) < 0) {
		free(ids);
		return NULL;
	}
	free(ids);
	by = json_object();
	for (size_t i = 0; i < m; i++) {
		json_t *its;
		char key[24];

		snprintf(key, sizeof(key), "%lld", (long long)arts[i].instance);
		if (!(its = json_object_get(by, key)))
			json_object_set_new(by, key, its = json_array());
		json_array_append_new(its, json_pack("{sI ss ss sI sb}", "id", (json_int_t)arts[i].id,
						     "name", arts[i].name, "format", arts[i].format,
						     "size", (json_int_t)arts[i].size, "complete",
						     arts[i].complete == ARTIFACT_COMPLETE));
	}
	free(arts);
	return by;
}

/* Text the API shows: null when absent; "?" when not UTF-8 (a process's
 * command line, say, need not be). */
static json_t *text_json(const char *s)
{
	json_t *v;

	if (!s)
		return json_null();
	v = json_string(s);
	return v ? v : json_string("?");
}

/* An instance as the API shows it (docs/api.md): in, with arts what
 * artifacts_of gave for it and others. */
static json_t *instance_json(const struct instance *in, json_t *arts)
{
	char key[24], created[40];
	json_t *mine;

	snprintf(key, sizeof(key), "%lld", (long long)in->id);
	mine = json_object_get(arts, key);
	/* (each json_t made here is handed over: "o") */
	json_t *sel = in->selector ? json_loads(in->selector, 0, NULL) : NULL;

	return json_pack("{sI so so sI sI so so sI so so so ss so ss so so so so so so so so so so}",
		"id", (json_int_t)in->id,
		"kind", text_json(in->kind),
		"worker", in->selector ? json_null() : text_json(in->worker),
		"pid", (json_int_t)in->pid,
		"worker_uid", (json_int_t)in->worker_uid,
		"service", text_json(in->service),
		"user", text_json(in->user),
		"uid", (json_int_t)in->uid,
		"mode", text_json(in->mode),
		"interval", text_json(in->interval),
		"format", text_json(in->format),
		"status", instance_state_name(in->status),
		"message", text_json(in->message),
		"created", iso_time(in->created_ms, created, sizeof(created)),
		"finished", api_time_json(in->finished_ms),
		"target", text_json(in->target),
		"new_worker", text_json(in->new_worker),
		"duration", in->duration_ns >= 0 ? json_real((double)in->duration_ns / 1e9)
						  : json_null(),
		"artifacts", mine ? json_incref(mine) : json_array(),
		"schedule", in->schedule ? json_integer(in->schedule) : json_null(),
		"cpu", in->cpu_ns >= 0 ? json_real((double)in->cpu_ns / 1e9) : json_null(),
		"selector", sel ? sel : json_null(),
		"members", in->selector && in->members >= 0 ? json_integer(in->members) : json_null(),
		"parent", in->parent ? json_integer(in->parent) : json_null());
}

/* Instances as the API shows them; NULL when the index cannot be read. */
static json_t *instances_json(struct daemon *d, struct instance *const *list, size_t n)
{
	json_t *arts = artifacts_of(d, list, n), *out;

	if (!arts)
		return NULL;
	out = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(out, instance_json(list[i], arts));
	json_decref(arts);
	return out;
}

/* One instance as the API shows it; NULL when its artifacts cannot be
 * read. */
static json_t *instance_shown(struct daemon *d, const struct instance *in)
{
	struct instance *one = (struct instance *)in;
	json_t *list = instances_json(d, &one, 1);
	json_t *o = json_incref(json_array_get(list, 0));

	json_decref(list);
	return o;
}

void api_reply_instance(struct daemon *d, struct reply *rp, const struct instance *in,
			   const char *done)
{
	if (!(rp->json = instance_shown(d, in)))
		reply_error(rp, 500, NULL, "%s%sinstance %lld cannot be read back from the index "
			    "(see nprofd's log)", done ? done : "", done ? "; " : "",
			    (long long)in->id);
}

/* The instance id, visible to rq's user: its row (instance_free it), or
 * NULL after replying the error (404 for one the user may not see). */
static struct instance *find_instance(struct daemon *d, const struct request *rq,
				      struct reply *rp, const char *id_text)
{
	char *end;
	long long id = strtoll(id_text, &end, 10);
	struct instance *in = NULL;
	int r;

	if (*end || id <= 0) {
		reply_error(rp, 400, "id", "'%.32s' is not an instance id (a positive number)", id_text);
		return NULL;
	}
	r = instance_get(d->db, id, &in);
	if (r < 0 && r != -ENOENT) {
		reply_error(rp, 500, NULL, "cannot read instance %lld from the index (see nprofd's "
			    "log)", id);
		return NULL;
	}
	if (!in || !user_may_see(&rq->user, in->worker_uid)) {
		instance_free(in);
		reply_error(rp, 404, "id", "no instance %lld that you may see", id);
		return NULL;
	}
	snprintf(rp->worker, sizeof(rp->worker), "%s", in->worker);
	return in;
}


static void artifact_name(const struct launch *l, const struct worker *w, uint64_t ms,
			  char *buf, size_t len)
{
	char when[40];
	const char *what = l->mode ? l->mode : l->kind;

	iso_time(ms, when, sizeof(when));
	/* 2026-11-25T16:31:22.123Z -> 20261125-163122 */
	snprintf(buf, len, "%s-%d-%.4s%.2s%.2s-%.2s%.2s%.2s.%s", what, (int)w->pid, when,
		 when + 5, when + 8, when + 11, when + 14, when + 17, l->art_ext);
}

/* A point-in-time action is given this long (then grace) before it is ended. */
#define ACTION_TIME_LIMIT_NS (120ull * 1000000000ull)

/* state_dir/work/ID, owned by the job's user, for a command's %o. */
static int make_work_dir(struct daemon *d, int64_t id, uid_t uid, gid_t gid, char *out,
			 size_t len)
{
	char dir[PATH_MAX];

	if ((size_t)snprintf(dir, sizeof(dir), "%s/%lld", d->work_dir, (long long)id) >= sizeof(dir) ||
	    (size_t)snprintf(out, len, "%.*s/output", (int)(sizeof(dir) - 8), dir) >= len)
		return -ENAMETOOLONG;
	if (mkdir(dir, 0700) < 0 || chown(dir, uid, gid) < 0)
		return -errno;
	return 0;
}

/* An instance that could not start: FAILED with why (the request that
 * started it is answered a 500 with the cause; a row left RUNNING is
 * failed by the next start of nprofd, instances_recover). */
static void fail_instance(struct daemon *d, int64_t id, const char *why)
{
	if (instance_end(d->db, id, INSTANCE_FAILED, why, now_ms(), NULL) < 0)
		log_error("instance %lld stays RUNNING in the index until nprofd restarts: %s",
			  (long long)id, why);
}

void instance_launch(struct daemon *d, const struct request *rq, struct reply *rp,
		     const struct worker *w, int pidfd, struct launch *l)
{
	char *argv[20], **cmd_argv = NULL, pid_text[16], output[PATH_MAX] = "";
	const struct service_config *svc = api_service(d, w);
	uint64_t ms = now_ms(), deadline;
	int64_t id = 0, running, count;
	struct instance row, *started = NULL;
	struct job_spec spec;
	bool root = l->as_root || (rq->user.admin && !l->as_owner);
	uid_t uid = root ? 0 : w->uid;
	gid_t gid = root ? 0 : user_primary_gid(w->uid);
	pid_t child;
	int fd = -1, r;
	size_t n = 0;
	bool locked = true;

	pthread_mutex_lock(&d->start_lock);
	running = instance_running_on(d->db, w->id, l->kind, l->mode);
	if (running > 0) {
		reply_error(rp, 409, l->mode ? "mode" : NULL, "instance %lld (%s%s%s) is already running "
			    "on worker %s; stop it (POST /api/v1/instances/%lld/stop) or wait for it",
			    (long long)running, l->kind, l->mode ? " " : "", l->mode ? l->mode : "",
			    w->id, (long long)running);
		goto out;
	}
	/* Instances, not children: a restart waiting for its new process
	 * counts, and a slot is taken by the row before the child starts. */
	count = instances_running_count(d->db);
	if (running < 0 || count < 0) {
		reply_error(rp, 500, NULL, "cannot read the index (see nprofd's log)");
		goto out;
	}
	if (count >= (int64_t)d->cfg.max_concurrent) {
		reply_error(rp, 429, NULL, "%u instances are running, the most this host allows "
			    "([instances] max_concurrent); try again when one ends",
			    d->cfg.max_concurrent);
		goto out;
	}
	if (artifacts_full(d)) {
		reply_error(rp, 507, NULL, "the artifacts take more than [artifacts] max_bytes = %llu "
			    "bytes even after retention; delete some (DELETE /api/v1/artifacts/ID) "
			    "or raise the quota", (unsigned long long)d->cfg.max_bytes);
		goto out;
	}
	row = (struct instance){
		.kind = l->kind, .pid = w->pid, .worker_uid = w->uid,
		.service = api_service_name(d, w),
		.user = rq->user.name, .uid = rq->user.uid, .mode = l->mode,
		.duration_ns = (int64_t)l->duration_ns, .interval = l->interval, .format = l->format,
		.target = l->target, .created_ms = ms, .schedule = l->schedule,
		.parent = l->parent,
	};
	snprintf(row.worker, sizeof(row.worker), "%s", w->id);
	if (instance_insert(d->db, &row, &id) < 0) {
		reply_error(rp, 500, NULL, "cannot write the index (see nprofd's log)");
		goto out;
	}
	/* The RUNNING row holds the place: what follows (files, the child)
	 * need not keep other requests waiting. */
	pthread_mutex_unlock(&d->start_lock);
	locked = false;
	/* (only a record of where instances ran: the instance goes on without) */
	if (instance_worker_seen(d->db, w, service_name(w, svc, NULL), ms) < 0)
		log_error("instance %lld: worker %s not remembered in the index", (long long)id, w->id);
	if (l->art_format) {
		struct artifact a = { .instance = id, .worker_uid = w->uid, .created_ms = ms,
				      .complete = ARTIFACT_WRITING };

		snprintf(a.worker, sizeof(a.worker), "%s", w->id);
		artifact_name(l, w, ms, a.name, sizeof(a.name));
		snprintf(a.format, sizeof(a.format), "%s", l->art_format);
		snprintf(a.file, sizeof(a.file), "%lld.%s", (long long)id, l->art_ext);
		fd = artifacts_create(d, a.file, uid);
		if (fd < 0 || artifact_insert(d->db, &a, NULL) < 0) {
			fail_instance(d, id, "cannot create the artifact file in the state directory");
			reply_error(rp, 500, NULL, "cannot create the artifact file in the state "
				    "directory: %s", strerror(fd < 0 ? -fd : EIO));
			goto out;
		}
	}
	if (l->work_dir && (r = make_work_dir(d, id, uid, gid, output, sizeof(output))) < 0) {
		fail_instance(d, id, "cannot create its work directory in the state directory");
		reply_error(rp, 500, NULL, "cannot create a work directory in %s: %s", d->work_dir,
			    strerror(-r));
		goto out;
	}
	snprintf(pid_text, sizeof(pid_text), "%d", (int)w->pid);
	if (l->run) {
		cmd_argv = command_argv(l->run, w->pid, l->duration_ns / 1000000000ull, output);
		if (!cmd_argv) {
			fail_instance(d, id, "its command line does not split into arguments");
			reply_error(rp, 500, NULL, "the command line of %s does not split into "
				    "arguments (an unbalanced quote?)", l->mode);
			goto out;
		}
	} else {
		argv[n++] = d->nprof;
		for (size_t i = 0; i < l->nargs; i++)
			argv[n++] = (char *)(strcmp(l->args[i], "PID") ? l->args[i] : pid_text);
		argv[n] = NULL;
	}
	deadline = clock_ns(CLOCK_MONOTONIC) + d->cfg.grace_ns +
		   (l->time_limit_ns ? l->time_limit_ns : l->duration_ns ? l->duration_ns
									: ACTION_TIME_LIMIT_NS);
	spec = (struct job_spec){ .id = id, .argv = cmd_argv ? cmd_argv : argv, .uid = uid,
				  .gid = gid, .stdin_fd = -1, .stdout_fd = fd,
				  .deadline_ns = deadline, .stop_signal = SIGINT,
				  .has_target = true, .target_pidfd = pidfd };
	r = jobs_start(d->jobs, &spec, &child);
	if (r < 0) {
		fail_instance(d, id, "cannot start its process");
		reply_error(rp, 500, NULL, "cannot start %s: %s", spec.argv[0], strerror(-r));
		goto out;
	}
	/* (the child runs, and jobs.c ends it by its own record; the column
	 * is for the operator reading the index) */
	if (instance_set_child(d->db, id, child) < 0)
		log_error("instance %lld: its child %d not written to the index", (long long)id,
			  (int)child);
	rp->status = 201;
	snprintf(rp->result, sizeof(rp->result), "instance %lld", (long long)id);
	if (instance_get(d->db, id, &started) < 0)
		reply_error(rp, 500, NULL, "instance %lld started; it cannot be read back from the "
			    "index (see nprofd's log)", (long long)id);
	else
		api_reply_instance(d, rp, started, "started");
out:
	instance_free(started);
	command_argv_free(cmd_argv);
	if (fd >= 0)
		close(fd);
	if (locked)
		pthread_mutex_unlock(&d->start_lock);
}

void profile_start(struct daemon *d, const struct request *rq, struct reply *rp,
		   const struct worker *w, int pidfd, const struct profile_request *p)
{
	const struct event_def *ev = p->event;
	struct worker_mode modes[EVENT_COUNT];
	struct launch l = { .kind = "profile", .mode = ev->name, .duration_ns = p->duration_ns,
			    .interval = p->interval, .format = p->format ? p->format : "flamegraph",
			    .art_format = "pprof", .art_ext = "pb.gz", .schedule = p->schedule,
			    .parent = p->parent };
	char key[128], dur[32];

	if (!config_mode_allowed(&d->cfg, api_service(d, w), (enum event_id)(ev - event_defs),
				 key, sizeof(key))) {
		reply_error(rp, 403, "mode", "mode %s is disabled by the operator (%s in nprofd.conf)",
			    ev->name, key);
		return;
	}
	worker_modes(w, api_perf_ok(d, &rq->user), api_sched_ok(d, &rq->user), d->hw_ok, modes);
	if (!modes[ev - event_defs].available) {
		reply_error(rp, 400, "mode", "mode %s cannot run on worker %s: %s", ev->name, w->id,
			    modes[ev - event_defs].why_not);
		return;
	}
	snprintf(dur, sizeof(dur), "%llums", (unsigned long long)(p->duration_ns / 1000000));
	l.args[l.nargs++] = "record";
	l.args[l.nargs++] = "-e";
	l.args[l.nargs++] = ev->name;
	l.args[l.nargs++] = "-d";
	l.args[l.nargs++] = dur;
	if (p->interval) {
		l.args[l.nargs++] = "-i";
		l.args[l.nargs++] = p->interval;
	}
	if (p->threads)
		l.args[l.nargs++] = "-t";
	if (p->note) {
		l.args[l.nargs++] = "--note";
		l.args[l.nargs++] = p->note;
	}
	l.args[l.nargs++] = "-o";
	l.args[l.nargs++] = "pprof";
	l.args[l.nargs++] = "PID";
	instance_launch(d, rq, rp, w, pidfd, &l);
}

/* ---- POST /api/v1/instances ------------------------------------------- */

static const char *json_text(json_t *body, const char *key, struct reply *rp, bool *bad)
{
	json_t *v = json_object_get(body, key);

	if (!v || json_is_null(v))
		return NULL;
	if (!json_is_string(v)) {
		reply_error(rp, 400, key, "%s must be a string", key);
		*bad = true;
		return NULL;
	}
	return json_string_value(v);
}

/* "5s", "2m", "500ms", or a number of seconds. */
static bool parse_duration(json_t *v, const struct daemon *d, struct reply *rp, uint64_t *ret)
{
	char buf[64], max[32];

	if (!v || json_is_null(v)) {
		*ret = d->cfg.duration_default_ns;
		return true;
	}
	if (json_is_number(v)) {
		double s = json_number_value(v);

		if (!(s > 0 && s <= 1e6)) {
			reply_error(rp, 400, "duration", "duration must be above 0 and at most %s",
				    units_format_ns(d->cfg.duration_max_ns, max, sizeof(max)));
			return false;
		}
		*ret = (uint64_t)(s * 1e9);
	} else if (!json_is_string(v) || units_parse_duration_ns(json_string_value(v),
								  1000000000ull, ret) < 0 || !*ret) {
		reply_error(rp, 400, "duration", "duration: not a duration; use seconds (30) or a "
			    "unit (500ms, 5s, 2m)");
		return false;
	}
	if (*ret > d->cfg.duration_max_ns) {
		snprintf(buf, sizeof(buf), "%s", units_format_ns(*ret, max, sizeof(max)));
		reply_error(rp, 400, "duration", "duration %s is longer than this host allows "
			    "([instances] duration_max = %s)", buf,
			    units_format_ns(d->cfg.duration_max_ns, max, sizeof(max)));
		return false;
	}
	return true;
}

/* The fields a body may have. */
static const char *const BODY_KEYS[] = { "worker", "selector", "mode", "duration", "interval",
					  "format", "threads", NULL };

void api_instance_create(struct daemon *d, struct request *rq, struct reply *rp)
{
	json_error_t jerr;
	json_t *body = json_loadb(rq->body, rq->body_len, JSON_REJECT_DUPLICATES, &jerr);
	const char *worker_id, *mode, *interval, *format;
	json_t *selector;
	const struct event_def *ev;
	enum output_format of;
	struct worker w;
	bool bad = false, threads = false;
	int pidfd = -1;
	uint64_t iv, duration_ns;

	if (!json_is_object(body)) {
		reply_error(rp, 400, NULL, "the body must be a JSON object such as {\"worker\": ID, "
			    "\"mode\": \"cpu\", \"duration\": \"30s\"}%s%s", body ? "" : ": ",
			    body ? "" : jerr.text);
		goto out;
	}
	if (!api_known_keys(body, BODY_KEYS, rp))
		goto out;
	worker_id = json_text(body, "worker", rp, &bad);
	mode = json_text(body, "mode", rp, &bad);
	interval = json_text(body, "interval", rp, &bad);
	format = json_text(body, "format", rp, &bad);
	if (bad)
		goto out;
	if (json_object_get(body, "threads")) {
		if (!json_is_boolean(json_object_get(body, "threads"))) {
			reply_error(rp, 400, "threads", "threads must be true or false");
			goto out;
		}
		threads = json_is_true(json_object_get(body, "threads"));
	}
	selector = json_object_get(body, "selector");
	if (!worker_id == !selector) {
		reply_error(rp, 400, "worker", "%s", worker_id ? "give worker or selector, not both"
			    : "worker is required: a worker id from GET /api/v1/workers (or a "
			      "selector: {\"service\": NAME} records every worker it takes)");
		goto out;
	}
	if (!mode)
		mode = "cpu";
	if (!(ev = event_find(mode))) {
		char names[256];

		reply_error(rp, 400, "mode", "mode '%.32s' is not one nprof has; use one of: %s", mode,
			    event_names(EVENT_IN_ENGINE | EVENT_IN_AGENT, names, sizeof(names)));
		goto out;
	}
	if (!parse_duration(json_object_get(body, "duration"), d, rp, &duration_ns))
		goto out;
	if (interval && (ev->interval_kind == EVENT_INTERVAL_TIME
			 ? units_parse_duration_ns(interval, 1, &iv) : units_parse_count(interval, &iv)) < 0) {
		reply_error(rp, 400, "interval", "interval '%.32s' is not %s", interval,
			    ev->interval_kind == EVENT_INTERVAL_TIME ? "a duration (10ms, 1000us)"
								      : "a count or size (512k, 1m)");
		goto out;
	}
	if (format && strcmp(format, "pprof") && output_format_parse(format, &of) < 0) {
		reply_error(rp, 400, "format", "format '%.32s' is not one nprof writes; use one of: %s",
			    format, output_format_names());
		goto out;
	}
	if (selector) {
		group_start(d, rq, rp, selector, &(struct profile_request){
			.event = ev, .duration_ns = duration_ns, .interval = interval,
			.format = format, .threads = threads });
		goto out;
	}
	if (!api_worker(d, rq, rp, worker_id, &w, &pidfd))
		goto out;
	profile_start(d, rq, rp, &w, pidfd, &(struct profile_request){
		.event = ev, .duration_ns = duration_ns, .interval = interval, .format = format,
		.threads = threads });
out:
	if (pidfd >= 0)
		close(pidfd);
	json_decref(body);
}

/* ---- GET and stop -------------------------------------------------------- */

void api_instances_list(struct daemon *d, struct request *rq, struct reply *rp)
{
	const char *worker = rq->query(rq, "worker"), *status = rq->query(rq, "status"),
		   *limit_text = rq->query(rq, "limit"), *schedule_text = rq->query(rq, "schedule"),
		   *parent_text = rq->query(rq, "parent");
	long limit = limit_text ? atol(limit_text) : 100;
	uint64_t generation = db_generation(d->db);
	struct instance **list;
	json_t *shown;
	char *end = NULL;
	long long schedule = schedule_text ? strtoll(schedule_text, &end, 10) : 0, parent = 0;
	size_t n;

	if (status && instance_state_parse(status) < 0) {
		reply_error(rp, 400, "status", "status=%.32s: use %s", status, instance_state_list());
		return;
	}
	if (limit < 1 || limit > 10000) {
		reply_error(rp, 400, "limit", "limit must be 1 to 10000");
		return;
	}
	if (schedule_text && (*end || end == schedule_text || schedule <= 0)) {
		reply_error(rp, 400, "schedule", "schedule=%.32s: use a schedule's id (GET "
			    "/api/v1/schedules)", schedule_text);
		return;
	}
	if (parent_text && !strcmp(parent_text, "none")) {
		parent = -1;
	} else if (parent_text) {
		parent = strtoll(parent_text, &end, 10);
		if (*end || end == parent_text || parent <= 0) {
			reply_error(rp, 400, "parent", "parent=%.32s: use a group's instance id, or "
				    "none for no group's members", parent_text);
			return;
		}
	}
	if (api_cached(d, rq, rp, generation))
		return;
	if (instances_list(d->db, &(struct instance_filter){ .worker = worker, .status = status,
							      .schedule = schedule, .parent = parent,
							      .all_users = rq->user.admin,
							      .uid = rq->user.uid, .limit = limit },
			   &list, &n) < 0) {
		reply_error(rp, 500, NULL, "cannot read the index (see nprofd's log)");
		return;
	}
	shown = instances_json(d, list, n);
	instances_free(list, n);
	if (!shown) {
		reply_error(rp, 500, NULL, "cannot read the index (see nprofd's log)");
		return;
	}
	rp->json = json_pack("{so}", "instances", shown);
	api_keep(d, rq, rp, generation);
}

/* How long a GET of one instance may wait for it to end (?wait=). */
#define WAIT_MAX_S 60

/* GET /api/v1/instances/ID[?wait=SECONDS]: the instance; with wait, once
 * it is no longer RUNNING, or after SECONDS (at most WAIT_MAX_S) if it
 * still is: a client waiting for the end learns it as it happens rather
 * than at its next poll. */
void api_instance_get(struct daemon *d, struct request *rq, struct reply *rp)
{
	const char *seg = rq->param[0];
	const char *wait_text = rq->query(rq, "wait");
	uint64_t until = clock_ns(CLOCK_MONOTONIC);
	struct instance *in;

	if (wait_text) {
		char *end;
		long secs = strtol(wait_text, &end, 10);

		if (end == wait_text || *end || secs < 0 || secs > WAIT_MAX_S) {
			reply_error(rp, 400, "wait", "wait=%.32s: use whole seconds from 0 to %d",
				    wait_text, WAIT_MAX_S);
			return;
		}
		until += (uint64_t)secs * 1000000000ull;
	}
	for (;;) {
		uint64_t generation = db_generation(d->db);

		in = find_instance(d, rq, rp, seg);
		if (!in)
			return;
		if (in->status != INSTANCE_RUNNING ||
		    clock_ns(CLOCK_MONOTONIC) >= until ||
		    !db_wait_change(d->db, generation, until))
			break;
		instance_free(in);
	}
	api_reply_instance(d, rp, in, NULL);
	instance_free(in);
}

/* POST /api/v1/instances/ID/stop */
void api_instance_stop(struct daemon *d, struct request *rq, struct reply *rp)
{
	const char *seg = rq->param[0];
	struct instance *in = find_instance(d, rq, rp, seg);

	if (!in)
		return;
	/* a group before its merge: its members stop, and what they
	 * recorded is merged */
	if (in->status == INSTANCE_RUNNING && in->selector && in->child_pid == 0 &&
	    group_stop(d, in->id) > 0) {
		rp->status = 202;
		snprintf(rp->result, sizeof(rp->result), "stop asked of its members");
		api_reply_instance(d, rp, in, "stop asked");
	} else if (in->status != INSTANCE_RUNNING || jobs_stop(d->jobs, in->id) < 0) {
		reply_error(rp, 409, "id", "instance %s is not running (it is %s)", seg,
			    instance_state_name(in->status));
	} else {
		rp->status = 202;
		snprintf(rp->result, sizeof(rp->result), "stop asked");
		api_reply_instance(d, rp, in, "stop asked");
	}
	instance_free(in);
}

/* ---- how instances end ---------------------------------------------------- */

/* The last non-empty line of what nprof said, without its "nprof: ". */
static void last_line(const char *text, char *buf, size_t len)
{
	const char *end = text + strlen(text), *start;

	while (end > text && (end[-1] == '\n' || end[-1] == ' '))
		end--;
	start = end;
	while (start > text && start[-1] != '\n')
		start--;
	if (!strncmp(start, "nprof: ", 7))
		start += 7;
	snprintf(buf, len, "%.*s", (int)(end - start), start);
}

/* The agent's CPU inside the target, as the note nprof printed from
 * the agent's profile says it ("nprof: note: agent_cpu=12.345ms: ..."),
 * in ns; 0 when it said none. Written by the target's own agent: a
 * number past a day of CPU is not believed. */
#define AGENT_NOTE "nprof: note: agent_cpu="
static uint64_t agent_cpu_said(const char *text)
{
	const char *at = NULL;
	char *end;
	double ms;

	/* the last such line (one the program printed is not at a line's start) */
	for (const char *p = text; (p = strstr(p, AGENT_NOTE)); p++)
		if (p == text || p[-1] == '\n')
			at = p;
	if (!at)
		return 0;
	ms = strtod(at + strlen(AGENT_NOTE), &end);
	if (strncmp(end, "ms", 2) || !(ms >= 0 && ms < 86400e3))
		return 0;
	return (uint64_t)(ms * 1e6);
}

void instances_job_done(void *ctx, const struct job_end *end)
{
	struct daemon *d = ctx;
	struct instance *in = NULL;
	char said[512], msg[600];
	enum instance_state status;
	bool ok = WIFEXITED(end->status) && WEXITSTATUS(end->status) == 0;

	last_line(end->stderr_text, said, sizeof(said));
	if (end->timed_out) {
		status = INSTANCE_FAILED;
		snprintf(msg, sizeof(msg), "did not end within its time limit plus [instances] grace; "
			 "ended%s%s", said[0] ? ": " : "", said);
	} else if (ok) {
		status = end->stopped ? INSTANCE_STOPPED : INSTANCE_FINISHED;
		snprintf(msg, sizeof(msg), "%s", said[0] ? said : end->stopped ? "stopped early; "
			 "what was recorded until then is kept" : "");
	} else {
		status = INSTANCE_FAILED;
		if (WIFSIGNALED(end->status))
			snprintf(msg, sizeof(msg), "nprof was killed by signal %d%s%s",
				 WTERMSIG(end->status), said[0] ? ": " : "", said);
		else
			snprintf(msg, sizeof(msg), "%s", said[0] ? said : "nprof failed without a word");
	}
	/* what the recording cost: nprof's process, and the agent inside
	 * the target when it recorded through it */
	if (instance_set_cpu(d->db, end->id, end->cpu_ns + agent_cpu_said(end->stderr_text)) < 0)
		log_error("instance %lld: the CPU it used not written to the index",
			  (long long)end->id);
	artifacts_collect_work(d, end->id, end->uid);
	artifacts_settle(d, end->id, ok && !end->timed_out);
	/* A restart ends when the new process is there, not when the
	 * command that asked for it returns. */
	if (ok && !end->timed_out && instances_restart_done(d, end->id)) {
		if (instance_set_message(d->db, end->id, "the supervisor restarts it; waiting for "
					 "the new process") < 0)
			log_error("instance %lld: its message not written to the index",
				  (long long)end->id);
		return;
	}
	/* No one asked: the log is the edge. A row left RUNNING is failed
	 * by the next start of nprofd (instances_recover). */
	/* (nothing said: the message it had stays, a group's) */
	if (instance_end(d->db, end->id, status, msg[0] ? msg : NULL, now_ms(), NULL) < 0)
		log_error("instance %lld: how it ended not written to the index",
			  (long long)end->id);
	log_info("instance %lld %s%s%s", (long long)end->id, instance_state_name(status),
		 msg[0] ? ": " : "", msg);
	if (instance_get(d->db, end->id, &in) == 0 && in->parent)
		group_member_ended(d, in->parent);
	instance_free(in);
	artifacts_retain(d);
}

void instances_recover(struct daemon *d)
{
	int64_t *ids = NULL;
	size_t n = 0, failed = 0;

	if (instances_running_ids(d->db, &ids, &n) < 0) {
		log_error("cannot read which instances ran when nprofd stopped");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		artifacts_settle(d, ids[i], false);
		if (instance_end(d->db, ids[i], INSTANCE_FAILED, "nprofd restarted while it ran",
				 now_ms(), NULL) < 0)
			failed++;
	}
	if (n)
		log_info("%zu instances that were running when nprofd stopped are marked FAILED%s",
			 n - failed, failed ? "; the index refused the others" : "");
	free(ids);
}
