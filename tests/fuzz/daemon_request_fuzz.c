/* daemon_request_fuzz: nprofd's API (api_handle), the code every local
 * user and every token holder reaches with a request of their making,
 * run against a private daemon: its own state directory and index,
 * seeded with rows the ids can hit (instances, artifacts whose files
 * exist, tokens), and the fuzzer's own process as the one real worker.
 *
 * The configuration switches every action on, with a [service] that
 * restarts the fuzzer's own process by a command and two [command]s, so
 * that each kind of launch is reached.
 *
 * The input: byte 0 picks the method (GET POST DELETE PUT) and whether
 * [instances] max_concurrent is 0 or 8; byte 1 the user (uid 0, 1000 or
 * 65534; admin or not; by "socket" or "token"); then
 * "PATH\nQUERY\nBODY", QUERY as k=v&k=v. "$W" anywhere stands for the
 * fuzzer's worker id. Inputs the server refuses before the API (a path
 * over 1024 bytes, a NUL in the body) are skipped as it skips them.
 *
 * Nothing is ever spawned: jobs_start and jobs_run are wrapped at link
 * time (-Wl,--wrap): a start checks its argv and hands back a pid that
 * is never signalled; a run (a download's conversion, systemctl, nprof
 * heap) writes a few bytes and exits 0. The instance a started job
 * belongs to then stays RUNNING, as a real one does until it ends.
 *
 * Every reply has a status, a body (JSON or a file) and, from 400 on,
 * {"error": "..."}; none is 5xx (no input is a server failure); the JSON
 * dumps; a user who is not admin sees only their own rows; a delete or
 * a revocation that answered 200 took effect; a new token works.
 *
 * NPROF_FUZZ_VERBOSE=1 prints each request's status and reply: run it
 * so on the seeds (-runs=0) to see which route each one reaches. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/api/api.h"
#include "daemon/api/reply_cache.h"
#include "daemon/auth/signin_limit.h"
#include "daemon/auth/tokens.h"
#include "daemon/core/config.h"
#include "daemon/core/workers.h"
#include "daemon/jobs/jobs.h"
#include "daemon/store/db.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int __wrap_jobs_start(struct jobs *j, const struct job_spec *s, pid_t *ret_pid);
int __wrap_jobs_run(const struct job_spec *s, char *err, size_t errlen);

#define PATH_LIMIT 1024		/* server.c: a longer path is a 400 before the API */
#define FAKE_PID 0x7ffffff0	/* what a wrapped start hands back: no such process */

/* What the operator switched on, for the fuzzer's process. */
static const char CONFIG[] =
	"[actions]\n"
	"core_file = on\nheap_profiling = on\nrestart = on\ncommands = on\n"
	"[service fuzz]\n"
	"match = exe:*fuzz*\n"
	"restart_command = /bin/true 'restart' %p\n"
	"[command keep]\n"
	"run = /bin/echo %p %d %o\n"
	"output = file\n"
	"timeout = 30s\n"
	"[command say]\n"
	"run = /bin/echo \"hello %p\"\n"
	"output = stdout\n";

static struct daemon d;
static char state_dir[64];
static char self_id[WORKER_ID_MAX];

/* A thread dump as nprof stacks --json writes it, small. */
static const char THREADS_JSON[] =
	"{\"pid\":1,\"comm\":\"x\",\"time_ns\":1,\"method\":\"ptrace\",\"threads\":["
	"{\"tid\":1,\"name\":\"x\",\"state\":\"S\",\"status\":\"taken\",\"frames\":["
	"{\"addr\":\"0x1000\",\"function\":\"main\",\"module\":\"/bin/x\",\"offset\":\"0x0\","
	"\"kind\":\"user\"}]}]}\n";

static void die(const char *what)
{
	fprintf(stderr, "daemon_request_fuzz: %s: %s\n", what, strerror(errno));
	abort();
}

/* ---- the daemon's state, seeded and put back after every change ---------- */

static void put_file(const char *name, const char *text, size_t len)
{
	char path[PATH_MAX * 2];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", d.artifacts_dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len)
		die(path);
	close(fd);
}

static void exec_or_die(const char *sql)
{
	if (db_exec(d.db, NULL, sql, "") < 0)
		die(sql);
}

/* The rows ids can hit: instance 1 (root's worker, FINISHED) with
 * artifacts 1 (a thread dump), 2 (a profile) and 3 (a core file);
 * instance 2 (uid 1000's, RUNNING, not a job here) with artifact 4
 * still being written and 5 whose file is gone; tokens 1 (uid 1000)
 * and 2 (root). */
static void reset_state(void)
{
	char sql[1024];
	DIR *dir;
	struct dirent *e;

	/* db_exec runs one statement: one call each. */
	exec_or_die("DELETE FROM instances");
	exec_or_die("DELETE FROM artifacts");
	exec_or_die("DELETE FROM tokens");
	exec_or_die("DELETE FROM workers");
	exec_or_die("DELETE FROM audit");
	/* Ids are never handed out twice (AUTOINCREMENT): each input starts
	 * from the same ones, so that a crash replays. */
	exec_or_die("DELETE FROM sqlite_sequence");
	snprintf(sql, sizeof(sql),
		 "INSERT INTO instances(id, kind, worker, pid, worker_uid, service, user, uid, mode, "
		 "duration_ns, interval, format, status, message, created, finished) VALUES"
		 "(1, 'profile', '%s', %d, 0, 'fuzz', 'root', 0, 'cpu', 1000000000, NULL, "
		 "'flamegraph', 'FINISHED', '', 1700000000000, 1700000001000),"
		 "(2, 'stacks', '4242-1', 4242, 1000, 'u.service', 'u', 1000, NULL, 0, NULL, 'text', "
		 "'RUNNING', '', 1700000002000, NULL)", self_id, (int)getpid());
	exec_or_die(sql);
	snprintf(sql, sizeof(sql),
		 "INSERT INTO artifacts(id, instance, worker, worker_uid, name, format, file, size, "
		 "created, complete) VALUES"
		 "(1, 1, '%s', 0, 'stacks-1-20231114-221320.json', 'threads', '1.json', %zu, "
		 "1700000000000, 1),"
		 "(2, 1, '%s', 0, 'cpu-1-20231114-221320.pb.gz', 'pprof', '2.pb.gz', 4, "
		 "1700000000000, 1),"
		 "(3, 1, '%s', 0, 'coredump-1-20231114-221320.core', 'core', '3.core', 4, "
		 "1700000000000, 2),"
		 "(4, 2, '4242-1', 1000, 'stacks-4242-x.json', 'threads', '4.json', 0, "
		 "1700000002000, 0),"
		 "(5, 2, '4242-1', 1000, 'cpu-4242-x.pb.gz', 'pprof', '5.pb.gz', 4, "
		 "1700000002000, 1)",
		 self_id, sizeof(THREADS_JSON) - 1, self_id, self_id);
	exec_or_die(sql);
	exec_or_die("INSERT INTO tokens(id, uid, user, name, hash, created, expires) VALUES"
		    "(1, 1000, 'u', 'one', 'h1', 1700000000000, 99999999999999),"
		    "(2, 0, 'root', 'two', 'h2', 1700000000000, 99999999999999)");
	dir = opendir(d.artifacts_dir);
	if (!dir)
		die(d.artifacts_dir);
	while ((e = readdir(dir))) {
		if (e->d_name[0] != '.')
			unlinkat(dirfd(dir), e->d_name, 0);
	}
	closedir(dir);
	put_file("1.json", THREADS_JSON, sizeof(THREADS_JSON) - 1);
	put_file("2.pb.gz", "\x1f\x8b\x08\x00", 4);
	put_file("3.core", "\x7f" "ELF", 4);
	put_file("4.json", "", 0);
	/* A command's %o directories: work/ID/output, nothing else. */
	dir = opendir(d.work_dir);
	if (!dir)
		die(d.work_dir);
	while ((e = readdir(dir))) {
		char sub[PATH_MAX * 2];

		if (e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s/output", d.work_dir, e->d_name);
		unlink(sub);
		snprintf(sub, sizeof(sub), "%s/%s", d.work_dir, e->d_name);
		if (rmdir(sub) < 0)
			die(sub);
	}
	closedir(dir);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path) < 0 ? -1 : 0;
}

/* At exit; a crash leaves the directory for a look. */
static void remove_state(void)
{
	if (state_dir[0] && nftw(state_dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) < 0)
		fprintf(stderr, "daemon_request_fuzz: could not remove %s\n", state_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char db_path[PATH_MAX], err[512];
	struct worker w;

	config_defaults(&d.cfg);
	if (config_parse(&d.cfg, "fuzz.conf", CONFIG, sizeof(CONFIG) - 1, err, sizeof(err)) < 0) {
		fprintf(stderr, "daemon_request_fuzz: %s\n", err);
		abort();
	}
	snprintf(state_dir, sizeof(state_dir), "/tmp/nprofd-fuzz.XXXXXX");
	if (!mkdtemp(state_dir))
		die("mkdtemp");
	atexit(remove_state);
	snprintf(d.cfg.state_dir, sizeof(d.cfg.state_dir), "%s", state_dir);
	snprintf(d.artifacts_dir, sizeof(d.artifacts_dir), "%s/artifacts", state_dir);
	snprintf(d.work_dir, sizeof(d.work_dir), "%s/work", state_dir);
	if (mkdir(d.artifacts_dir, 0700) < 0)
		die(d.artifacts_dir);
	if (mkdir(d.work_dir, 0711) < 0)
		die(d.work_dir);
	snprintf(db_path, sizeof(db_path), "%s/nprofd.db", state_dir);
	d.db = db_open(db_path, err, sizeof(err));
	if (!d.db) {
		fprintf(stderr, "daemon_request_fuzz: %s\n", err);
		abort();
	}
	snprintf(d.nprof, sizeof(d.nprof), "/bin/false");
	d.started_ms = now_ms();
	pthread_mutex_init(&d.start_lock, NULL);
	pthread_mutex_init(&d.scanner_lock, NULL);
	pthread_mutex_init(&d.list_lock, NULL);
	d.scanner = worker_scanner_new();
	d.jobs = jobs_new(instances_job_done, &d);
	d.replies = reply_cache_new(1 << 20);
	d.signin_limit = signin_limit_new(&(struct signin_limits){
		.max_failures = 5, .max_address_failures = 20, .failures_per_minute = 30,
		.window_ns = 60000000000ull });
	if (!d.scanner || !d.jobs || !d.replies || !d.signin_limit)
		die("worker_scanner_new or jobs_new");
	worker_perf_probe(&d.perf_ok, &d.hw_ok);
	if (worker_read(NULL, "/proc", getpid(), &w) < 0)
		die("worker_read(self)");
	snprintf(self_id, sizeof(self_id), "%s", w.id);
	reset_state();
	return 0;
}

/* ---- link-time stand-ins for the two ways jobs fork ------------------------ */

/* argv: a program and at most a few hundred arguments, none NULL
 * before the end. */
static void sane_argv(char *const *argv)
{
	size_t n = 0;

	if (!argv || !argv[0] || !argv[0][0])
		abort();
	while (argv[n])
		if (++n > 512)
			abort();
}

int __wrap_jobs_start(struct jobs *j, const struct job_spec *s, pid_t *ret_pid)
{
	sane_argv(s->argv);
	if (j != d.jobs || s->id <= 0 || !s->deadline_ns)
		abort();
	/* nprof's own arguments are the daemon's, never empty */
	for (size_t i = 0; !strcmp(s->argv[0], d.nprof) && s->argv[i]; i++)
		if (!s->argv[i][0])
			abort();
	*ret_pid = FAKE_PID;
	return 0;
}

int __wrap_jobs_run(const struct job_spec *s, char *err, size_t errlen)
{
	static const char out[] = "converted\n";

	sane_argv(s->argv);
	if (s->stdout_fd < 0)
		abort();
	if (write(s->stdout_fd, out, sizeof(out) - 1) != (ssize_t)sizeof(out) - 1)
		abort();
	snprintf(err, errlen, "%s", "");
	return 0; /* exited 0, as waitpid puts it */
}

/* ---- one request ------------------------------------------------------------ */

struct query {
	char *text;		/* "k=v&k=v", split in place */
	char *keys[64], *vals[64];
	size_t n;
};

/* As libmicrohttpd's lookup: the first value of key; NULL when absent
 * or when it came without '='. */
static const char *query_get(const struct request *rq, const char *key)
{
	const struct query *q = rq->conn;

	for (size_t i = 0; i < q->n; i++)
		if (!strcmp(q->keys[i], key))
			return q->vals[i];
	return NULL;
}

static void query_parse(struct query *q)
{
	char *save = NULL;

	for (char *pair = strtok_r(q->text, "&", &save); pair && q->n < 64;
	     pair = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(pair, '=');

		if (eq)
			*eq++ = '\0';
		q->keys[q->n] = pair;
		q->vals[q->n++] = eq;
	}
}

/* text[0..len) with every "$W" as the worker id: a new NUL-terminated
 * string (its length in *ret_len). */
static char *expand(const char *text, size_t len, size_t *ret_len)
{
	size_t idl = strlen(self_id), n = 0;
	char *out = malloc(len * (idl > 2 ? idl : 2) / 2 + idl + 1);

	if (!out)
		abort();
	for (size_t i = 0; i < len; i++) {
		if (text[i] == '$' && i + 1 < len && text[i + 1] == 'W') {
			memcpy(out + n, self_id, idl);
			n += idl;
			i++;
		} else {
			out[n++] = text[i];
		}
	}
	out[n] = '\0';
	*ret_len = n;
	return out;
}

static const char *next_line(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));

	return nl ? nl : end;
}

/* A non-admin sees rows of its own uid only. */
static void own_rows(const struct request *rq, json_t *list, const char *uid_key)
{
	size_t i;
	json_t *row;

	if (rq->user.admin)
		return;
	json_array_foreach(list, i, row) {
		if (json_integer_value(json_object_get(row, uid_key)) != (json_int_t)rq->user.uid)
			abort();
	}
}

/* What a 2xx says must hold. */
static void check_success(const struct request *rq, const struct reply *rp)
{
	const char *p = rq->path;
	json_t *j = rp->json;
	char seg[32];

	if (!strcmp(rq->method, "GET")) {
		if (!strcmp(p, "/api/v1/instances"))
			own_rows(rq, json_object_get(j, "instances"), "worker_uid");
		else if (!strcmp(p, "/api/v1/artifacts"))
			own_rows(rq, json_object_get(j, "artifacts"), "worker_uid");
		else if (!strcmp(p, "/api/v1/tokens"))
			own_rows(rq, json_object_get(j, "tokens"), "uid");
		else if (!strcmp(p, "/api/v1/audit") && !rq->user.admin)
			abort();
	} else if (!strcmp(rq->method, "DELETE") &&
		   api_path(p, "/api/v1/artifacts", NULL, seg, sizeof(seg))) {
		if (db_value(d.db, "SELECT COUNT(*) FROM artifacts WHERE id = ?", "i",
			     (int64_t)strtoll(seg, NULL, 10)) != 0)
			abort(); /* "deleted", and still there */
	} else if (!strcmp(rq->method, "DELETE") &&
		   api_path(p, "/api/v1/tokens", NULL, seg, sizeof(seg))) {
		if (db_value(d.db, "SELECT COUNT(*) FROM tokens WHERE id = ? AND revoked IS NULL",
			     "i", (int64_t)strtoll(seg, NULL, 10)) != 0)
			abort(); /* "revoked", and still live */
	} else if (!strcmp(rq->method, "POST") && !strcmp(p, "/api/v1/tokens")) {
		struct token_info u = { 0 };
		const char *t = json_string_value(json_object_get(j, "token"));

		if (rp->status != 201 || strcmp(rq->user.via, "socket") || !t ||
		    token_check(d.db, t, TOKEN_API, &u) < 0 || u.uid != rq->user.uid)
			abort(); /* a token made over HTTP, or one that does not work */
	}
}

static void handle(const struct request *rq)
{
	struct reply rp = { .status = 200, .fd = -1 };
	char *dump;

	api_handle(&d, rq, &rp);
	if (rp.body) {
		/* a list rendered to be kept (with its JSON), or kept from an
		 * earlier request (alone): the text is that JSON */
		json_t *sent = json_loadb(rp.body, rp.body_len, 0, NULL);
		char *again = rp.json ? json_dumps(rp.json, JSON_COMPACT | JSON_ENSURE_ASCII |
						   JSON_REAL_PRECISION(6)) : NULL;

		if (!sent || rp.fd >= 0 || strlen(rp.body) != rp.body_len ||
		    (rp.json && (!again || strncmp(again, rp.body, rp.body_len - 1) ||
				 strlen(again) != rp.body_len - 1)))
			abort();
		free(again);
		if (rp.json)
			json_decref(sent);
		else
			rp.json = sent;
		free(rp.body);
	}
	if (getenv("NPROF_FUZZ_VERBOSE")) {
		dump = rp.json ? json_dumps(rp.json, JSON_COMPACT) : NULL;
		fprintf(stderr, "%s %.100s -> %u %.300s\n", rq->method, rq->path, rp.status,
			dump ? dump : "(file)");
		free(dump);
	}
	if (rp.status < 200 || rp.status > 599)
		abort();
	if (rp.status >= 500)
		abort(); /* no request is a server failure here */
	if (rp.fd >= 0) {
		struct stat st;

		if (rp.status != 200 || rp.json || fstat(rp.fd, &st) < 0 ||
		    (uint64_t)st.st_size != rp.size || !rp.content_type[0] || !rp.filename[0] ||
		    strchr(rp.filename, '/') || strchr(rp.filename, '"'))
			abort();
		close(rp.fd);
	} else if (!rp.json) {
		abort(); /* no body: the server would send {} */
	}
	if (rp.json) {
		dump = json_dumps(rp.json, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(6));
		if (!dump)
			abort();
		free(dump);
	}
	if (rp.status >= 400 && !json_is_string(json_object_get(rp.json, "error")))
		abort();
	if (rp.status < 300)
		check_success(rq, &rp);
	json_decref(rp.json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const METHODS[] = { "GET", "POST", "DELETE", "PUT" };
	static const uid_t UIDS[] = { 0, 1000, 65534 };
	static const char *const NAMES[] = { "root", "u", "nobody" };
	const char *p = (const char *)data + 2, *end = (const char *)data + size, *pe, *qe;
	char *path, *qtext, *body;
	size_t path_len, qlen, body_len;
	struct query q = { 0 };
	struct request rq = { .query = query_get, .conn = &q };

	if (size < 2 || size > 65536)
		return 0;
	rq.method = METHODS[data[0] & 3];
	d.cfg.max_concurrent = data[0] & 4 ? 8 : 0;
	rq.user.uid = UIDS[(data[1] & 3) % 3];
	rq.user.gid = rq.user.uid;
	snprintf(rq.user.name, sizeof(rq.user.name), "%s", NAMES[(data[1] & 3) % 3]);
	rq.user.admin = data[1] & 4;
	rq.user.via = data[1] & 8 ? "token" : "socket";
	if (geteuid() != 0 && (rq.user.admin || rq.user.uid == 0)) {
		/* Not root (nprofd is): a file or directory given to another
		 * uid would fail as the daemon never does. The runner stands
		 * for root, as a user. */
		rq.user.uid = rq.user.gid = geteuid();
		rq.user.admin = false;
	}
	pe = next_line(p, end);
	qe = pe < end ? next_line(pe + 1, end) : end;
	path = expand(p, (size_t)(pe - p), &path_len);
	qtext = expand(pe < end ? pe + 1 : end, (size_t)(qe - (pe < end ? pe + 1 : end)), &qlen);
	body = expand(qe < end ? qe + 1 : end, (size_t)(end - (qe < end ? qe + 1 : end)), &body_len);
	/* The server's own refusals, before the API: a path is a C string. */
	if (strlen(path) <= PATH_LIMIT && !memchr(body, '\0', body_len) &&
	    body_len <= d.cfg.max_body) {
		char args[512];
		size_t args_len = 0;
		bool args_fit = true;

		q.text = qtext;
		query_parse(&q);
		args[0] = '\0';
		for (size_t i = 0; i < q.n && args_fit; i++)
			args_fit = request_args_add(args, sizeof(args), &args_len, q.keys[i], q.vals[i]);
		rq.args = args_fit ? args : NULL;
		rq.path = path;
		rq.body = body;
		rq.body_len = body_len;
		handle(&rq);
		if (strcmp(rq.method, "GET"))
			reset_state();
	}
	free(path);
	free(qtext);
	free(body);
	return 0;
}
