/* api_artifacts: listing, downloading (converted on demand) and
 * deleting the files instances produced. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "daemon/api/api.h"
#include "daemon/core/nouns.h"
#include "daemon/jobs/jobs.h"
#include "daemon/store/artifact_rows.h"
#include "daemon/store/db.h"
#include "profile/merge.h"
#include "threaddump/threaddump.h"

#define CONVERT_TIME_LIMIT_NS (60ull * 1000000000ull)
#define THREADS_JSON_MAX (64u << 20)

/* An artifact as the API shows it (docs/api.md): its row but the file's
 * name in the state directory, which is nprofd's business. */
static json_t *artifact_json(const struct artifact *a)
{
	char when[40];

	return json_pack("{sI sI ss sI ss ss sI ss sb}", "id", (json_int_t)a->id,
			 "instance", (json_int_t)a->instance, "worker", a->worker,
			 "worker_uid", (json_int_t)a->worker_uid, "name", a->name,
			 "format", a->format, "size", (json_int_t)a->size,
			 "created", iso_time(a->created_ms, when, sizeof(when)),
			 "complete", a->complete == ARTIFACT_COMPLETE);
}

/* Artifact id_text, visible to rq's user, into *a: false after replying
 * the error (404 for one the user may not see). */
static bool find_artifact(struct daemon *d, const struct request *rq, struct reply *rp,
			  const char *id_text, struct artifact *a)
{
	char *end;
	long long id = strtoll(id_text, &end, 10);
	int r;

	if (*end || id <= 0) {
		reply_error(rp, 400, "id", "'%.32s' is not an artifact id (a positive number)", id_text);
		return false;
	}
	r = artifact_get(d->db, id, a);
	if (r < 0 && r != -ENOENT) {
		reply_error(rp, 500, NULL, "cannot read artifact %lld from the index (see nprofd's "
			    "log)", id);
		return false;
	}
	if (r < 0 || !user_may_see(&rq->user, a->worker_uid)) {
		reply_error(rp, 404, "id", "no artifact %lld that you may see", id);
		return false;
	}
	snprintf(rp->worker, sizeof(rp->worker), "%s", a->worker);
	return true;
}

int api_open_stored(struct daemon *d, const struct artifact *a)
{
	const char *file = a->file;
	int dir, fd;

	if (!file[0] || strchr(file, '/'))
		return -EINVAL;
	dir = open(d->artifacts_dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (dir < 0)
		return -errno;
	fd = openat(dir, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		fd = -errno;
	close(dir);
	return fd;
}

/* A thread dump's JSON as text, in this process: the reader is the
 * fuzzed one (tests/fuzz/thread_dump_json_fuzz.c). */
static int threads_to_text(int in, int out, char *err, size_t errlen)
{
	struct stat st;
	struct thread_dump *td = NULL;
	char *buf = NULL;
	FILE *f = NULL;
	ssize_t n = 0;
	int r = -EIO;

	if (fstat(in, &st) < 0 || st.st_size > THREADS_JSON_MAX) {
		snprintf(err, errlen, "the thread dump is larger than %u bytes", THREADS_JSON_MAX);
		return -EFBIG;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	while (n < st.st_size) {
		ssize_t k = read(in, buf + n, (size_t)(st.st_size - n));

		if (k <= 0)
			goto out;
		n += k;
	}
	if ((r = thread_dump_read_json(buf, (size_t)n, &td)) < 0) {
		snprintf(err, errlen, "the thread dump file is not nprof's thread dump JSON");
		goto out;
	}
	f = fdopen(dup(out), "w");
	if (!f)
		goto out;
	r = thread_dump_write_text(td, 0, f);
out:
	if (f && fclose(f) != 0 && r == 0)
		r = -EIO;
	thread_dump_free(td);
	free(buf);
	return r;
}

/* The last line of what a child wrote on stderr: its one-line error. */
static const char *last_line(char *err)
{
	char *nl = strrchr(err, '\n');

	while (nl && nl[1] == '\0' && nl > err) {
		*nl = '\0';
		nl = strrchr(err, '\n');
	}
	return nl ? nl + 1 : err;
}

/* nprof reading stored files, run as their owner (root's as nobody:
 * user_reader_uid): in as its standard input, extra as its fd 3 unless
 * -1, out as its standard output. The files were written by children
 * running as the worker's owner, who could have written anything into
 * them: they are read as that user, not as root. */
static struct job_spec nprof_job(char **argv, uid_t owner, int in, int extra, int out)
{
	uid_t reader = user_reader_uid(owner);

	return (struct job_spec){ .argv = argv, .uid = reader, .gid = user_primary_gid(reader),
				  .stdin_fd = in, .stdout_fd = out, .has_fd3 = extra >= 0, .fd3 = extra,
				  .deadline_ns = clock_ns(CLOCK_MONOTONIC) + CONVERT_TIME_LIMIT_NS };
}

int api_run_nprof(struct daemon *d, char **argv, uid_t owner, int in, int extra,
		     const char *what, struct reply *rp)
{
	char err[4096] = "";
	int out = open(d->artifacts_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600), r;
	struct job_spec s = nprof_job(argv, owner, in, extra, out);

	if (out < 0) {
		reply_error(rp, 500, NULL, "cannot make a temporary file in %s: %s", d->artifacts_dir,
			    strerror(errno));
		return -1;
	}
	(void)!fchown(out, owner, (gid_t)-1);
	r = jobs_run(&s, err, sizeof(err));
	if (r > 0)
		r = WIFEXITED(r) && WEXITSTATUS(r) == 0 ? 0 : -EIO;
	if (r < 0) {
		reply_error(rp, 500, "format", "%s failed%s%s", what, err[0] ? ": " : "",
			    last_line(err));
		close(out);
		return -1;
	}
	lseek(out, 0, SEEK_SET);
	return out;
}

/* nprof run by api_run_nprof_streamed, on a thread of its own: what the
 * request and the response share with it. */
struct streamed {
	pthread_mutex_t lock;
	pthread_cond_t ended_cond;
	int refs;
	bool ended, whole;	/* its end, and whether it wrote all of it */
	int out_w, in, extra;	/* its ends of the pipe and inputs (dups) */
	char *argv[16];		/* copies: the request's go with it */
	struct job_spec s;
	char err[4096];
};

static void streamed_put(struct streamed *st)
{
	bool last;

	pthread_mutex_lock(&st->lock);
	last = --st->refs == 0;
	pthread_mutex_unlock(&st->lock);
	if (!last)
		return;
	for (size_t i = 0; st->argv[i]; i++)
		free(st->argv[i]);
	pthread_mutex_destroy(&st->lock);
	pthread_cond_destroy(&st->ended_cond);
	free(st);
}

static void *streamed_run(void *arg)
{
	struct streamed *st = arg;
	int r = jobs_run(&st->s, st->err, sizeof(st->err));

	close(st->in);
	if (st->extra >= 0)
		close(st->extra);
	/* Known before the reader can see the end of the pipe: its last
	 * writer is closed after. */
	pthread_mutex_lock(&st->lock);
	st->ended = true;
	st->whole = r >= 0 && WIFEXITED(r) && WEXITSTATUS(r) == 0;
	pthread_cond_broadcast(&st->ended_cond);
	pthread_mutex_unlock(&st->lock);
	close(st->out_w);
	streamed_put(st);
	return NULL;
}

static bool streamed_whole(void *ctx)
{
	struct streamed *st = ctx;
	bool whole;

	pthread_mutex_lock(&st->lock);
	while (!st->ended)
		pthread_cond_wait(&st->ended_cond, &st->lock);
	whole = st->whole;
	pthread_mutex_unlock(&st->lock);
	return whole;
}

static void streamed_release(void *ctx)
{
	streamed_put(ctx);
}

/* As run_nprof, but what nprof writes is sent as it comes: a pipe, read
 * once nprof has written its first bytes (or ended). A diff's page is
 * written last, when its tree is built, and sending it while it is
 * written, and the browser reading it meanwhile, is a good part of the
 * time a comparison takes to show. An error before that first byte is a
 * reply as run_nprof's; one after it (nprof killed at its deadline) cuts
 * the connection (reply.stream_whole). -1 after replying the error. */
int api_run_nprof_streamed(struct daemon *d, char **argv, uid_t owner, int in, int extra,
			   const char *what, struct reply *rp)
{
	struct streamed *st = calloc(1, sizeof(*st));
	int pipefd[2] = { -1, -1 };
	struct pollfd pfd;
	pthread_t th;
	pthread_attr_t attr;
	bool whole = false, ended;

	if (!st || pipe2(pipefd, O_CLOEXEC) < 0) {
		free(st);
		reply_error(rp, 500, NULL, "%s failed: out of memory or file descriptors", what);
		return -1;
	}
	/* Room for a megabyte: nprof writes on while the reply is sent. */
	fcntl(pipefd[1], F_SETPIPE_SZ, 1 << 20);
	pthread_mutex_init(&st->lock, NULL);
	pthread_cond_init(&st->ended_cond, NULL);
	st->refs = 2;
	st->out_w = pipefd[1];
	st->in = dup(in);
	st->extra = extra >= 0 ? dup(extra) : -1;
	for (size_t i = 0; argv[i] && i + 1 < sizeof(st->argv) / sizeof(st->argv[0]); i++) {
		if (!(st->argv[i] = strdup(argv[i]))) {
			if (st->in >= 0)
				close(st->in);
			st->in = -1; /* refused below */
			break;
		}
	}
	st->s = nprof_job(st->argv, owner, st->in, st->extra, pipefd[1]);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (st->in < 0 || (extra >= 0 && st->extra < 0) ||
	    pthread_create(&th, &attr, streamed_run, st) != 0) {
		pthread_attr_destroy(&attr);
		if (st->in >= 0)
			close(st->in);
		if (st->extra >= 0)
			close(st->extra);
		close(pipefd[0]);
		close(pipefd[1]);
		st->refs = 1;
		streamed_put(st);
		reply_error(rp, 500, NULL, "%s failed: cannot start a thread for it", what);
		return -1;
	}
	pthread_attr_destroy(&attr);
	/* Its first bytes, or its end (the deadline ends it). */
	pfd = (struct pollfd){ .fd = pipefd[0], .events = POLLIN };
	while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
		;
	pthread_mutex_lock(&st->lock);
	ended = st->ended;
	whole = st->whole;
	pthread_mutex_unlock(&st->lock);
	if (ended && !whole) {
		reply_error(rp, 500, "format", "%s failed%s%s", what, st->err[0] ? ": " : "",
			    last_line(st->err));
		close(pipefd[0]);
		streamed_put(st);
		return -1;
	}
	rp->stream_whole = streamed_whole;
	rp->stream_release = streamed_release;
	rp->stream_ctx = st;
	return pipefd[0];
}

/* The stored file converted to format, as a new unlinked file. */
static int convert(struct daemon *d, const struct artifact *a, int stored, const char *format,
		   struct reply *rp)
{
	const char *have = a->format;
	char err[4096] = "", what[64];
	char *argv[] = { d->nprof, "convert", "-", "-", "-o", (char *)format, NULL };
	int out;

	snprintf(what, sizeof(what), "converting the artifact to %.32s", format);
	if (strcmp(have, "threads"))
		return api_run_nprof(d, argv, a->worker_uid, stored, -1, what, rp);
	out = open(d->artifacts_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (out < 0 || threads_to_text(stored, out, err, sizeof(err)) < 0) {
		reply_error(rp, 500, "format", "%s failed%s%s", what, err[0] ? ": " : "",
			    out < 0 ? strerror(errno) : err);
		if (out >= 0)
			close(out);
		return -1;
	}
	lseek(out, 0, SEEK_SET);
	return out;
}

/* Sends fd (owned) as a file in format, named base plus the format's
 * extension; shown in the browser (sandboxed) when inl says so. */
void api_reply_file(struct reply *rp, int fd, const char *format, const char *base,
		    const char *inl)
{
	const struct format_def *k = format_find(format);
	struct stat st;

	fstat(fd, &st);
	rp->fd = fd;
	/* A pipe (api_run_nprof_streamed) is sent as it comes, its size unknown. */
	rp->fd_is_pipe = S_ISFIFO(st.st_mode);
	rp->size = rp->fd_is_pipe ? 0 : (uint64_t)st.st_size;
	snprintf(rp->content_type, sizeof(rp->content_type), "%s",
		 k ? k->type : "application/octet-stream");
	snprintf(rp->filename, sizeof(rp->filename), "%s%s%s", base, k && k->ext[0] ? "." : "",
		 k ? k->ext : "");
	rp->inline_view = inl && (!strcmp(inl, "1") || !strcmp(inl, "true"));
	snprintf(rp->result, sizeof(rp->result), "downloaded as %s", format);
}

bool api_inline_valid(const char *inl, struct reply *rp)
{
	if (inl && strcmp(inl, "1") && strcmp(inl, "0") && strcmp(inl, "true") && strcmp(inl, "false")) {
		reply_error(rp, 400, "inline", "inline=%.16s: use 1 (show it in the browser) or 0", inl);
		return false;
	}
	return true;
}

static void download(struct daemon *d, const struct request *rq, struct reply *rp,
		     const struct artifact *a)
{
	const char *have = a->format;
	const char *want = rq->query(rq, "format"), *inl = rq->query(rq, "inline");
	const char *name = a->name;
	char base[96];
	int fd;

	if (!want || (!strcmp(want, "json") && !strcmp(have, "threads")))
		want = have;
	if (!api_inline_valid(inl, rp))
		return;
	if (!format_converts(have, want)) {
		char targets[256];

		reply_error(rp, 400, "format", "a %s artifact converts to %s", have,
			    format_targets(have, targets, sizeof(targets)));
		return;
	}
	if (a->complete == ARTIFACT_WRITING) {
		reply_error(rp, 409, "id", "artifact %lld is still being written; try again when its "
			    "instance has ended", (long long)a->id);
		return;
	}
	fd = api_open_stored(d, a);
	if (fd < 0) {
		reply_error(rp, 410, "id", "the file of artifact %lld is gone from the state directory",
			    (long long)a->id);
		return;
	}
	if (strcmp(want, have)) {
		int out = convert(d, a, fd, want, rp);

		close(fd);
		if (out < 0)
			return;
		fd = out;
	}
	/* The stored name minus its extension, plus the download's. */
	snprintf(base, sizeof(base), "%.95s", name);
	if (strchr(base, '.') && strcmp(have, "file"))
		*strchr(base, '.') = '\0';
	api_reply_file(rp, fd, want, base, inl);
}

void api_artifacts_list(struct daemon *d, struct request *rq, struct reply *rp)
{
	const char *worker = rq->query(rq, "worker"), *inst = rq->query(rq, "instance");
	uint64_t generation = db_generation(d->db);
	struct artifact_filter f = { .worker = worker, .all_users = rq->user.admin,
				     .uid = rq->user.uid, .limit = 1000 };
	struct artifact *arts;
	json_t *list;
	size_t n;

	if (api_cached(d, rq, rp, generation))
		return;
	if (inst) {
		char *end;
		long long id = strtoll(inst, &end, 10);

		/* (an id that is no number names no artifact's instance) */
		f.instance = *end || id <= 0 ? -1 : id;
	}
	if (artifacts_list(d->db, &f, &arts, &n) < 0) {
		reply_error(rp, 500, NULL, "cannot read the index (see nprofd's log)");
		return;
	}
	list = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(list, artifact_json(&arts[i]));
	free(arts);
	rp->json = json_pack("{so}", "artifacts", list);
	api_keep(d, rq, rp, generation);
}

/* One side of a comparison, as the diff needs it. */
struct side {
	int64_t id;
	char name[256];
	uid_t owner;
	int fd;				/* its profile, open; -1 */
	bool remote;			/* another host's */
};

/* A profile artifact of rq's user, complete, for a diff, into *s (its
 * file open); false after replying the error. */
static bool diff_input(struct daemon *d, const struct request *rq, struct reply *rp,
		       const char *key, const char *id, struct side *s)
{
	struct artifact a;

	if (!find_artifact(d, rq, rp, id, &a))
		return false;
	if (strcmp(a.format, "pprof")) {
		reply_error(rp, 400, key, "artifact %.32s is a %s, not a profile: only profiles "
			    "compare", id, a.format);
	} else if (a.complete == ARTIFACT_WRITING) {
		reply_error(rp, 409, key, "artifact %.32s is still being written; try again when "
			    "its instance has ended", id);
	} else if ((s->fd = api_open_stored(d, &a)) < 0) {
		reply_error(rp, 410, key, "the file of artifact %.32s is gone from the state "
			    "directory", id);
	} else {
		s->id = a.id;
		s->owner = a.worker_uid;
		snprintf(s->name, sizeof(s->name), "%s", a.name);
		return true;
	}
	return false;
}

/* One side of a comparison, key (before, after): an artifact of this
 * host, or of KEY_host's when that names another host of the cluster
 * (s->remote), as api_cluster_artifact gets it. false after replying the
 * error. */
static bool diff_side(struct daemon *d, const struct request *rq, struct reply *rp,
		      const char *key, struct side *s)
{
	char host_key[16];
	const char *id = rq->query(rq, key), *host;
	json_t *art;

	snprintf(host_key, sizeof(host_key), "%s_host", key);
	host = rq->query(rq, host_key);
	if (!id) {
		reply_error(rp, 400, key, "%s=ID is missing: the artifacts to compare are before=ID "
			    "and after=ID (profiles, see GET /api/v1/artifacts)", key);
		return false;
	}
	if (!host || api_cluster_is_self(d, host))
		return diff_input(d, rq, rp, key, id, s);
	s->remote = true;
	/* (the other host's reply, as its API shows the artifact) */
	if (!(art = api_cluster_artifact(d, rq, rp, host, id, key, &s->fd)))
		return false;
	s->id = json_integer_value(json_object_get(art, "id"));
	s->owner = (uid_t)json_integer_value(json_object_get(art, "worker_uid"));
	snprintf(s->name, sizeof(s->name), "%s", json_string_value(json_object_get(art, "name")) ?: "");
	json_decref(art);
	return true;
}

void api_diff(struct daemon *d, struct request *rq, struct reply *rp)
{
	const char *format = rq->query(rq, "format"), *inl = rq->query(rq, "inline");
	struct side before = { .fd = -1 }, after = { .fd = -1 };
	int out;
	uid_t owner;
	char *argv[] = { d->nprof, "diff", "-", "/dev/fd/3", "-o", NULL, "--title", NULL, NULL };
	char base[96], title[256];

	format = format ? format : "flamegraph";
	if (!format_find(format) || !format_find(format)->diff) {
		char names[128];

		reply_error(rp, 400, "format", "format=%.32s: a diff is %s", format,
			    format_diff_list(names, sizeof(names)));
		return;
	}
	if (!api_inline_valid(inl, rp) || !diff_side(d, rq, rp, "before", &before) ||
	    !diff_side(d, rq, rp, "after", &after))
		goto out;
	owner = after.owner;
	if (before.remote || after.remote) {
		/* Each host gave its profile to this user: nprof reads both, as
		 * the open files it is given, as this user (root as nobody,
		 * user_reader_uid: no other user's uid is this host's to take). */
		owner = rq->user.uid;
	} else if (before.owner != after.owner) {
		/* each is read as its owner; no one user may read both */
		reply_error(rp, 400, "after", "the two profiles are of workers of different users; "
			    "compare two of one user's (or download both and run nprof diff)");
		goto out;
	}
	argv[5] = (char *)format;
	snprintf(title, sizeof(title), "%.100s \u2192 %.100s", before.name, after.name);
	argv[7] = title;
	out = api_run_nprof_streamed(d, argv, owner, before.fd, after.fd, "comparing the two profiles",
				 rp);
	if (out >= 0) {
		snprintf(base, sizeof(base), "diff-%lld-%lld", (long long)before.id,
			 (long long)after.id);
		api_reply_file(rp, out, format, base, inl);
	}
out:
	if (before.fd >= 0)
		close(before.fd);
	if (after.fd >= 0)
		close(after.fd);
}

/* GET /api/v1/artifacts/ID: the file, converted to ?format=; with
 * ?info=1 its JSON. */
void api_artifact_get(struct daemon *d, struct request *rq, struct reply *rp)
{
	struct artifact a;

	if (!find_artifact(d, rq, rp, rq->param[0], &a))
		return;
	if (rq->query(rq, "info"))
		rp->json = artifact_json(&a);
	else
		download(d, rq, rp, &a);
}

void api_artifact_delete(struct daemon *d, struct request *rq, struct reply *rp)
{
	const char *seg = rq->param[0];
	char path[PATH_MAX * 2];
	struct artifact a;

	if (!find_artifact(d, rq, rp, seg, &a))
		return;
	if (a.complete == ARTIFACT_WRITING) {
		reply_error(rp, 409, "id", "artifact %s is still being written", seg);
	} else {
		if (a.file[0] && !strchr(a.file, '/')) {
			snprintf(path, sizeof(path), "%s/%s", d->artifacts_dir, a.file);
			unlink(path);
		}
		if (artifact_delete(d->db, a.id) < 0) {
			reply_error(rp, 500, NULL, "artifact %s's file is removed, but its row is "
				    "not: the index cannot be written (nprofd's log says why)", seg);
		} else {
			rp->json = json_pack("{ss}", "deleted", seg);
			snprintf(rp->result, sizeof(rp->result), "deleted");
		}
	}
}

int api_parts_append(int out, const char *root, int fd, const char *buf, size_t len)
{
	char head[PARTS_LINE_MAX + 32];
	struct stat st;
	off_t at = 0;
	int n;

	if (!buf) {
		if (fstat(fd, &st) < 0)
			return -errno;
		len = (size_t)st.st_size;
	}
	n = snprintf(head, sizeof(head), "%zu%s%.*s\n", len, root ? "\t" : "", PARTS_LINE_MAX - 2,
		     root ? root : "");
	if (write(out, head, (size_t)n) != n)
		return errno ? -errno : -EIO;
	if (buf)
		return write(out, buf, len) == (ssize_t)len ? 0 : errno ? -errno : -EIO;
	while (at < (off_t)len)
		if (sendfile(out, fd, &at, len - (size_t)at) <= 0)
			return errno ? -errno : -EIO;
	return 0;
}

int api_parts_file(struct daemon *d, const struct artifact *arts, const char *const *roots,
		   size_t n)
{
	int out = open(d->artifacts_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600), err = 0;
	struct stat st;

	if (out < 0)
		return -errno;
	for (size_t i = 0; i < n && !err; i++) {
		int fd = api_open_stored(d, &arts[i]);

		/* one gone since it was listed (retention), or empty, is left out */
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && st.st_size)
			err = api_parts_append(out, roots ? roots[i] : NULL, fd, NULL, 0);
		close(fd);
	}
	if (err < 0) {
		close(out);
		return err;
	}
	lseek(out, 0, SEEK_SET);
	return out;
}
