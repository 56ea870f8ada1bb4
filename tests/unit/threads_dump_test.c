/* threads_dump: the names tables, and real dumps of a forked child whose
 * threads are parked in known places (read on a pipe, a CPU loop), through
 * the library call the daemon will use; the child must run on, untraced;
 * the text and JSON writers, and the JSON read back (the same dump, the
 * same text); the agent path with replies in the current and the older
 * schema; a missing PID; replies the reader must refuse. */
#include <errno.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/threads_dump.h"
#include "capture/tracee.h"
#include "symbolize/symbolize.h"
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

/* The child is ready once its spinner has its name: a dump taken before
 * would find an unnamed thread. */
static void *spinner(void *arg)
{
	int ready_fd = (int)(intptr_t)arg;

	pthread_setname_np(pthread_self(), "td-spinner");
	if (write(ready_fd, "r", 1) != 1)
		_exit(1);
	child_spin();
	return NULL;
}

static pid_t start_child(int ready_fd)
{
	pid_t pid = fork();

	if (pid == 0) {
		pthread_t t;

		pthread_create(&t, NULL, spinner, (void *)(intptr_t)ready_fd);
		child_block_in_read();
		_exit(0);
	}
	return pid;
}

/* Waits until the child's main thread sleeps in read(2), as
 * /proc/PID/syscall says, polling for up to 10 s: a fixed pause would be
 * too short on a loaded host. */
static void wait_in_read(pid_t pid)
{
	char path[64], buf[256];

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	for (int i = 0; i < 1000; i++) {
		FILE *f = fopen(path, "r");
		bool in_read = false;

		if (!f) {
			usleep(100000); /* not readable here: the old guess */
			return;
		}
		in_read = fgets(buf, sizeof(buf), f) && strtol(buf, NULL, 10) == SYS_read &&
			  buf[0] != 'r'; /* "running" */
		fclose(f);
		if (in_read)
			return;
		usleep(10000);
	}
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


static char *to_text(const struct thread_dump *td, unsigned flags)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	thread_dump_write_text(td, flags, f);
	fclose(f);
	return out;
}

static char *to_json(const struct thread_dump *td)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	thread_dump_write_json(td, f);
	fclose(f);
	return out;
}

/* The JSON of td read back: the same threads, frames and states, and the
 * same text and JSON written again. */
static void test_roundtrip(const struct thread_dump *td, const char *label)
{
	char *json = to_json(td), *json2 = NULL, *text = NULL, *text2 = NULL;
	struct thread_dump *back = NULL;
	bool same = true;
	int err;

	err = json ? thread_dump_read_json(json, strlen(json), &back) : -ENOMEM;
	CHECK(err == 0 && back, "%s: its JSON reads back (%d)", label, err);
	if (!back) {
		free(json);
		return;
	}
	same = back->pid == td->pid && back->method == td->method &&
	       !strcmp(back->comm, td->comm) && back->nthreads == td->nthreads &&
	       back->ntaken == td->ntaken && back->ngone == td->ngone &&
	       back->nfailed == td->nfailed && back->time_ns == td->time_ns &&
	       back->pause_max_ns == td->pause_max_ns &&
	       (td->exe ? back->exe && !strcmp(back->exe, td->exe) : !back->exe);
	for (size_t i = 0; same && i < td->nthreads; i++) {
		const struct thread_info *a = &td->threads[i], *b = &back->threads[i];

		same = a->tid == b->tid && !strcmp(a->name, b->name) && a->state == b->state &&
		       a->status == b->status && a->err == b->err &&
		       (a->sc == THREAD_SC_IN) == (b->sc == THREAD_SC_IN) &&
		       a->syscall_nr == b->syscall_nr &&
		       !memcmp(a->syscall_args, b->syscall_args, sizeof(a->syscall_args)) &&
		       a->cpu_ns == b->cpu_ns && a->pause_ns == b->pause_ns &&
		       a->nframes == b->nframes && a->truncated == b->truncated;
		for (unsigned j = 0; same && j < a->nframes; j++)
			same = a->frames[j].addr == b->frames[j].addr &&
			       !strcmp(a->frames[j].name, b->frames[j].name) &&
			       a->frames[j].kind == b->frames[j].kind &&
			       a->frames[j].module_offset == b->frames[j].module_offset &&
			       (a->frames[j].module ? b->frames[j].module &&
							  !strcmp(a->frames[j].module, b->frames[j].module)
						    : !b->frames[j].module);
	}
	CHECK(same, "%s: read back, the same process, threads, states and frames", label);
	json2 = to_json(back);
	CHECK(json2 && !strcmp(json, json2), "%s: read back, the same JSON", label);
	text = to_text(td, THREAD_DUMP_ADDRS);
	text2 = to_text(back, THREAD_DUMP_ADDRS);
	CHECK(text && text2 && !strcmp(text, text2), "%s: read back, the same text", label);
	free(json);
	free(json2);
	free(text);
	free(text2);
	thread_dump_free(back);
}

/* What the reader refuses, and what it keeps of an unknown status. */
static void test_reader(void)
{
	static const char *const bad[] = {
		"", "{}", "[]", "{\"threads\":{}}", "{\"threads\":[{}]}",
		"{\"threads\":[{\"tid\":0}]}", "{\"threads\":[{\"tid\":-1}]}",
		"{\"threads\":[{\"tid\":2147483648}]}",
		"{\"threads\":[{\"tid\":5},{\"tid\":5}]}",
		"{\"threads\":[{\"tid\":5,\"frames\":[{\"addr\":12}]}]}",
		"{\"threads\":[{\"tid\":5,\"cpu_ns\":-1}]}",
		"{\"threads\":[{\"tid\":5}]",
	};
	struct thread_dump *td = NULL;
	int err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		td = NULL;
		err = thread_dump_read_json(bad[i], strlen(bad[i]), &td);
		CHECK(err == -EPROTO && !td, "reader refuses '%s'", bad[i]);
	}
	{
		const char *j = "{\"x\":[1,{\"y\":null}],\"threads\":[{\"tid\":7,\"status\":\"odd\","
				"\"frames\":[{\"addr\":\"0x10\"}],\"future\":{\"a\":[true]}},"
				"{\"tid\":8,\"status\":\"failed\",\"errno\":13}]}";

		err = thread_dump_read_json(j, strlen(j), &td);
		CHECK(err == 0 && td && td->nthreads == 2 && td->threads[0].status == THREAD_FAILED &&
			      td->threads[0].err == -EPROTO && td->threads[1].err == -EACCES &&
			      td->threads[0].nframes == 1 && !strcmp(td->threads[0].frames[0].name, "??") &&
			      td->nfailed == 2,
		      "reader: unknown keys skipped, an unknown status failed, errno kept");
		thread_dump_free(td);
	}
}

/* A crowd: enough threads for the /proc reads to run on a thread of
 * their own (THREAD_DUMP_AHEAD_MIN), each blocked in read in a function
 * of its own, more than THREAD_DUMP_WINDOW of them stopped at a time. */
#define CROWD (THREAD_DUMP_AHEAD_MIN + 9)

static void *crowd_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "td-crowd");
	child_block_in_read();
	return NULL;
}

static void test_crowd(void)
{
	struct thread_dump_options o = { 0 };
	struct symbolizer_stats st;
	struct thread_dump *td = NULL;
	unsigned in_read = 0, framed = 0, traced = 0;
	int ready[2];
	struct diag d;
	pid_t child;
	char c;
	int err;

	if (pipe(ready))
		return;
	child = fork();
	if (child == 0) {
		pthread_t t;

		for (int i = 0; i < CROWD; i++)
			if (pthread_create(&t, NULL, crowd_main, NULL))
				_exit(1);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		child_block_in_read();
		_exit(0);
	}
	if (child < 0 || read(ready[0], &c, 1) != 1)
		return;
	/* Every thread in read (the syscall files say "0 ..."), polled
	 * for up to 10 s: a fixed pause would be short on a loaded host. */
	for (int round = 0; round < 1000; round++) {
		pid_t *tids = NULL;
		size_t n = 0, reading = 0;

		if (tracee_list_tids(child, &tids, &n) == 0)
			for (size_t i = 0; i < n; i++) {
				char path[64], buf[64] = "";
				FILE *f;

				snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)child,
					 (int)tids[i]);
				f = fopen(path, "r");
				if (f && fgets(buf, sizeof(buf), f) && !strncmp(buf, "0 ", 2))
					reading++;
				if (f)
					fclose(f);
			}
		free(tids);
		if (reading == CROWD + 1)
			break;
		usleep(10000);
	}
	diag_clear(&d);
	o.sym = symbolizer_new();
	err = o.sym ? thread_dump_take(child, &o, &td, &d) : -ENOMEM;
	CHECK(err == 0 && td && td->nthreads == CROWD + 1, "crowd: %d threads in one dump (%s)",
	      CROWD + 1, d.msg);
	if (o.sym) {
		/* The child maps this test's libraries (libelf, libdw, libz...);
		 * its frames are in this program and libc: only those are read. */
		symbolizer_get_stats(o.sym, &st);
		CHECK(st.modules_parsed >= 1 && st.modules_parsed <= 3,
		      "crowd: only the modules frames land in had their symbols read (%llu)",
		      (unsigned long long)st.modules_parsed);
	}
	for (size_t i = 0; td && i < td->nthreads; i++) {
		const struct thread_info *t = &td->threads[i];

		if (strcmp(t->name, "td-crowd"))
			continue;
		traced += t->status == THREAD_TAKEN && t->pause_ns > 0;
		in_read += t->sc == THREAD_SC_IN && t->syscall_nr == SYS_read;
		framed += has_frame(t, "child_block_in_read") && has_frame(t, "crowd_main");
	}
	/* A thread woken by the last one's interrupt may be between calls:
	 * most, not all, are caught in read. */
	CHECK(traced == CROWD && framed == CROWD && in_read >= CROWD / 2,
	      "crowd: every thread taken (%u), its stack in crowd_main (%u), in read (%u)",
	      traced, framed, in_read);
	CHECK(!traced_or_stopped(child), "crowd: the child runs on, untraced");
	thread_dump_free(td);
	symbolizer_free(o.sym);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	close(ready[0]);
	close(ready[1]);
}

int main(void);

/* thread_dump_take_agent's capture, for the test: the canned reply in arg. */
static int fake_capture(pid_t pid, void *arg, char **ret_json, size_t *ret_len,
			struct diag *d)
{
	const char *reply = arg;

	(void)pid;
	if (!reply)
		return diag_set(d, -EIO, "the agent is away");
	*ret_json = strdup(reply);
	*ret_len = strlen(reply);
	return *ret_json ? 0 : -ENOMEM;
}

/* The agent path on the child: names from /proc, frames from a reply
 * shaped like src/agent/stacks.c's, named here; statuses mapped; bad
 * replies refused; nothing traced. */
static void test_agent(pid_t child)
{
	char json[2048];
	struct thread_dump *td = NULL;
	const struct thread_info *m, *s, *a = NULL;
	pid_t spinner = 0;
	struct diag d;
	int err;

	{
		pid_t *tids = NULL;
		size_t n = 0;

		if (tracee_list_tids(child, &tids, &n) == 0)
			for (size_t i = 0; i < n; i++)
				if (tids[i] != child)
					spinner = tids[i];
		free(tids);
	}
	CHECK(spinner > 0, "agent: found the spinner's tid");
	/* A reply in the schema of older agents (method "signal", status
	 * "no-answer" and "self", a "note"): still read. */
	snprintf(json, sizeof(json),
		 "{\"pid\":%d,\"comm\":\"x\",\"time_ns\":1,\"method\":\"signal\",\"total_ns\":5,"
		 "\"threads_omitted\":0,\"threads\":[\n"
		 "{\"tid\":%d,\"name\":\"a \\\"q\\\" \\u00e9\",\"state\":\"S\",\"cpu_ns\":1,"
		 "\"status\":\"taken\",\"truncated\":false,\"frames\":["
		 "{\"addr\":\"0x%llx\",\"function\":\"x{]\",\"module\":null},"
		 "{\"addr\":\"0x%llx\",\"function\":\"y\",\"module\":\"/m\"}]},\n"
		 "{\"tid\":%d,\"name\":\"s\",\"status\":\"no-answer\",\"truncated\":false,"
		 "\"frames\":[],\"note\":\"did not answer\"},\n"
		 "{\"tid\":2147483000,\"name\":\"c\",\"status\":\"self\",\"truncated\":false,"
		 "\"frames\":[]}]}\n",
		 (int)child, (int)child,
		 (unsigned long long)(uintptr_t)child_block_in_read + 1,
		 (unsigned long long)(uintptr_t)main + 1, (int)spinner);
	diag_clear(&d);
	err = thread_dump_take_agent(child, NULL, fake_capture, json, &td, &d);
	CHECK(err == 0 && td, "agent: dump built from the reply (%s)", d.msg);
	if (!td)
		return;
	CHECK(td->method == THREAD_DUMP_AGENT && td->pause_max_ns == 0,
	      "agent: method agent, nothing paused");
	m = find(td, "threads_dump_te");
	s = find(td, "td-spinner");
	for (size_t i = 0; i < td->nthreads; i++)
		if (td->threads[i].tid == 2147483000)
			a = &td->threads[i];
	CHECK(m && m->status == THREAD_TAKEN && m->nframes == 2 &&
		      !strcmp(m->frames[0].name, "child_block_in_read") &&
		      !strcmp(m->frames[1].name, "main"),
	      "agent: the main thread's addresses are named here");
	CHECK(m && m->sc == THREAD_SC_IN && m->syscall_nr == SYS_read,
	      "agent: its system call read from /proc");
	CHECK(s && s->status == THREAD_FAILED && s->err == -ETIMEDOUT,
	      "agent: a thread that did not answer is failed, timed out");
	CHECK(a && a->status == THREAD_AGENT, "agent: the agent's own thread is listed as such");
	CHECK(td->nfailed == 1 && td->ntaken == 1, "agent: 1 taken, 1 failed");
	{
		char *text = NULL, *out = NULL;
		size_t tl = 0, ol = 0;
		FILE *f = open_memstream(&text, &tl);

		thread_dump_write_text(td, 0, f);
		fclose(f);
		CHECK(text && strstr(text, "by the in-process agent") &&
			      strstr(text, "did not answer the agent's signal") &&
			      strstr(text, "nprof agent's own threads"),
		      "agent: the text says how it was taken and why threads lack stacks");
		f = open_memstream(&out, &ol);
		thread_dump_write_json(td, f);
		fclose(f);
		CHECK(out && strstr(out, "\"method\":\"agent\"") && strstr(out, "\"status\":\"agent\""),
		      "agent: JSON method and status");
		free(text);
		free(out);
	}
	thread_dump_free(td);

	/* The reply in the current schema: the agent's model, written by the
	 * one writer. */
	{
		struct thread_dump *ad = thread_dump_new(child, THREAD_DUMP_AGENT);
		struct thread_info *t;
		char *reply;

		t = thread_dump_add_thread(ad, child);
		t->status = THREAD_TAKEN;
		t->state = 'R'; /* the agent's own view: /proc's, read before, wins */
		t->frames = calloc(2, sizeof(*t->frames));
		t->frames[0].addr = (uintptr_t)child_block_in_read + 1;
		t->frames[1].addr = (uintptr_t)main + 1;
		t->frames[0].name = strdup("x");
		t->frames[1].name = strdup("y");
		t->nframes = 2;
		t = thread_dump_add_thread(ad, spinner);
		t->status = THREAD_FAILED;
		t->err = -ETIMEDOUT;
		t = thread_dump_add_thread(ad, 2147483000);
		t->status = THREAD_AGENT;
		thread_dump_sort(ad);
		reply = to_json(ad);
		thread_dump_free(ad);
		td = NULL;
		diag_clear(&d);
		err = thread_dump_take_agent(child, NULL, fake_capture, reply, &td, &d);
		CHECK(err == 0 && td, "agent, current schema: dump built from the reply (%s)", d.msg);
		m = td ? find(td, "threads_dump_te") : NULL;
		s = td ? find(td, "td-spinner") : NULL;
		CHECK(m && m->status == THREAD_TAKEN && m->nframes == 2 && m->state == 'S' &&
			      !strcmp(m->frames[0].name, "child_block_in_read") &&
			      !strcmp(m->frames[1].name, "main") && m->sc == THREAD_SC_IN &&
			      m->syscall_nr == SYS_read,
		      "agent, current schema: named here, state and system call from /proc");
		CHECK(s && s->status == THREAD_FAILED && s->err == -ETIMEDOUT && td->nfailed == 1,
		      "agent, current schema: the errno of a failed thread comes across");
		if (td)
			test_roundtrip(td, "agent dump");
		thread_dump_free(td);
		free(reply);
	}

	td = NULL;
	diag_clear(&d);
	err = thread_dump_take_agent(child, NULL, fake_capture, "{\"threads\":[{\"tid\":1,", &td, &d);
	CHECK(err == -EPROTO && !td && strstr(d.msg, "not a thread dump"),
	      "agent: a cut reply is refused: \"%s\"", d.msg);
	diag_clear(&d);
	err = thread_dump_take_agent(child, NULL, fake_capture, "ok", &td, &d);
	CHECK(err == -EPROTO && !td, "agent: a reply that is not JSON is refused");
	diag_clear(&d);
	err = thread_dump_take_agent(child, NULL, fake_capture, NULL, &td, &d);
	CHECK(err == -EIO && !td && strstr(d.msg, "away"), "agent: the capture's error is passed on");
	diag_clear(&d);
	err = thread_dump_take_agent(999999, NULL, fake_capture, json, &td, &d);
	CHECK(err == -ESRCH && !td, "agent: a missing PID: -ESRCH");
	CHECK(!traced_or_stopped(child), "agent: the child was never traced");
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
	CHECK(thread_syscall_number("futex") == SYS_futex && thread_syscall_number("nope") == -1,
	      "syscall numbers by name");
	test_reader();

	diag_clear(&d);
	err = thread_dump_take(999999, NULL, &td, &d);
	CHECK(err == -ESRCH && strstr(d.msg, "no process with PID 999999"),
	      "a missing PID: -ESRCH, \"%s\"", d.msg);

	if (pipe(pipe_fds) || pipe(ready))
		return 1;
	child = start_child(ready[1]);
	if (read(ready[0], &c, 1) != 1)
		return 1;
	wait_in_read(child);

	for (int round = 0; round < 3; round++) {
		const struct thread_info *m, *s;

		/* The last round's stop interrupted the read: it restarts on
		 * its own, but not at once on a loaded host. */
		wait_in_read(child);
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
			test_roundtrip(td, "ptrace dump");
		}
		thread_dump_free(td);
	}
	/* The last dump's interrupt made read restart: back in it first. */
	wait_in_read(child);
	test_agent(child);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	test_crowd();
	thread_dump_free(NULL);
	return test_done();
}
