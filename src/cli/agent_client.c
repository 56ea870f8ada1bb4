/* agent_client: see agent_client.h. */
#include "cli/agent_client.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/spawn.h"
#include "output/pprof.h"

#define SOCKET_PREFIX "nprof-agent-"
#define MAX_REPLY (1u << 30)

bool agent_client_event_only(const char *event)
{
	return !strcmp(event, "itimer") || agent_client_event_bytes(event) ||
	       !strcmp(event, "lock");
}

bool agent_client_event_bytes(const char *event)
{
	return !strcmp(event, "alloc") || !strcmp(event, "heap");
}

bool agent_client_event(const char *event)
{
	return !strcmp(event, "cpu") || !strcmp(event, "itimer") || !strcmp(event, "wall") ||
	       agent_client_event_bytes(event) || !strcmp(event, "lock");
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int agent_client_list(pid_t **ret, unsigned *ret_n)
{
	FILE *f = fopen("/proc/net/unix", "r");
	char line[512];
	pid_t *v = NULL;
	unsigned n = 0, cap = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *at = strstr(line, " @" SOCKET_PREFIX);
		char *end;
		long pid;

		if (!at)
			continue;
		pid = strtol(at + 2 + strlen(SOCKET_PREFIX), &end, 10);
		if (pid <= 0 || (*end != '\n' && *end != '\0' && *end != ' '))
			continue;
		if (n == cap) {
			pid_t *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*nv));

			if (!nv) {
				free(v);
				fclose(f);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = (pid_t)pid;
	}
	fclose(f);
	qsort(v, n, sizeof(*v), cmp_pid);
	/* A listening socket and its accepted connections share the name. */
	{
		unsigned o = 0;

		for (unsigned i = 0; i < n; i++)
			if (!o || v[o - 1] != v[i])
				v[o++] = v[i];
		n = o;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

bool agent_client_present(pid_t pid)
{
	pid_t *v = NULL;
	unsigned n = 0;
	bool yes = false;

	if (agent_client_list(&v, &n) < 0)
		return false;
	for (unsigned i = 0; i < n && !yes; i++)
		yes = v[i] == pid;
	free(v);
	return yes;
}

static int connect_agent(pid_t pid, struct diag *d)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct timeval tv = { 30, 0 };
	int fd, n;

	n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, SOCKET_PREFIX "%d", (int)pid);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return diag_set(d, -errno, "socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) < 0) {
		int err = -errno;

		close(fd);
		return diag_set(d, err == -ECONNREFUSED ? -ENOENT : err,
				"PID %d has no nprof agent listening (@%s%d): %s", (int)pid,
				SOCKET_PREFIX, (int)pid, strerror(-err));
	}
	return fd;
}

int agent_client_request(pid_t pid, const char *line, char **ret_data, size_t *ret_len,
			 struct diag *d)
{
	char *buf = NULL, *nl;
	size_t len = 0, cap = 0, hdr;
	int fd = connect_agent(pid, d), err = 0;

	if (fd < 0)
		return fd;
	if (send(fd, line, strlen(line), MSG_NOSIGNAL) < 0 || send(fd, "\n", 1, MSG_NOSIGNAL) < 0) {
		err = diag_set(d, -errno, "PID %d's agent: %s", (int)pid, strerror(errno));
		goto out;
	}
	for (;;) {
		ssize_t n;

		if (len + 65536 + 1 > cap) {
			char *nb;

			cap = cap ? cap * 2 : 131072;
			if (cap > MAX_REPLY) {
				err = diag_set(d, -EFBIG, "PID %d's agent replied more than 1 GiB",
					       (int)pid);
				goto out;
			}
			nb = realloc(buf, cap);
			if (!nb) {
				err = -ENOMEM;
				goto out;
			}
			buf = nb;
		}
		n = recv(fd, buf + len, cap - len - 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = diag_set(d, -errno, "PID %d's agent did not answer: %s", (int)pid,
				       strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (!buf || !len) {
		err = diag_set(d, -EIO, "PID %d's agent closed the connection without a reply",
			       (int)pid);
		goto out;
	}
	buf[len] = '\0';
	nl = memchr(buf, '\n', len);
	if (!nl) {
		err = diag_set(d, -EIO, "PID %d's agent sent a malformed reply", (int)pid);
		goto out;
	}
	*nl = '\0';
	if (!strncmp(buf, "error ", 6)) {
		err = diag_set(d, strstr(buf, "permission denied") ? -EACCES : -EIO,
			       "PID %d's agent: %s", (int)pid, buf + 6);
		goto out;
	}
	if (strncmp(buf, "ok", 2)) {
		err = diag_set(d, -EIO, "PID %d's agent sent a malformed reply", (int)pid);
		goto out;
	}
	hdr = (size_t)(nl + 1 - buf);
	memmove(buf, buf + hdr, len - hdr + 1);
	*ret_data = buf;
	*ret_len = len - hdr;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return err;
}

/* The start options for o, as the agent reads them. */
static void format_options(const struct record_options *o, uint64_t duration_ns, char *buf,
			   size_t len)
{
	int n = snprintf(buf, len, "event=%s", o->event ? o->event : "cpu");

	if (o->interval)
		n += snprintf(buf + n, len - (size_t)n,
			      agent_client_event_bytes(o->event ? o->event : "cpu")
				      ? ",interval=%llu" : ",interval=%lluns",
			      (unsigned long long)o->interval);
	if (duration_ns)
		n += snprintf(buf + n, len - (size_t)n, ",duration=%lluns",
			      (unsigned long long)duration_ns);
	if (o->max_depth)
		n += snprintf(buf + n, len - (size_t)n, ",jstackdepth=%u",
			      o->max_depth > 2048 ? 2048 : o->max_depth);
	if (o->per_thread)
		n += snprintf(buf + n, len - (size_t)n, ",thread");
	if (o->simple_names)
		snprintf(buf + n, len - (size_t)n, ",simple");
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int agent_client_record(pid_t pid, const struct record_options *o, struct profile **ret,
			struct diag *d)
{
	char opts[512], line[600], *data = NULL;
	size_t len = 0;
	uint64_t end = o->duration_ns ? mono_ns() + o->duration_ns : 0;
	int err;

	/* A backstop: should we die, the agent ends the session itself. */
	format_options(o, o->duration_ns ? o->duration_ns + 30000000000ull : 0, opts,
		       sizeof(opts));
	snprintf(line, sizeof(line), "start %s", opts);
	err = agent_client_request(pid, line, &data, &len, d);
	free(data);
	data = NULL;
	if (err < 0)
		return err;
	while ((!end || mono_ns() < end) && !(o->stop && *o->stop) && kill(pid, 0) == 0)
		sleep_ms(20);
	err = agent_client_request(pid, "stop output=pprof", &data, &len, d);
	if (err < 0)
		return err;
	err = pprof_read(data, len, ret, d);
	free(data);
	return err;
}

/* libnprof.so: $NPROF_AGENT, else beside the nprof binary, else in
 * ../lib/nprof/ from it. */
static int find_agent(char *buf, size_t len, struct diag *d)
{
	const char *env = getenv("NPROF_AGENT");
	char exe[PATH_MAX];
	ssize_t n;
	char *slash;

	if (env && *env) {
		if (access(env, R_OK) == 0) {
			snprintf(buf, len, "%s", env);
			return 0;
		}
		return diag_set(d, -ENOENT, "NPROF_AGENT=%s: %s", env, strerror(errno));
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return diag_set(d, -errno, "cannot find nprof's own path: %s", strerror(errno));
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	if (snprintf(buf, len, "%.3000s/libnprof.so", exe) < (int)len && access(buf, R_OK) == 0)
		return 0;
	if (snprintf(buf, len, "%.3000s/../lib/nprof/libnprof.so", exe) < (int)len &&
	    access(buf, R_OK) == 0)
		return 0;
	return diag_set(d, -ENOENT,
			"cannot find libnprof.so beside %s or in ../lib/nprof; set NPROF_AGENT=PATH",
			exe);
}

static int read_file(const char *path, char **ret, size_t *ret_len)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return -errno;
	do {
		if (len + 65536 > cap) {
			char *nb = realloc(buf, cap = cap ? cap * 2 : 262144);

			if (!nb) {
				free(buf);
				fclose(f);
				return -ENOMEM;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	*ret = buf;
	*ret_len = len;
	return 0;
}

int agent_client_record_command(char **argv, const struct record_options *o,
				pid_t *ret_pid, struct profile **ret, struct diag *d)
{
	char agent[PATH_MAX], preload[PATH_MAX * 2], opts[512], start[PATH_MAX + 600];
	char dir[] = "/tmp/nprof-record.XXXXXX", file[sizeof(dir) + 32];
	const char *old = getenv("LD_PRELOAD");
	struct spawned child = { .pid = -1, .go_fd = -1, .err_fd = -1 };
	uint64_t end = o->duration_ns ? mono_ns() + o->duration_ns : 0;
	char *data = NULL;
	size_t len = 0;
	struct stat st;
	int err;

	err = find_agent(agent, sizeof(agent), d);
	if (err < 0)
		return err;
	if (!mkdtemp(dir))
		return diag_set(d, -errno, "cannot create a directory in /tmp: %s", strerror(errno));
	snprintf(file, sizeof(file), "%s/profile.pb.gz", dir);
	/* The command may run as another user (setuid) or drop privileges:
	 * let it write there. */
	chmod(dir, 0777);
	snprintf(preload, sizeof(preload), "%s%s%s", agent, old && *old ? ":" : "",
		 old ? old : "");
	format_options(o, o->duration_ns, opts, sizeof(opts));
	snprintf(start, sizeof(start), "%s,output=pprof,file=%s", opts, file);
	setenv("LD_PRELOAD", preload, 1);
	setenv("NPROF_START", start, 1);
	err = spawned_start(argv, &child, d);
	if (old)
		setenv("LD_PRELOAD", old, 1);
	else
		unsetenv("LD_PRELOAD");
	unsetenv("NPROF_START");
	if (err < 0)
		goto out;
	*ret_pid = child.pid;
	spawned_release(&child);
	/* Until it exits, the duration passes and the agent has written the
	 * file, or we are stopped. */
	for (;;) {
		siginfo_t si = { 0 };

		/* WNOWAIT: spawned_finish reaps it. */
		if (waitid(P_PID, (id_t)child.pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == child.pid)
			break;
		if (o->stop && *o->stop)
			break;
		if (end && mono_ns() >= end && stat(file, &st) == 0)
			break;
		if (end && mono_ns() >= end + 10000000000ull)
			break; /* the agent never wrote: give up on it */
		sleep_ms(20);
	}
	/* Ends it with SIGTERM: its agent writes the profile first. */
	spawned_finish(&child, 8000);
	if (child.exec_error) {
		err = diag_set(d, child.exec_error, "cannot run '%s': %s", argv[0],
			       strerror(-child.exec_error));
		goto out;
	}
	err = read_file(file, &data, &len);
	if (err < 0) {
		err = diag_set(d, err,
			       "'%s' ended without writing a profile (%s): a program linked "
			       "statically, or one that ends with _exit(), cannot be recorded by the agent",
			       argv[0], strerror(-err));
		goto out;
	}
	err = pprof_read(data, len, ret, d);
out:
	free(data);
	unlink(file);
	rmdir(dir);
	return err;
}
