/* api_actions: what is done to a worker at a point in time — a thread
 * dump, a heap snapshot, a core file, a restart through its supervisor,
 * an operator's command — each an instance like a profile; and heap
 * profiling switched on, off or asked about, answered at once. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/units.h"
#include "daemon/api/api.h"
#include "daemon/auth/owner.h"
#include "daemon/core/log.h"
#include "daemon/core/nouns.h"
#include "daemon/jobs/jobs.h"
#include "daemon/store/instances.h"

#define ACTION_TIME_LIMIT_NS (120ull * 1000000000ull)
#define QUICK_TIME_LIMIT_NS (20ull * 1000000000ull)
/* After a restart command succeeded, how long the new process may take
 * to appear. */
#define RESTART_WAIT_NS (30ull * 1000000000ull)

/* Runs argv as uid to its end (systemctl show, say): its stdout into
 * out (len bytes), or -errno / -EIO when it failed. target: the pidfd of
 * the worker it acts on (checked right before its exec), or -1. */
static int run_capture(char *const *argv, uid_t uid, gid_t gid, int target, char *out,
		       size_t len, char *err, size_t errlen)
{
	int fd = memfd_create("nprofd-out", MFD_CLOEXEC), r;
	struct job_spec s = { .argv = argv, .uid = uid, .gid = gid, .stdin_fd = -1, .stdout_fd = fd,
			      .deadline_ns = clock_ns(CLOCK_MONOTONIC) + QUICK_TIME_LIMIT_NS,
			      .has_target = target >= 0, .target_pidfd = target };
	ssize_t n;

	if (fd < 0)
		return -errno;
	r = jobs_run(&s, err, errlen);
	n = pread(fd, out, len - 1, 0);
	out[n > 0 ? n : 0] = '\0';
	close(fd);
	if (r < 0)
		return r;
	return WIFEXITED(r) && WEXITSTATUS(r) == 0 ? 0 : -EIO;
}

static bool systemd_runs(void)
{
	return access("/run/systemd/system", F_OK) == 0;
}

static pid_t unit_main_pid(const char *unit)
{
	char *argv[] = { "systemctl", "show", "-p", "MainPID", "--value", (char *)unit, NULL };
	char out[64], err[256];

	return run_capture(argv, 0, 0, -1, out, sizeof(out), err, sizeof(err)) == 0
		       ? (pid_t)atoi(out) : 0;
}

/* ---- restart --------------------------------------------------------------- */

struct restart_wait {
	struct daemon *d;
	int64_t id;
	char old[WORKER_ID_MAX];
	char method[16];	/* "systemd" or "command" */
	char target[256];	/* the unit, or the [service] section */
	uid_t uid;		/* old's owner */
};

static const struct service_config *service_named(const struct daemon *d, const char *name)
{
	for (size_t i = 0; i < d->cfg.n_services; i++)
		if (!strcmp(d->cfg.services[i].name, name))
			return &d->cfg.services[i];
	return NULL;
}

/* The process that took old's place: the main process pid_file names
 * now, where it names one; else the first process of the service that
 * started after old did, as old's owner (another user may start one that
 * a pattern takes, meanwhile), running the service's program where its
 * match names one. */
static bool find_successor(struct restart_wait *rw, struct worker *ret)
{
	const struct service_config *svc = service_named(rw->d, rw->target);
	struct worker *ws = NULL;
	struct stat prog;
	size_t n = 0;
	pid_t old_pid, pid;
	uint64_t old_start;
	bool found = false, by_file;
	int r;

	if (worker_id_parse(rw->old, &old_pid, &old_start) < 0)
		return false;
	if (!strcmp(rw->method, "systemd")) {
		pid = unit_main_pid(rw->target);
		if (pid <= 0 || pid == old_pid)
			return false;
		pthread_mutex_lock(&rw->d->scanner_lock);
		r = worker_read(rw->d->scanner, "/proc", pid, ret);
		pthread_mutex_unlock(&rw->d->scanner_lock);
		return r == 0;
	}
	if (svc && svc->pid_file[0]) {
		if (owner_pid_file(svc->pid_file, &pid) < 0 || pid == old_pid)
			return false;
		pthread_mutex_lock(&rw->d->scanner_lock);
		r = worker_read(rw->d->scanner, "/proc", pid, ret);
		pthread_mutex_unlock(&rw->d->scanner_lock);
		return r == 0 && ret->start_ticks > old_start;
	}
	by_file = svc && svc->match.kind == SELECT_EXE && !config_selector_forgeable(&svc->match) &&
		  stat(svc->match.value, &prog) == 0;
	pthread_mutex_lock(&rw->d->scanner_lock);
	worker_scan(rw->d->scanner, "/proc", 65536, &ws, &n);
	pthread_mutex_unlock(&rw->d->scanner_lock);
	for (size_t i = 0; i < n; i++) {
		if (!svc || api_service(rw->d, &ws[i]) != svc || ws[i].start_ticks <= old_start ||
		    ws[i].pid == old_pid || ws[i].uid != rw->uid ||
		    (by_file && owner_runs_file("/proc", ws[i].pid, &prog) != 1))
			continue;
		/* The first one started is the service's own process, not a
		 * child it started since. */
		if (!found || ws[i].start_ticks < ret->start_ticks)
			*ret = ws[i];
		found = true;
	}
	free(ws);
	return found;
}

static void *restart_wait_thread(void *arg)
{
	struct restart_wait *rw = arg;
	uint64_t end = clock_ns(CLOCK_MONOTONIC) + RESTART_WAIT_NS;
	struct worker w;
	char msg[512];
	const char *state;
	bool found;

	while (!(found = find_successor(rw, &w)) && clock_ns(CLOCK_MONOTONIC) < end)
		usleep(100000);
	if (found)
		snprintf(msg, sizeof(msg), "restarted: the new worker is %s (pid %d)", w.id, (int)w.pid);
	else
		snprintf(msg, sizeof(msg), "the restart command succeeded, but no new process of %s "
			 "appeared within %llu s", rw->target,
			 (unsigned long long)(RESTART_WAIT_NS / 1000000000ull));
	state = instance_state_name(found ? INSTANCE_FINISHED : INSTANCE_FAILED);
	/* No one waits for this thread: the log is the edge. */
	if (instance_end(rw->d->db, rw->id, found ? INSTANCE_FINISHED : INSTANCE_FAILED, msg,
			 now_ms(), found ? w.id : NULL) < 0)
		log_error("instance %lld: how the restart ended not written to the index",
			  (long long)rw->id);
	log_info("instance %lld %s: %s", (long long)rw->id, state, msg);
	free(rw);
	return NULL;
}

bool instances_restart_done(struct daemon *d, int64_t id)
{
	struct instance *in = NULL;
	struct restart_wait *rw = instance_get(d->db, id, &in) == 0 && !strcmp(in->kind, "restart")
				  ? calloc(1, sizeof(*rw)) : NULL;
	pthread_attr_t attr;
	pthread_t t;
	bool started = false;

	if (rw) {
		rw->d = d;
		rw->id = id;
		snprintf(rw->old, sizeof(rw->old), "%s", in->worker);
		snprintf(rw->method, sizeof(rw->method), "%s", in->mode ?: "");
		snprintf(rw->target, sizeof(rw->target), "%s", in->target ?: "");
		rw->uid = in->worker_uid;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		started = pthread_create(&t, &attr, restart_wait_thread, rw) == 0;
		pthread_attr_destroy(&attr);
		if (!started)
			free(rw);
	}
	instance_free(in);
	return started;
}

/* ---- who may have root restart a service ----------------------------------------- */

/* Replies 403 with "restart refused: " and the rest, one line. */
static bool __attribute__((format(printf, 2, 3))) refuse(struct reply *rp, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	reply_error(rp, 403, NULL, "restart refused: %s", msg);
	return false;
}

/* The owner of svc's main process, as its pid_file names it, is rq's
 * user; else the reply. */
static bool main_process_owned(struct daemon *d, const struct request *rq, struct reply *rp,
			       const struct service_config *svc)
{
	char why[PATH_MAX + 256], who[96];
	struct worker main;
	pid_t pid;
	int r;

	if ((r = owner_pid_file(svc->pid_file, &pid)) < 0)
		return refuse(rp, "[service %s]'s pid_file %s names no process (%s); ask an admin, "
			      "or start the service", svc->name, svc->pid_file,
			      r == -EBADMSG ? "it holds no pid" : strerror(-r));
	pthread_mutex_lock(&d->scanner_lock);
	r = worker_read(d->scanner, "/proc", pid, &main);
	pthread_mutex_unlock(&d->scanner_lock);
	if (r < 0)
		return refuse(rp, "[service %s]'s pid_file %s names pid %d, which does not run; ask "
			      "an admin, or start the service", svc->name, svc->pid_file, (int)pid);
	/* What only root and the process's owner can write names it. */
	if ((r = owner_path_held(svc->pid_file, main.uid, NULL, NULL, why, sizeof(why))) < 0)
		return refuse(rp, "[service %s]'s pid_file %s cannot say which process is its main "
			      "one, since %s; ask an admin, or have the operator keep it where only "
			      "root and the service's user can write", svc->name, svc->pid_file,
			      r == -EPERM ? why : strerror(-r));
	if (main.uid != rq->user.uid)
		return refuse(rp, "the main process of [service %s], pid %d (named by %s), is %s's, "
			      "not yours; ask them or an admin", svc->name, (int)pid, svc->pid_file,
			      owner_user_name(main.uid, who, sizeof(who)));
	return true;
}

/* Whether worker x's program makes it one of svc's (an exe: match) in
 * earnest: the file it runs is the one at the path it shows, and nobody
 * but root can change it or the directories above it -- or, where the
 * match names one exact program, nobody but root and x's owner. A copy
 * at a path of a user's own that a pattern takes, or a file a mount
 * namespace of theirs shows at the path, makes nobody's process the
 * service's. 0, or -errno with why. */
int api_service_program_held(const struct service_config *svc, const struct worker *x,
			     char *why, size_t whylen)
{
	/* One exact program: its user's own may be. A pattern: root's only. */
	bool exact = !config_selector_forgeable(&svc->match);

	return owner_program_held(x->pid, x->exe, exact ? x->uid : 0, why, whylen);
}

/* Whether rq's user may have w's service svc restarted through its
 * restart_command, which runs as root: an admin may; otherwise only the
 * owner of the service's main process, where pid_file names it, or of
 * every process of the service found by what no other user can fake --
 * user:, cgroup:, or exe: where the program each process runs is held
 * by root (or, for one exact program, by its owner) -- the asker's
 * worker among them. A process that merely shows a path a pattern takes,
 * or a unit name (any user's own systemd gives one), is nobody's grant,
 * and no other user's process of that kind stands in the way either.
 * false with the reply (403). */
static bool restart_allowed(struct daemon *d, const struct request *rq, struct reply *rp,
			    const struct service_config *svc, const struct worker *w)
{
	const struct selector *m = &svc->match;
	char why[PATH_MAX + 256], who[96];
	struct worker *ws = NULL;
	size_t n = 0;
	bool ok = true;
	int r;

	if (rq->user.admin)
		return true;
	if (svc->pid_file[0])
		return main_process_owned(d, rq, rp, svc);
	if (m->kind == SELECT_UNIT)
		return refuse(rp, "[service %s] runs its restart_command as root, and its match "
			      "unit:%s is a unit name any user's own systemd can give a process of "
			      "theirs, so it says nothing of whose the service is; ask an admin, or "
			      "have the operator name the service's main process with pid_file in "
			      "[service %s] (nprofd.conf(5))", svc->name, m->value, svc->name);
	if (m->kind == SELECT_EXE && (r = api_service_program_held(svc, w, why, sizeof(why))) < 0)
		return refuse(rp, "[service %s] runs its restart_command as root, and worker %s is "
			      "in it by its program's path (exe:%s) alone: %s; a program another "
			      "user could have put there says nothing of whose the service is; ask "
			      "an admin, or have the operator install the program where only root "
			      "can change it, or name the service's main process with pid_file",
			      svc->name, w->id, m->value, r == -EPERM ? why : strerror(-r));
	/* Every process of the service is the asker's (a cgroup: subtree, a
	 * user:, exe: by the program it really runs). */
	pthread_mutex_lock(&d->scanner_lock);
	r = worker_scan(d->scanner, "/proc", 65536, &ws, &n);
	pthread_mutex_unlock(&d->scanner_lock);
	if (r < 0)
		return refuse(rp, "cannot read /proc (%s) to see whose [service %s]'s processes are",
			      strerror(-r), svc->name);
	for (size_t i = 0; i < n && ok; i++) {
		if (ws[i].uid == rq->user.uid || api_service(d, &ws[i]) != svc ||
		    (m->kind == SELECT_EXE &&
		     api_service_program_held(svc, &ws[i], why, sizeof(why)) < 0))
			continue;
		ok = refuse(rp, "pid %d of [service %s] is %s's, not yours, and only the owner of "
			    "every process of a service (or of its main process, which pid_file "
			    "names) may have it restarted; ask an admin", (int)ws[i].pid, svc->name,
			    owner_user_name(ws[i].uid, who, sizeof(who)));
	}
	free(ws);
	return ok;
}

static void restart(struct daemon *d, const struct request *rq, struct reply *rp,
		    const struct worker *w, int pidfd)
{
	const struct service_config *svc = api_service(d, w);
	char unit_cmd[512];
	struct launch l = { .kind = "restart", .as_root = true, .time_limit_ns = QUICK_TIME_LIMIT_NS * 3 };

	if (svc && svc->restart[0]) {
		/* The operator's word for this service comes first. */
		if (!restart_allowed(d, rq, rp, svc, w))
			return;
		l.mode = "command";
		l.target = svc->name;
		l.run = svc->restart;
	} else if (systemd_runs() && w->unit[0] && strstr(w->unit, ".service") &&
		   unit_main_pid(w->unit) == w->pid) {
		/* systemd says the worker is the unit's main process, and
		 * api_worker that it is the asker's. */
		snprintf(unit_cmd, sizeof(unit_cmd), "systemctl restart '%s'", w->unit);
		l.mode = "systemd";
		l.target = w->unit;
		l.run = unit_cmd;
	} else {
		reply_error(rp, 409, NULL, "worker %s has no supervisor nprofd can restart it through: it "
			    "is not the main process of a systemd unit%s, and no [service] section "
			    "with restart_command selects it; add one (nprofd.conf(5))", w->id,
			    systemd_runs() ? "" : " (systemd does not run here)");
		return;
	}
	instance_launch(d, rq, rp, w, pidfd, &l);
}

/* ---- operator commands ------------------------------------------------------ */

static const struct command_config *find_command(const struct daemon *d, const char *name)
{
	for (size_t i = 0; i < d->cfg.n_commands; i++)
		if (!strcmp(d->cfg.commands[i].name, name))
			return &d->cfg.commands[i];
	return NULL;
}

static void command(struct daemon *d, const struct request *rq, struct reply *rp,
		    const struct worker *w, int pidfd, const struct command_config *c)
{
	json_error_t jerr;
	json_t *body = rq->body_len ? json_loadb(rq->body, rq->body_len, 0, &jerr) : json_object();
	json_t *dur = json_object_get(body, "duration");
	struct launch l = { .kind = "command", .mode = c->name, .run = c->run,
			    .time_limit_ns = c->timeout_ns, .work_dir = c->keep_output,
			    .duration_ns = 10000000000ull };

	if (!json_is_object(body)) {
		reply_error(rp, 400, NULL, "the body must be empty or a JSON object {\"duration\": \"10s\"}");
		goto out;
	}
	if (dur && (!json_is_string(dur) ||
		    units_parse_duration_ns(json_string_value(dur), 1000000000ull, &l.duration_ns) < 0 ||
		    l.duration_ns < 1000000000ull || l.duration_ns > c->timeout_ns)) {
		reply_error(rp, 400, "duration", "duration must be from 1s to the command's timeout "
			    "(%llu s)", (unsigned long long)(c->timeout_ns / 1000000000ull));
		goto out;
	}
	if (c->keep_stdout) {
		l.art_format = "text";
		l.art_ext = "txt";
	}
	/* As the worker's owner, as Storm's worker.profiler.command runs
	 * through its setuid launcher: an operator's command gets no more
	 * than the owner has, whoever asked. */
	l.as_owner = true;
	instance_launch(d, rq, rp, w, pidfd, &l);
out:
	json_decref(body);
}

void api_commands(struct daemon *d, struct request *rq, struct reply *rp)
{
	json_t *list = json_array();

	for (size_t i = 0; i < d->cfg.n_commands; i++) {
		const struct command_config *c = &d->cfg.commands[i];

		json_array_append_new(list, json_pack("{ss ss sf ss}", "name", c->name, "description",
			c->description, "timeout", (double)c->timeout_ns / 1e9, "output",
			c->keep_output ? "file" : c->keep_stdout ? "stdout" : "none"));
	}
	rp->json = json_pack("{so sb}", "commands", list, "enabled",
			     d->cfg.allow.action[ACTION_COMMANDS] > 0);
}

/* ---- heap profiling on, off, status ------------------------------------------- */

static void heap_switch(struct daemon *d, const struct request *rq, struct reply *rp,
			const struct worker *w, int pidfd)
{
	json_error_t jerr;
	json_t *body = json_loadb(rq->body, rq->body_len, 0, &jerr);
	const char *action = json_string_value(json_object_get(body, "action"));
	const char *interval = json_string_value(json_object_get(body, "interval"));
	char pid_text[16], out[4096], err[4096];
	char *argv[] = { d->nprof, "heap", pid_text, (char *)action, NULL, NULL, NULL };
	uint64_t iv;
	int r;

	if (!json_is_object(body) || !action ||
	    (strcmp(action, "enable") && strcmp(action, "disable") && strcmp(action, "status"))) {
		reply_error(rp, 400, "action", "send {\"action\": \"enable\" | \"disable\" | \"status\"} "
			    "(and for enable, \"interval\": \"512k\")");
		goto out;
	}
	if (interval && (strcmp(action, "enable") || units_parse_count(interval, &iv) < 0)) {
		reply_error(rp, 400, "interval", "interval goes with enable, as a size: 512k, 1m");
		goto out;
	}
	if (!w->agent) {
		reply_error(rp, 400, NULL, "heap profiling needs nprof's agent in worker %s: start it "
			    "with NPROF_START=1 LD_PRELOAD=libnprof.so", w->id);
		goto out;
	}
	snprintf(pid_text, sizeof(pid_text), "%d", (int)w->pid);
	if (interval) {
		argv[4] = "-i";
		argv[5] = (char *)interval;
	}
	r = run_capture(argv, rq->user.admin ? 0 : w->uid, rq->user.admin ? 0 : rq->user.gid, pidfd,
			out, sizeof(out), err, sizeof(err));
	if (r < 0) {
		char *nl;

		while ((nl = strrchr(err, '\n')) && !nl[1])
			*nl = '\0';
		reply_error(rp, 409, "action", "%s", err[0] ? (strncmp(err, "nprof: ", 7) ? err : err + 7)
							    : "nprof heap failed");
		goto out;
	}
	rp->json = json_pack("{ss ss ss}", "worker", w->id, "action", action, "output", out);
	snprintf(rp->result, sizeof(rp->result), "heap %s", action);
out:
	json_decref(body);
}

/* ---- the agent in, and out ---------------------------------------------------------- */

/* nprof attach or detach PID, as the worker's owner (an admin as root):
 * the owner may ptrace their own process where the host allows it, and
 * the reply names what stands in the way where it does not. */
static void agent_switch(struct daemon *d, const struct request *rq, struct reply *rp,
			 const struct worker *w, int pidfd, const char *verb)
{
	char pid_text[16], out[4096], err[4096], *nl;
	char *argv[] = { d->nprof, (char *)verb, pid_text, NULL };
	int r;

	snprintf(pid_text, sizeof(pid_text), "%d", (int)w->pid);
	r = run_capture(argv, rq->user.admin ? 0 : w->uid, rq->user.admin ? 0 : rq->user.gid, pidfd,
			out, sizeof(out), err, sizeof(err));
	while ((nl = strrchr(err, '\n')) && !nl[1])
		*nl = '\0';
	if (r < 0) {
		reply_error(rp, 409, "action", "%s", err[0] ? (strncmp(err, "nprof: ", 7) ? err : err + 7)
							    : "nprof attach failed");
		return;
	}
	/* A worker's agent column comes from the scan: the next one sees it. */
	api_workers_changed(d);
	rp->json = json_pack("{ss ss ss}", "worker", w->id, "action", verb, "output",
			     strncmp(err, "nprof: ", 7) ? err : err + 7);
	snprintf(rp->result, sizeof(rp->result), "%s", verb);
}

/* ---- POST /api/v1/workers/ID/ACTION ---------------------------------------------- */

/* action: of stacks, heapdump, coredump, restart, heap, attach, detach,
 * commands/NAME. */
static void act(struct daemon *d, const struct request *rq, struct reply *rp,
		const char *worker_id, const char *action)
{
	struct launch l = { .time_limit_ns = ACTION_TIME_LIMIT_NS };
	const struct action_def *a = action_find(action);
	const struct command_config *c = NULL;
	enum action_kind kind;
	struct worker w;
	char key[128];
	int pidfd;

	if (a) {
		kind = a->kind;
		if (a->art_format) {
			l.kind = a->instance_kind;
			l.art_format = a->art_format;
			l.art_ext = a->art_ext;
			l.format = a->view_format;
			while (l.nargs < sizeof(a->args) / sizeof(a->args[0]) && a->args[l.nargs]) {
				l.args[l.nargs] = a->args[l.nargs];
				l.nargs++;
			}
		}
	} else if (!strncmp(action, "commands/", 9)) {
		kind = ACTION_COMMANDS;
		if (!(c = find_command(d, action + 9))) {
			reply_error(rp, 404, "command", "no command '%.64s' in nprofd.conf; GET "
				    "/api/v1/commands lists them", action + 9);
			return;
		}
	} else {
		reply_error(rp, 404, NULL, "no action %.64s; use %s", action, action_list());
		return;
	}
	if (!api_worker(d, rq, rp, worker_id, &w, &pidfd))
		return;
	if (!config_action_allowed(&d->cfg, api_service(d, &w), kind, key, sizeof(key)))
		reply_error(rp, 403, NULL, "%s is disabled by the operator (%s in nprofd.conf)",
			    action, key);
	else if (kind == ACTION_RESTART)
		restart(d, rq, rp, &w, pidfd);
	else if (kind == ACTION_HEAP_PROFILING)
		heap_switch(d, rq, rp, &w, pidfd);
	else if (kind == ACTION_ATTACH)
		agent_switch(d, rq, rp, &w, pidfd, action);
	else if (kind == ACTION_COMMANDS)
		command(d, rq, rp, &w, pidfd, c);
	else if (a->needs_agent && !w.agent)
		reply_error(rp, 400, NULL, "%s needs nprof's agent in worker %s: start it with "
			    "NPROF_START=1 LD_PRELOAD=libnprof.so, or attach it", a->name, w.id);
	else
		instance_launch(d, rq, rp, &w, pidfd, &l);
	close(pidfd);
}

/* POST /api/v1/workers/{id}/{action} */
void api_worker_act(struct daemon *d, struct request *rq, struct reply *rp)
{
	act(d, rq, rp, rq->param[0], rq->param[1]);
}

/* POST /api/v1/workers/{id}/commands/{name} */
void api_worker_command(struct daemon *d, struct request *rq, struct reply *rp)
{
	char action[ROUTE_PARAM_MAX + 16];

	snprintf(action, sizeof(action), "commands/%s", rq->param[1]);
	act(d, rq, rp, rq->param[0], action);
}
