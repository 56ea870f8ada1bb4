/* threads_dump: the names tables, and real dumps of a forked child whose
 * threads are parked in known places (read on a pipe, a CPU loop), through
 * the library call the daemon will use; the child must run on, untraced;
 * the text and JSON writers; a missing PID. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/threads_dump.h"
#include "test.h"

static int pipe_fds[2];
static volatile unsigned long spins;

__attribute__((noinline)) static void child_block_in_read(void)
{
	char c;

	while (read(pipe_fds[0], &c, 1) != 0)
		;
	__asm__ volatile("");
}

__attribute__((noinline)) static void child_spin(void)
{
	for (;;) {
		spins++;
		__asm__ volatile("");
	}
}

static void *spinner(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "td-spinner");
	child_spin();
	return NULL;
}

static pid_t start_child(int ready_fd)
{
	pid_t pid = fork();

	if (pid == 0) {
		pthread_t t;

		pthread_create(&t, NULL, spinner, NULL);
		if (write(ready_fd, "r", 1) != 1)
			_exit(1);
		child_block_in_read();
		_exit(0);
	}
	return pid;
}

static const struct thread_info *find(const struct thread_dump *td, const char *name)
{
	for (size_t i = 0; i < td->nthreads; i++)
		if (!strcmp(td->threads[i].name, name))
			return &td->threads[i];
	return NULL;
}

static bool has_frame(const struct thread_info *t, const char *fn)
{
	for (unsigned i = 0; t && i < t->nframes; i++)
		if (!strcmp(t->frames[i].name, fn))
			return true;
	return false;
}

static bool traced_or_stopped(pid_t pid)
{
	char path[64], buf[4096];
	FILE *f;
	bool bad = false;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return true;
	while (fgets(buf, sizeof(buf), f)) {
		if (!strncmp(buf, "State:", 6)) {
			const char *v = buf + 6;

			while (*v == ' ' || *v == '\t')
				v++;
			if (*v == 't' || *v == 'T')
				bad = true;
		}
		if (!strncmp(buf, "TracerPid:", 10) && strtol(buf + 10, NULL, 10) != 0)
			bad = true;
	}
	fclose(f);
	return bad;
}

int main(void)
{
	struct thread_dump *td = NULL;
	struct diag d;
	int ready[2], err;
	char c;
	pid_t child;

	CHECK_STR(thread_syscall_name(SYS_read), "read", "syscall 0 is read");
	CHECK_STR(thread_syscall_name(SYS_futex), "futex", "futex by number");
	CHECK(thread_syscall_name(-1) == NULL && thread_syscall_name(100000) == NULL,
	      "out-of-range syscall numbers have no name");
	CHECK_STR(thread_state_name('D'), "disk wait", "D is disk wait");
	CHECK_STR(thread_state_name('S'), "sleeping", "S is sleeping");

	diag_clear(&d);
	err = thread_dump_take(999999, NULL, &td, &d);
	CHECK(err == -ESRCH && strstr(d.msg, "no process with PID 999999"),
	      "a missing PID: -ESRCH, \"%s\"", d.msg);

	if (pipe(pipe_fds) || pipe(ready))
		return 1;
	child = start_child(ready[1]);
	if (read(ready[0], &c, 1) != 1)
		return 1;
	usleep(100000); /* the main thread reaches read() */

	for (int round = 0; round < 3; round++) {
		const struct thread_info *m, *s;

		diag_clear(&d);
		td = NULL;
		err = thread_dump_take(child, NULL, &td, &d);
		CHECK(err == 0 && td, "round %d: dump taken (%s)", round, d.msg);
		if (!td)
			break;
		CHECK(td->nthreads == 2 && td->ntaken == 2, "round %d: 2 threads, both taken", round);
		m = find(td, "threads_dump_te");
		s = find(td, "td-spinner");
		CHECK(m && m->sc == THREAD_SC_IN && m->syscall_nr == SYS_read,
		      "round %d: the main thread is in read", round);
		CHECK(m && has_frame(m, "child_block_in_read") && has_frame(m, "main"),
		      "round %d: main -> child_block_in_read", round);
		CHECK(m && !m->truncated, "round %d: the main stack is complete", round);
		CHECK(s && s->state == 'R' && has_frame(s, "child_spin") &&
			      has_frame(s, "start_thread"),
		      "round %d: the spinner is running in child_spin", round);
		CHECK(m && s && m->pause_ns > 0 && s->pause_ns > 0 && td->pause_max_ns >= m->pause_ns,
		      "round %d: pauses measured (max %llu ns)", round,
		      (unsigned long long)td->pause_max_ns);
		CHECK(!traced_or_stopped(child), "round %d: the child runs on, untraced", round);
		if (round == 0) {
			char *text = NULL, *json = NULL;
			size_t tl = 0, jl = 0;
			FILE *f = open_memstream(&text, &tl);

			CHECK(thread_dump_write_text(td, THREAD_DUMP_GROUP, f) == 0, "text written");
			fclose(f);
			CHECK(text && strstr(text, "\"td-spinner\" tid=") &&
				      strstr(text, "\tat child_block_in_read ("),
			      "text has the thread header and frames");
			f = open_memstream(&json, &jl);
			CHECK(thread_dump_write_json(td, f) == 0, "json written");
			fclose(f);
			CHECK(json && json[0] == '{' && strstr(json, "\"name\":\"read\"") &&
				      strstr(json, "\"function\":\"child_spin\""),
			      "json has the syscall and the frames");
			free(text);
			free(json);
		}
		thread_dump_free(td);
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	thread_dump_free(NULL);
	return test_done();
}
