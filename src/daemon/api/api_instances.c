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
#include "daemon/core/log.h"
#include "daemon/core/nouns.h"
#include "daemon/jobs/command.h"
#include "daemon/jobs/jobs.h"
#include "daemon/store/artifacts.h"
#include "daemon/store/db.h"
#include "output/output.h"



/* The artifacts of the instances whose rows are in rows, in one query:
 * an object from instance id (text) to its artifacts, by id. */
static json_t *artifacts_of(struct daemon *d, json_t *rows)
{
	json_t *ids = json_array(), *by = json_object(), *arts;
	char *ids_text;

	for (size_t i = 0; i < json_array_size(rows); i++)
		json_array_append(ids, json_object_get(json_array_get(rows, i), "id"));
	ids_text = json_dumps(ids, JSON_COMPACT);
	arts = ids_text ? db_query(d->db, "SELECT instance, id, name, format, size, complete FROM "
				   "artifacts WHERE instance IN (SELECT value FROM json_each(?)) "
				   "ORDER BY id", "t", ids_text) : NULL;
	for (size_t i = 0; i < json_array_size(arts); i++) {
		json_t *a = json_array_get(arts, i), *list;
		char key[24];

		snprintf(key, sizeof(key), "%lld",
			 (long long)json_integer_value(json_object_get(a, "instance")));
		if (!(list = json_object_get(by, key)))
			json_object_set_new(by, key, list = json_array());
		json_object_del(a, "instance");
		json_object_set_new(a, "complete", json_boolean(json_integer_value(
			json_object_get(a, "complete")) == ARTIFACT_COMPLETE));
		json_array_append(list, a);
	}
	json_decref(arts);
	free(ids_text);
	json_decref(ids);
	return by;
}

/* An instance as the API shows it: row is its row in the index, arts
 * what artifacts_of gave for it and others. */
static json_t *instance_json(json_t *row, json_t *arts)
{
	json_t *o = json_deep_copy(row), *mine;
	char when[40];
	json_t *created = json_object_get(row, "created"), *finished = json_object_get(row, "finished");
	json_t *dur = json_object_get(row, "duration_ns");

	snprintf(when, sizeof(when), "%lld",
		 (long long)json_integer_value(json_object_get(row, "id")));
	mine = json_object_get(arts, when);
	json_object_set_new(o, "created", json_string(iso_time((uint64_t)json_integer_value(created),
							       when, sizeof(when))));
	json_object_set_new(o, "finished", json_is_integer(finished)
		? json_string(iso_time((uint64_t)json_integer_value(finished), when, sizeof(when)))
		: json_null());
	json_object_set_new(o, "duration", json_is_integer(dur)
		? json_real((double)json_integer_value(dur) / 1e9) : json_null());
	json_object_del(o, "duration_ns");
	json_object_del(o, "child_pid");
	json_object_set_new(o, "artifacts", mine ? json_incref(mine) : json_array());
	return o;
}

/* The rows of the instance index as the API shows them. */
static json_t *instances_json(struct daemon *d, json_t *rows)
{
	json_t *arts = artifacts_of(d, rows), *list = json_array();

	for (size_t i = 0; i < json_array_size(rows); i++)
		json_array_append_new(list, instance_json(json_array_get(rows, i), arts));
	json_decref(arts);
	return list;
}

/* One row of the instance index as the API shows it. */
static json_t *instance_shown(struct daemon *d, json_t *row)
{
	json_t *rows = json_pack("[O]", row), *list = instances_json(d, rows);
	json_t *o = json_incref(json_array_get(list, 0));

	json_decref(list);
	json_decref(rows);
	return o ? o : json_object();
}

/* Whether an instance's row says it runs. */
static bool row_running(json_t *row)
{
	return instance_state_parse(json_string_value(json_object_get(row, "status")) ?: "") ==
	       INSTANCE_RUNNING;
}

/* The instance id, visible to rq's user: its row (decref it), or NULL
 * after replying 404. */
static json_t *find_instance(struct daemon *d, const struct request *rq, struct reply *rp,
			     const char *id_text)
{
	char *end;
	long long id = strtoll(id_text, &end, 10);
	json_t *rows, *row;

	if (*end || id <= 0) {
		reply_error(rp, 400, "id", "'%.32s' is not an instance id (a positive number)", id_text);
		return NULL;
	}
	rows = db_query(d->db, "SELECT * FROM instances WHERE id = ?", "i", (int64_t)id);
	row = json_incref(json_array_get(rows, 0));
	json_decref(rows);
	if (!row || !user_may_see(&rq->user,
				  (uid_t)json_integer_value(json_object_get(row, "worker_uid")))) {
		json_decref(row);
		reply_error(rp, 404, "id", "no instance %lld that you may see", id);
		return NULL;
	}
	snprintf(rp->worker, sizeof(rp->worker), "%s",
		 json_string_value(json_object_get(row, "worker")));
	return row;
}

json_t *instance_by_id(struct daemon *d, int64_t id)
{
	json_t *rows = db_query(d->db, "SELECT * FROM instances WHERE id = ?", "i", id);
	json_t *o = json_array_size(rows) ? instance_shown(d, json_array_get(rows, 0)) : json_object();

	json_decref(rows);
	return o;
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

/* The primary group of uid (nobody's when it has no account). */
static gid_t owner_gid(uid_t uid)
{
	struct passwd pw, *p = NULL;
	char buf[4096];

	return getpwuid_r(uid, &pw, buf, sizeof(buf), &p) == 0 && p ? p->pw_gid : 65534;
}

static void fail_instance(struct daemon *d, int64_t id, const char *why)
{
	db_exec(d->db, NULL, "UPDATE instances SET status = 'FAILED', finished = ?, message = ? "
		"WHERE id = ?", "iti", (int64_t)now_ms(), why, id);
}

void instance_launch(struct daemon *d, const struct request *rq, struct reply *rp,
		     const struct worker *w, int pidfd, struct launch *l)
{
	char *argv[20], **cmd_argv = NULL, pid_text[16], name[128], file[64], output[PATH_MAX] = "";
	const struct service_config *svc = api_service(d, w);
	uint64_t ms = now_ms(), deadline;
	int64_t id = 0, art = 0, running;
	struct job_spec spec;
	bool root = l->as_root || (rq->user.admin && !l->as_owner);
	uid_t uid = root ? 0 : w->uid;
	gid_t gid = root ? 0 : owner_gid(w->uid);
	pid_t child;
	int fd = -1, r;
	size_t n = 0;
	bool locked = true;

	pthread_mutex_lock(&d->start_lock);
	running = db_query_int(d->db, 0, "SELECT id FROM instances WHERE worker = ? AND kind = ? "
			       "AND IFNULL(mode, '') = ? AND status = 'RUNNING'", "ttt", w->id, l->kind,
			       l->mode ? l->mode : "");
	if (running) {
		reply_error(rp, 409, l->mode ? "mode" : NULL, "instance %lld (%s%s%s) is already running "
			    "on worker %s; stop it (POST /api/v1/instances/%lld/stop) or wait for it",
			    (long long)running, l->kind, l->mode ? " " : "", l->mode ? l->mode : "",
			    w->id, (long long)running);
		goto out;
	}
	/* Instances, not children: a restart waiting for its new process
	 * counts, and a slot is taken by the row before the child starts. */
	if (db_query_int(d->db, 0, "SELECT COUNT(*) FROM instances WHERE status = 'RUNNING'", "") >=
	    (int64_t)d->cfg.max_concurrent) {
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
	if (db_exec(d->db, &id, "INSERT INTO instances(kind, worker, pid, worker_uid, service, user, "
		    "uid, mode, duration_ns, interval, format, target, status, message, created) "
		    "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,'RUNNING','',?)", "ttiuttutittti", l->kind, w->id,
		    (int64_t)w->pid, (unsigned)w->uid,
		    svc ? svc->name : w->unit[0] ? w->unit : w->cgroup, rq->user.name,
		    (unsigned)rq->user.uid, l->mode, (int64_t)l->duration_ns, l->interval,
		    l->format, l->target, (int64_t)ms) < 0) {
		reply_error(rp, 500, NULL, "cannot write the index (see nprofd's log)");
		goto out;
	}
	/* The RUNNING row holds the place: what follows (files, the child)
	 * need not keep other requests waiting. */
	pthread_mutex_unlock(&d->start_lock);
	locked = false;
	db_exec(d->db, NULL, "INSERT INTO workers(id, pid, name, uid, user, service, first_seen, "
		"last_seen) VALUES(?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET last_seen = "
		"excluded.last_seen", "titutt" "ii", w->id, (int64_t)w->pid, w->name,
		(unsigned)w->uid, w->user, svc ? svc->name : w->unit, (int64_t)ms, (int64_t)ms);
	if (l->art_format) {
		artifact_name(l, w, ms, name, sizeof(name));
		snprintf(file, sizeof(file), "%lld.%s", (long long)id, l->art_ext);
		fd = artifacts_create(d, file, uid);
		if (fd < 0 || db_exec(d->db, &art, "INSERT INTO artifacts(instance, worker, worker_uid, "
				      "name, format, file, created) VALUES(?,?,?,?,?,?,?)", "ituttti",
				      id, w->id, (unsigned)w->uid, name, l->art_format, file,
				      (int64_t)ms) < 0) {
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
	db_exec(d->db, NULL, "UPDATE instances SET child_pid = ? WHERE id = ?", "ii",
		(int64_t)child, id);
	rp->status = 201;
	rp->json = instance_by_id(d, id);
	snprintf(rp->result, sizeof(rp->result), "instance %lld", (long long)id);
out:
	command_argv_free(cmd_argv);
	if (fd >= 0)
		close(fd);
	if (locked)
		pthread_mutex_unlock(&d->start_lock);
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

static bool known_body_keys(json_t *body, struct reply *rp)
{
	static const char *const KEYS[] = { "worker", "mode", "duration", "interval", "format",
					    "threads", NULL };
	const char *key;
	json_t *v;

	json_object_foreach(body, key, v) {
		size_t i = 0;

		while (KEYS[i] && strcmp(KEYS[i], key))
			i++;
		if (!KEYS[i]) {
			reply_error(rp, 400, key, "unknown field '%.64s'; use worker, mode, duration, "
				    "interval, format, threads", key);
			return false;
		}
	}
	return true;
}

void api_instance_create(struct daemon *d, struct request *rq, struct reply *rp)
{
	json_error_t jerr;
	json_t *body = json_loadb(rq->body, rq->body_len, JSON_REJECT_DUPLICATES, &jerr);
	const char *worker_id, *mode, *interval, *format;
	const struct event_def *ev;
	struct worker_mode modes[EVENT_COUNT];
	struct launch l = { .kind = "profile", .art_format = "pprof", .art_ext = "pb.gz" };
	enum output_format of;
	char key[128], dur[32];
	struct worker w;
	bool bad = false, threads = false;
	int pidfd = -1;
	uint64_t iv;

	if (!json_is_object(body)) {
		reply_error(rp, 400, NULL, "the body must be a JSON object such as {\"worker\": ID, "
			    "\"mode\": \"cpu\", \"duration\": \"30s\"}%s%s", body ? "" : ": ",
			    body ? "" : jerr.text);
		goto out;
	}
	if (!known_body_keys(body, rp))
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
	if (!worker_id) {
		reply_error(rp, 400, "worker", "worker is required: a worker id from GET /api/v1/workers");
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
	if (!parse_duration(json_object_get(body, "duration"), d, rp, &l.duration_ns))
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
	if (!api_worker(d, rq, rp, worker_id, &w, &pidfd))
		goto out;
	if (!config_mode_allowed(&d->cfg, api_service(d, &w), (enum event_id)(ev - event_defs),
				 key, sizeof(key))) {
		reply_error(rp, 403, "mode", "mode %s is disabled by the operator (%s in nprofd.conf)",
			    mode, key);
		goto out;
	}
	worker_modes(&w, api_perf_ok(d, &rq->user), api_sched_ok(d, &rq->user), d->hw_ok, modes);
	if (!modes[ev - event_defs].available) {
		reply_error(rp, 400, "mode", "mode %s cannot run on worker %s: %s", mode, w.id,
			    modes[ev - event_defs].why_not);
		goto out;
	}
	snprintf(dur, sizeof(dur), "%llums", (unsigned long long)(l.duration_ns / 1000000));
	l.mode = ev->name;
	l.interval = interval;
	l.format = format ? format : "flamegraph";
	l.args[l.nargs++] = "record";
	l.args[l.nargs++] = "-e";
	l.args[l.nargs++] = ev->name;
	l.args[l.nargs++] = "-d";
	l.args[l.nargs++] = dur;
	if (interval) {
		l.args[l.nargs++] = "-i";
		l.args[l.nargs++] = interval;
	}
	if (threads)
		l.args[l.nargs++] = "-t";
	l.args[l.nargs++] = "-o";
	l.args[l.nargs++] = "pprof";
	l.args[l.nargs++] = "PID";
	instance_launch(d, rq, rp, &w, pidfd, &l);
out:
	if (pidfd >= 0)
		close(pidfd);
	json_decref(body);
}

/* ---- GET and stop -------------------------------------------------------- */

void api_instances_list(struct daemon *d, struct request *rq, struct reply *rp)
{
	const char *worker = rq->query(rq, "worker"), *status = rq->query(rq, "status"),
		   *limit_text = rq->query(rq, "limit");
	long limit = limit_text ? atol(limit_text) : 100;
	uint64_t generation = db_generation(d->db);
	json_t *rows, *list;

	if (status && instance_state_parse(status) < 0) {
		reply_error(rp, 400, "status", "status=%.32s: use %s", status, instance_state_list());
		return;
	}
	if (limit < 1 || limit > 10000) {
		reply_error(rp, 400, "limit", "limit must be 1 to 10000");
		return;
	}
	if (api_cached(d, rq, rp, generation))
		return;
	rows = db_query(d->db, "SELECT * FROM instances WHERE (? IS NULL OR worker = ?) AND "
			"(? IS NULL OR status = ?) AND (? OR worker_uid = ?) ORDER BY id DESC LIMIT ?",
			"ttttiui", worker, worker, status, status, (int64_t)rq->user.admin,
			(unsigned)rq->user.uid, (int64_t)limit);
	list = instances_json(d, rows);
	json_decref(rows);
	rp->json = json_pack("{so}", "instances", list);
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
	json_t *row;

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

		row = find_instance(d, rq, rp, seg);
		if (!row)
			return;
		if (!row_running(row) ||
		    clock_ns(CLOCK_MONOTONIC) >= until ||
		    !db_wait_change(d->db, generation, until))
			break;
		json_decref(row);
	}
	rp->json = instance_shown(d, row);
	json_decref(row);
}

/* POST /api/v1/instances/ID/stop */
void api_instance_stop(struct daemon *d, struct request *rq, struct reply *rp)
{
	const char *seg = rq->param[0];
	json_t *row = find_instance(d, rq, rp, seg);

	if (!row)
		return;
	if (!row_running(row) ||
	    jobs_stop(d->jobs, json_integer_value(json_object_get(row, "id"))) < 0) {
		reply_error(rp, 409, "id", "instance %s is not running (it is %s)", seg,
			    json_string_value(json_object_get(row, "status")));
	} else {
		rp->status = 202;
		rp->json = instance_shown(d, row);
		snprintf(rp->result, sizeof(rp->result), "stop asked");
	}
	json_decref(row);
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

void instances_job_done(void *ctx, const struct job_end *end)
{
	struct daemon *d = ctx;
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
	artifacts_collect_work(d, end->id, end->uid);
	artifacts_settle(d, end->id, ok && !end->timed_out);
	/* A restart ends when the new process is there, not when the
	 * command that asked for it returns. */
	if (ok && !end->timed_out && instances_restart_done(d, end->id)) {
		db_exec(d->db, NULL, "UPDATE instances SET message = ? WHERE id = ?", "ti",
			"the supervisor restarts it; waiting for the new process", end->id);
		return;
	}
	db_exec(d->db, NULL, "UPDATE instances SET status = ?, message = ?, finished = ? WHERE id = ?",
		"ttii", instance_state_name(status), msg, (int64_t)now_ms(), end->id);
	log_info("instance %lld %s%s%s", (long long)end->id, instance_state_name(status),
		 msg[0] ? ": " : "", msg);
	artifacts_retain(d);
}

void instances_recover(struct daemon *d)
{
	json_t *rows = db_query(d->db, "SELECT id FROM instances WHERE status = 'RUNNING'", "");

	for (size_t i = 0; i < json_array_size(rows); i++) {
		int64_t id = json_integer_value(json_object_get(json_array_get(rows, i), "id"));

		artifacts_settle(d, id, false);
		db_exec(d->db, NULL, "UPDATE instances SET status = 'FAILED', finished = ?, "
			"message = 'nprofd restarted while it ran' WHERE id = ?", "ii",
			(int64_t)now_ms(), id);
	}
	if (json_array_size(rows))
		log_info("%zu instances that were running when nprofd stopped are marked FAILED",
			 json_array_size(rows));
	json_decref(rows);
}
