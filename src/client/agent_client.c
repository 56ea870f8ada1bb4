/* agent_client: see agent_client.h. */
#include "client/agent_client.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/array.h"
#include "base/clock.h"
#include "base/hex.h"
#include "base/proc.h"
#include "output/pprof.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5; older headers lack it */
#endif

#define MAX_REPLY (1u << 30)
#define CONNECT_TIMEOUT_S 10
#define IO_TIMEOUT_S 30

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
	unsigned n = 0;
	size_t cap = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *at = strstr(line, " @" AGENT_CLIENT_SOCKET_PREFIX);
		char *end;
		long pid;

		if (!at)
			continue;
		pid = strtol(at + 2 + strlen(AGENT_CLIENT_SOCKET_PREFIX), &end, 10);
		if (pid <= 0 || pid > INT32_MAX || (*end != '\n' && *end != '\0' && *end != ' '))
			continue;
		if (array_reserve(&v, &cap, n + 1, sizeof(*v)) < 0) {
			free(v);
			fclose(f);
			return -ENOMEM;
		}
		v[n++] = (pid_t)pid;
	}
	fclose(f);
	if (n)
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

/* pid's real, effective and saved uids, from /proc/PID/status. */
static int read_uids(pid_t pid, uid_t uids[3])
{
	char path[64], *buf = NULL;
	const char *u;
	unsigned r, e, s;
	size_t len = 0;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	err = proc_read_file(path, 1u << 16, &buf, &len);
	if (err < 0)
		return err == -ENOENT ? -ESRCH : err;
	u = strstr(buf, "\nUid:");
	err = u && sscanf(u + 5, "%u %u %u", &r, &e, &s) == 3 ? 0 : -EPROTO;
	free(buf);
	if (err < 0)
		return err;
	uids[0] = r;
	uids[1] = e;
	uids[2] = s;
	return 0;
}

/* Whether the process behind the peer's credentials still runs: 0 (yes,
 * or this kernel cannot tell), -ESRCH (it has exited). */
static int peer_alive(int fd)
{
	int pidfd = -1, err = 0;
	socklen_t len = sizeof(pidfd);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0)
		/* ENOPROTOOPT before 6.5; a maker that has exited: EINVAL
		 * or ESRCH before 6.15, a pidfd of a dead process since. */
		return errno == ESRCH || errno == EINVAL ? -ESRCH : 0;
	if (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0 && errno == ESRCH)
		err = -ESRCH; /* EPERM: alive, not ours to signal */
	close(pidfd);
	return err;
}

/* The peer check of agent_client_connect, on a connected fd. */
static int check_peer(int fd, pid_t pid, struct diag *d)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	uid_t uids[3];
	int err;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0)
		return diag_set(d, -errno, "cannot tell who holds PID %d's agent socket: %s",
				(int)pid, strerror(errno));
	if (cred.pid != pid) {
		if (cred.pid <= 0)
			return diag_set(d, -ENOTUNIQ,
					"@" AGENT_CLIENT_SOCKET_PREFIX "%d is not PID %d's agent: "
					"the name is held by a process outside this pid "
					"namespace (uid %u)",
					(int)pid, (int)pid, (unsigned)cred.uid);
		return diag_set(d, -ENOTUNIQ,
				"@" AGENT_CLIENT_SOCKET_PREFIX "%d is not PID %d's agent: the name "
				"is held by PID %d (uid %u)",
				(int)pid, (int)pid, (int)cred.pid, (unsigned)cred.uid);
	}
	if (peer_alive(fd) == -ESRCH)
		return diag_set(d, -ENOTUNIQ,
				"@" AGENT_CLIENT_SOCKET_PREFIX "%d is not PID %d's agent: the name "
				"is held by a socket that an earlier PID %d (uid %u) made before "
				"it exited",
				(int)pid, (int)pid, (int)cred.pid, (unsigned)cred.uid);
	err = read_uids(pid, uids);
	if (err == -ESRCH)
		return diag_set(d, -ESRCH, "no process with PID %d", (int)pid);
	if (err < 0)
		return diag_set(d, err, "cannot read /proc/%d/status to check its agent: %s",
				(int)pid, strerror(-err));
	if (cred.uid != 0 && cred.uid != uids[0] && cred.uid != uids[1] && cred.uid != uids[2])
		return diag_set(d, -ENOTUNIQ,
				"@" AGENT_CLIENT_SOCKET_PREFIX "%d is not PID %d's agent: the name "
				"is held by PID %d as uid %u, and PID %d runs as uid %u",
				(int)pid, (int)pid, (int)cred.pid, (unsigned)cred.uid, (int)pid,
				(unsigned)uids[1]);
	return 0;
}

int agent_client_connect(pid_t pid, struct diag *d)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct timeval connect_tv = { CONNECT_TIMEOUT_S, 0 }, io_tv = { IO_TIMEOUT_S, 0 };
	int fd, n, err;

	if (pid <= 0)
		return diag_set(d, -ESRCH, "no process with PID %d", (int)pid);
	n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, AGENT_CLIENT_SOCKET_PREFIX "%d",
		     (int)pid);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return diag_set(d, -errno, "socket: %s", strerror(errno));
	/* connect(2) waits for room in the listener's backlog, for as long
	 * as the send timeout: a listener that never accepts must not hold
	 * us forever. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &connect_tv, sizeof(connect_tv));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &io_tv, sizeof(io_tv));
	if (connect(fd, (struct sockaddr *)&a,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) < 0) {
		err = -errno;
		if (err == -ECONNREFUSED || err == -ENOENT)
			err = diag_set(d, -ENOENT,
				       "PID %d has no nprof agent listening (@" AGENT_CLIENT_SOCKET_PREFIX
				       "%d)", (int)pid, (int)pid);
		else
			err = diag_set(d, err == -EAGAIN ? -ETIMEDOUT : err,
				       "connecting to PID %d's agent (@" AGENT_CLIENT_SOCKET_PREFIX
				       "%d): %s", (int)pid, (int)pid,
				       strerror(err == -EAGAIN ? ETIMEDOUT : -err));
		goto out;
	}
	/* Nothing is sent before the peer is known to be pid itself. */
	err = check_peer(fd, pid, d);
	if (err < 0)
		goto out;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &io_tv, sizeof(io_tv));
	return fd;
out:
	close(fd);
	return err;
}

int agent_client_probe(pid_t pid, struct diag *d)
{
	struct diag cd;
	int fd;

	/* "No agent" is an answer, not an error: d keeps no message for
	 * it, so that the caller's next step can say what went wrong. */
	diag_clear(&cd);
	fd = agent_client_connect(pid, &cd);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return diag_set(d, fd, "%s", cd.msg);
	close(fd);
	return 1;
}

/* An agent in a user namespace below ours sees us as the overflow uid
 * (root is not mapped there), and asks us to prove that we may ptrace
 * its process: "challenge ADDR NONCE\n", the nonce to write at ADDR in
 * its memory (agent/control.c). Returns 0 (answered, or no challenge
 * came) or -errno with d set. */
static int answer_challenge(int fd, pid_t pid, struct diag *d)
{
	static const char word[] = "challenge ";
	char line[128];
	unsigned long long addr;
	uint8_t nonce[16];
	char hex[40];
	size_t got = 0;
	ssize_t n = recv(fd, line, sizeof(word) - 1, MSG_PEEK | MSG_WAITALL);
	struct iovec local = { nonce, sizeof(nonce) }, remote;

	if (n != (ssize_t)sizeof(word) - 1 || memcmp(line, word, sizeof(word) - 1))
		return 0;
	while (got < sizeof(line) - 1 && (got == 0 || line[got - 1] != '\n')) {
		n = recv(fd, line + got, 1, 0);
		if (n <= 0)
			return diag_set(d, -EPROTO, "PID %d's agent broke off its challenge", (int)pid);
		got += (size_t)n;
	}
	line[got] = '\0';
	if (sscanf(line, "challenge %llx %39s", &addr, hex) != 2 || strlen(hex) != 32 ||
	    hex_decode(hex, sizeof(nonce), nonce) < 0)
		return diag_set(d, -EPROTO, "PID %d's agent sent a challenge that is not one",
				(int)pid);
	remote.iov_base = (void *)(uintptr_t)addr;
	remote.iov_len = sizeof(nonce);
	if (process_vm_writev(pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(nonce))
		return diag_set(d, -EACCES,
				"PID %d's agent runs in a user namespace where we are not mapped, "
				"and we may not ptrace PID %d to prove who we are (%s): run nprof "
				"as its user or as root",
				(int)pid, (int)pid, strerror(errno));
	if (send(fd, "proved\n", 7, MSG_NOSIGNAL) != 7)
		return diag_set(d, -errno, "PID %d's agent: %s", (int)pid, strerror(errno));
	return 0;
}

int agent_client_request(pid_t pid, const char *line, char **ret_data, size_t *ret_len,
			 struct diag *d)
{
	char *buf = NULL;
	size_t len = 0, cap = 0, off = 0, plen = 0;
	int fd = agent_client_connect(pid, d), err = 0;

	if (fd < 0)
		return fd;
	if (send(fd, line, strlen(line), MSG_NOSIGNAL) < 0 || send(fd, "\n", 1, MSG_NOSIGNAL) < 0) {
		err = diag_set(d, -errno, "PID %d's agent: %s", (int)pid, strerror(errno));
		goto out;
	}
	err = answer_challenge(fd, pid, d);
	if (err < 0)
		goto out;
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
			err = diag_set(d, errno == EAGAIN ? -ETIMEDOUT : -errno,
				       "PID %d's agent did not answer: %s", (int)pid,
				       strerror(errno == EAGAIN ? ETIMEDOUT : errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	err = agent_reply_parse(buf, len, pid, &off, &plen, d);
	if (err < 0)
		goto out;
	memmove(buf, buf + off, plen);
	buf[plen] = '\0';
	*ret_data = buf;
	*ret_len = plen;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return err;
}

int agent_client_status(pid_t pid, struct agent_status *ret, struct diag *d)
{
	struct agent_status st;
	char *data = NULL;
	size_t len = 0;
	int err = agent_client_request(pid, "status", &data, &len, d);

	if (err < 0)
		return err;
	err = agent_status_parse(data, len, &st);
	free(data);
	if (err < 0)
		return diag_set(d, err, "PID %d's agent sent a status that is not one", (int)pid);
	if (st.pid != pid)
		return diag_set(d, -EPROTO, "PID %d's agent says it serves PID %d", (int)pid,
				(int)st.pid);
	*ret = st;
	return 0;
}

void agent_client_format_options(const struct record_options *o, uint64_t duration_ns,
				 char *buf, size_t len)
{
	const char *event = o->event ? o->event : "cpu";
	const struct event_def *e = event_find(event);
	int n = snprintf(buf, len, "event=%s", event);

	if (o->interval)
		n += snprintf(buf + n, len - (size_t)n,
			      e && e->interval_kind == EVENT_INTERVAL_BYTES ? ",interval=%llu"
									   : ",interval=%lluns",
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

int agent_client_record(pid_t pid, const struct record_options *o, struct profile **ret,
			struct diag *d)
{
	char opts[512], line[600], *data = NULL;
	size_t len = 0;
	uint64_t began = clock_ns(CLOCK_MONOTONIC);
	uint64_t end = o->duration_ns ? began + o->duration_ns : 0;
	int err;

	/* A backstop: should we die (killed with the nprofd that ran us,
	 * say), the agent ends the session itself 2 s past its duration;
	 * had we only been slow, our stop still gets that session's
	 * profile (the agent keeps the last one). */
	agent_client_format_options(o, o->duration_ns ? o->duration_ns + 2000000000ull : 0,
				    opts, sizeof(opts));
	snprintf(line, sizeof(line), "start %s", opts);
	err = agent_client_request(pid, line, &data, &len, d);
	free(data);
	data = NULL;
	if (err < 0)
		return err;
	while ((!end || clock_ns(CLOCK_MONOTONIC) < end) && !(o->stop && *o->stop) &&
	       (kill(pid, 0) == 0 || errno == EPERM)) {
		if (o->progress) {
			/* The agent counts its samples itself: time alone. */
			struct record_progress pr = {
				.elapsed_ns = o->duration_ns - (end - clock_ns(CLOCK_MONOTONIC)),
				.duration_ns = o->duration_ns,
			};

			if (!end)
				pr.elapsed_ns = clock_ns(CLOCK_MONOTONIC) - began;
			o->progress(o->progress_arg, &pr);
		}
		sleep_ms(20);
	}
	err = agent_client_request(pid, "stop output=pprof", &data, &len, d);
	/* Late past the backstop, the session has ended on its own: the
	 * agent keeps its profile for "dump". */
	if (err < 0 && d && strstr(d->msg, "no profile is running")) {
		diag_clear(d);
		err = agent_client_request(pid, "dump output=pprof", &data, &len, d);
	}
	if (err < 0)
		return err;
	err = pprof_read(data, len, ret, d);
	free(data);
	return err;
}
