/* control: the agent's own thread. It serves the control socket
 * (abstract unix socket "@nprof-agent-PID", one command line per
 * connection, only from the same user or root), drains samples every
 * AGENT_TICK_MS while a session runs, and writes the profile when a
 * fatal signal arrives. Idle, it sleeps in poll(2) and costs nothing.
 *
 * Protocol (docs/agent.md): the client sends one line,
 *   status | start OPTIONS | stop [OPTIONS] | dump [OPTIONS] | stacks [json]
 *   | heap ... | detach
 * and gets "ok[ LEN]\n" (then LEN bytes of the profile for stop, of a
 * profile snapshot -- the profile so far -- for dump, of a thread dump for
 * stacks: stacks.c)
 * or "error MESSAGE\n", then the connection closes. A peer that is neither
 * this process's user nor root is refused, but for one that the user
 * namespace hides (peer_proves_access). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/hot/fatal.h"
#include "agent/hot/hot.h"
#include "base/hex.h"

#define MAX_LINE 4096
#define IO_TIMEOUT_S 5

int agent_session_last(struct profile **ret, struct diag *d);

static struct {
	pthread_mutex_t lock;
	bool started;
	bool leaving; /* "detach" answered: the thread ends after this request */
	int listen_fd, wake_fd;
	pthread_t thread;
} C = { .lock = PTHREAD_MUTEX_INITIALIZER, .listen_fd = -1, .wake_fd = -1 };

/* stderr as it was at load: a program may close it before the agent's
 * last word (coreutils' close_stdout does, at exit, before destructors
 * run), and the line saying where the profile went must still reach the
 * user. fd 2 is used while it is open, so a redirection stays honoured. */
static int saved_stderr = -1;

void agent_log_keep_stderr(void)
{
	if (saved_stderr < 0)
		saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 10);
}

void agent_log(const char *fmt, ...)
{
	int fd = fcntl(STDERR_FILENO, F_GETFD) >= 0 ? STDERR_FILENO : saved_stderr;
	char buf[1024];
	int n;
	va_list ap;

	if (getenv("NPROF_QUIET"))
		return;
	n = snprintf(buf, sizeof(buf), "nprof-agent[%d]: ", (int)getpid());
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (fd < 0 || write(fd, buf, (size_t)n) < 0)
		return;
}

void agent_control_wake(void)
{
	uint64_t one = 1;

	if (C.wake_fd >= 0 && write(C.wake_fd, &one, sizeof(one)) < 0)
		return;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

__attribute__((format(printf, 2, 3)))
static void reply(int fd, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		write_all(fd, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* Sends "ok LEN\n" and the profile in the format the options name
 * (pprof by default: the CLI reads it back). */
static void send_profile(int fd, const struct profile *p, const struct agent_options *o)
{
	enum output_format f = o->have_format ? o->format : OUTPUT_PPROF;
	char *data = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&data, &len);
	int err;

	if (!m) {
		reply(fd, "error out of memory\n");
		return;
	}
	err = output_write(p, f, &o->out, m);
	if (fclose(m) != 0 || err < 0) {
		reply(fd, "error cannot format the profile: %s\n", strerror(err < 0 ? -err : errno));
	} else {
		reply(fd, "ok %zu\n", len);
		write_all(fd, data, len);
	}
	free(data);
}

static void cmd_status(int fd)
{
	struct agent_options o;
	enum event_id eff;
	uint64_t samples = 0;

	char http[96], token[PATH_MAX];

	reply(fd, "ok\nnprof-agent 1\npid %d\nevents cpu itimer wall alloc heap lock\n", (int)getpid());
	if (agent_http_address(http, sizeof(http)) == 0) {
		reply(fd, "http %s\n", http);
		/* Where the endpoint's token is (not the token): a client shows it
		 * to a user, who may read it only if the process's owner may. */
		if (agent_http_token_path(token, sizeof(token)) == 0 && token[0])
			reply(fd, "http-token %s\n", token);
	}
	if (agent_session_info(&o, &eff, &samples))
		reply(fd, "state running event=%s effective=%s interval=%llu samples=%llu\n",
		      event_name(o.event), event_name(eff),
		      (unsigned long long)(o.interval_ns ? o.interval_ns : 0),
		      (unsigned long long)samples);
	else
		reply(fd, "state idle\n");
}

/* "stacks [json]": every thread's stack, taken in its own signal handler
 * (stacks.c); what nprof stacks PID asks an agent for. */
static void cmd_stacks(int fd, const char *args)
{
	char *buf = NULL;
	size_t len = 0;
	struct diag d;

	diag_clear(&d);
	if (args && *args && strcmp(args, "json")) {
		reply(fd, "error stacks takes nothing or 'json', not '%s'\n", args);
		return;
	}
	if (agent_stacks_dump(args && *args, &buf, &len, &d) < 0) {
		reply(fd, "error %s\n", d.msg);
		return;
	}
	reply(fd, "ok %zu\n", len);
	write_all(fd, buf, len);
	free(buf);
}

/* "heap enable [interval=N] | disable | status | dump [output=F]"
 * (heap.c): what nprof heap PID ... asks. */
static void cmd_heap(int fd, char *args)
{
	char *opts = args ? strchr(args, ' ') : NULL, text[1024];
	struct agent_options o;
	struct profile *p = NULL;
	struct diag d;

	diag_clear(&d);
	if (opts)
		*opts++ = '\0';
	if (agent_heap_request(args ? args : "", opts, text, sizeof(text), &p, &o, &d) < 0)
		reply(fd, "error %s\n", d.msg);
	else if (p)
		send_profile(fd, p, &o);
	else
		reply(fd, "ok\n%s\n", text);
	profile_free(p);
}

/* `nprof detach`: every session ended (its profile dropped), heap
 * profiling off (its hooks undone), then this thread and its socket go;
 * the library stays mapped, inert, until nprof_control_start() (which
 * `nprof attach` calls) brings it back. */
static void cmd_detach(int fd)
{
	struct profile *p = NULL;
	struct diag d;
	bool session = agent_session_info(NULL, NULL, NULL), heap = agent_heap_active();
	unsigned unhooked;

	diag_clear(&d);
	if (session && agent_session_stop(&p, &d) < 0) {
		reply(fd, "error %s\n", d.msg);
		return;
	}
	profile_free(p);
	if (heap && agent_heap_disable(&d) < 0) {
		reply(fd, "error %s\n", d.msg);
		return;
	}
	unhooked = agent_mem_unhook();
	C.leaving = true;
	reply(fd, "ok\n%s%s%u call sites put back, the agent is idle, its control socket "
		  "closed\n",
	      session ? "its session ended (profile dropped), " : "",
	      heap ? "heap profiling off, " : "", unhooked);
}

static void handle(int fd, char *line)
{
	char *args = strchr(line, ' ');
	struct agent_options o;
	struct profile *p = NULL;
	struct diag d;

	diag_clear(&d);
	if (args)
		*args++ = '\0';
	if (!strcmp(line, "status")) {
		cmd_status(fd);
		return;
	}
	if (!strcmp(line, "stacks")) {
		cmd_stacks(fd, args);
		return;
	}
	if (!strcmp(line, "heap")) {
		cmd_heap(fd, args);
		return;
	}
	if (!strcmp(line, "detach")) {
		cmd_detach(fd);
		return;
	}
	if (agent_options_parse(args, &o, &d) < 0) {
		reply(fd, "error %s\n", d.msg);
		return;
	}
	if (!strcmp(line, "start")) {
		if (agent_session_start(&o, &d) < 0)
			reply(fd, "error %s\n", d.msg);
		else
			reply(fd, "ok\n");
	} else if (!strcmp(line, "stop") || !strcmp(line, "dump")) {
		int err = !strcmp(line, "stop") ? agent_session_stop(&p, &d)
						: agent_session_snapshot(&p, &d);

		if (err == -ENOENT && line[0] == 'd')
			err = agent_session_last(&p, &d);
		if (err < 0) {
			reply(fd, "error %s\n", d.msg);
			return;
		}
		if (o.file[0] && agent_write_profile(p, &o, &d) < 0)
			reply(fd, "error %s\n", d.msg);
		else
			send_profile(fd, p, &o);
		profile_free(p);
	} else {
		reply(fd, "error unknown command '%s'; use status, start, stop, dump, stacks, heap "
			  "or detach\n", line);
	}
}

/* Reads what the peer sends up to its first newline (or len - 1 bytes,
 * or the end, or the socket's timeout) into line, NUL-terminated: the
 * bytes read. */
static size_t read_line(int fd, char *line, size_t len)
{
	size_t got = 0;

	while (got < len - 1) {
		ssize_t n = recv(fd, line + got, len - 1 - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (memchr(line, '\n', got))
			break;
	}
	line[got] = '\0';
	return got;
}

/* Reads the small file path into buf (len bytes, NUL-terminated): its
 * length, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n;
}

/* Whether uid is what the kernel shows for a user not mapped in our user
 * namespace: the overflow uid (65534 unless changed), in a user namespace
 * below the first (whose map is all of "0 0 4294967295"). In the first
 * one, 65534 is user nobody, no one hidden. */
static bool unmapped_uid(uid_t uid)
{
	char buf[64];
	unsigned long inside, outside, count;

	if (read_small("/proc/self/uid_map", buf, sizeof(buf)) <= 0 ||
	    (sscanf(buf, "%lu %lu %lu", &inside, &outside, &count) == 3 && inside == 0 &&
	     outside == 0 && count == 4294967295ul))
		return false;
	if (read_small("/proc/sys/kernel/overflowuid", buf, sizeof(buf)) <= 0)
		return uid == 65534;
	return uid == (uid_t)strtoul(buf, NULL, 10);
}

/* A peer of a user namespace above ours shows as the overflow uid: it
 * may be root, whom a process of a user namespace (`unshare -Ur`) does
 * not see as uid 0. It is served when it proves that it may ptrace this
 * process -- what root and our own user may, and nobody else: it writes
 * the nonce we name at the address we name in our memory
 * (process_vm_writev), then says "proved". The client's side is
 * agent_client.c's answer_challenge. */
static bool peer_proves_access(int fd)
{
	static uint8_t proof[16]; /* written by the peer, across processes */
	uint8_t nonce[16];
	char hex[2 * sizeof(nonce) + 1], line[16];
	bool ok;

	if (getrandom(nonce, sizeof(nonce), 0) != (ssize_t)sizeof(nonce))
		return false;
	memset(proof, 0, sizeof(proof));
	hex_encode(nonce, sizeof(nonce), hex);
	reply(fd, "challenge %p %s\n", (void *)proof, hex);
	read_line(fd, line, sizeof(line));
	ok = !strcmp(line, "proved\n") &&
	     !memcmp((const void *)(volatile uint8_t *)proof, nonce, sizeof(nonce));
	memset(proof, 0, sizeof(proof));
	return ok;
}

static void serve(int lfd)
{
	struct timeval tv = { IO_TIMEOUT_S, 0 };
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	char line[MAX_LINE];
	size_t got = 0;
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
		close(fd);
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	got = read_line(fd, line, sizeof(line));
	line[strcspn(line, "\r\n")] = '\0';
	/* The socket is abstract (no file permissions): the peer's kernel-
	 * checked credentials are the only gate. Checked after reading the
	 * request, so that closing does not reset the connection before the
	 * refusal reaches the peer. */
	if (cred.uid != 0 && cred.uid != geteuid() &&
	    (!unmapped_uid(cred.uid) || !peer_proves_access(fd)))
		reply(fd, "error permission denied: this agent serves uid %d and root, not uid %d\n",
		      (int)geteuid(), (int)cred.uid);
	else if (got)
		handle(fd, line);
	close(fd);
}

static void *control_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "nprof-control"); /* in thread dumps */
	for (;;) {
		struct pollfd pfd[2] = { { C.wake_fd, POLLIN, 0 }, { C.listen_fd, POLLIN, 0 } };
		/* Heap profiling ticks too: modules after a dlopen. */
		bool running = agent_session_info(NULL, NULL, NULL) || agent_heap_active();
		int n = poll(pfd, C.listen_fd >= 0 ? 2 : 1, running ? AGENT_TICK_MS : -1);

		if (n > 0 && (pfd[0].revents & POLLIN)) {
			uint64_t v;

			if (read(C.wake_fd, &v, sizeof(v)) < 0)
				continue;
			if (atomic_load(&hot_fatal.signo)) {
				char why[64];

				snprintf(why, sizeof(why), "the process was ended by signal %d (%s)",
					 atomic_load(&hot_fatal.signo),
					 strsignal(atomic_load(&hot_fatal.signo)));
				agent_session_finish(why);
				atomic_store(&hot_fatal.done, 1);
			}
		}
		if (n > 0 && C.listen_fd >= 0 && (pfd[1].revents & POLLIN))
			serve(C.listen_fd);
		if (C.leaving)
			break;
		agent_session_tick();
	}
	/* Detached: nothing of the agent runs any more. */
	pthread_mutex_lock(&C.lock);
	atomic_store(&hot_fatal.armed, 0);
	hot_fatal.wake_fd = -1;
	close(C.wake_fd);
	if (C.listen_fd >= 0)
		close(C.listen_fd);
	C.wake_fd = C.listen_fd = -1;
	C.leaving = false;
	C.started = false;
	pthread_detach(pthread_self());
	pthread_mutex_unlock(&C.lock);
	return NULL;
}

static int listen_socket(struct diag *d)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t len;
	int fd, n;

	n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, AGENT_SOCKET_PREFIX "%d",
		     (int)getpid());
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return diag_set(d, -errno, "control socket: %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)&a, len) < 0 || listen(fd, 8) < 0) {
		int err = -errno;

		close(fd);
		return diag_set(d, err, "control socket @%s: %s", a.sun_path + 1, strerror(-err));
	}
	return fd;
}

int agent_control_start(struct diag *d)
{
	int err = 0;

	pthread_mutex_lock(&C.lock);
	if (C.started)
		goto out;
	C.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (C.wake_fd < 0) {
		err = diag_set(d, -errno, "eventfd: %s", strerror(errno));
		goto out;
	}
	C.listen_fd = getenv("NPROF_CONTROL") && !strcmp(getenv("NPROF_CONTROL"), "0")
			      ? -1 : listen_socket(d);
	if (C.listen_fd < 0 && C.listen_fd != -1)
		C.listen_fd = -1; /* still tick and write at exit without it */
	hot_fatal.wake_fd = C.wake_fd;
	err = -agent_thread_create(&C.thread, control_main, NULL);
	if (err < 0) {
		diag_set(d, err, "cannot start the agent's control thread: %s", strerror(-err));
		close(C.wake_fd);
		C.wake_fd = -1;
		if (C.listen_fd >= 0)
			close(C.listen_fd);
		C.listen_fd = -1;
		goto out;
	}
	atomic_store(&hot_fatal.armed, 1);
	C.started = true;
out:
	pthread_mutex_unlock(&C.lock);
	return err;
}

/* After fork: the child has no control thread. */
void agent_control_after_fork(void);
void agent_control_after_fork(void)
{
	pthread_mutex_init(&C.lock, NULL);
	if (C.listen_fd >= 0)
		close(C.listen_fd);
	if (C.wake_fd >= 0)
		close(C.wake_fd);
	C.listen_fd = C.wake_fd = -1;
	C.started = false;
	atomic_store(&hot_fatal.armed, 0);
	hot_fatal.wake_fd = -1;
}
