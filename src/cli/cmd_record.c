/* nprof record: sample a running process or a command, write a profile.
 * The options and their meaning are documented in docs/nprof-record.1.md,
 * which is also where --help comes from. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/path_template.h"
#include "capture/threads_dump.h"
#include "base/units.h"
#include "cli/agent_preload.h"
#include "cli/cli.h"
#include "cli/output_args.h"
#include "cli/progress.h"
#include "cli/spawn.h"
#include "client/agent_client.h"
#include "engine/engine.h"
#include "help/nprof-record.h"
#include "output/output.h"

/* Below this a cpu interval floods the target with timer interrupts. */

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

#define NOTES_MAX 8

struct record_args {
	struct record_options rec;
	struct transform_options tr;
	struct output_options out;
	const char *format_name;
	const char *file;
	bool duration_given;
	bool attach; /* --attach: load the agent into PID when it has none */
	uint64_t loop_ns; /* --loop PERIOD: a recording of PID every period; 0: one */
	const char *notes[NOTES_MAX]; /* --note TEXT: said in the profile (nprofd's schedules) */
	unsigned nnotes;
	pid_t pid;
	char **command; /* argv after "--", or NULL */
};

enum long_only { OPT_CSTACK = 1000, OPT_LINES, OPT_ATTACH, OPT_LOOP, OPT_NOTE };

static int parse_duration(const char *arg, uint64_t *ret_ns)
{
	/* A bare number is seconds, as in asprof's -d. */
	return units_parse_duration_ns(arg, 1000000000ull, ret_ns);
}

/* -i for e: a time for time events (a bare number is nanoseconds, as in
 * asprof's -i), at least the floor of where it runs; else a count
 * (bytes for alloc and heap). -ERANGE under the floor. */
static int parse_interval(const struct event_def *e, const char *arg, uint64_t *ret)
{
	uint64_t floor = e->runs & EVENT_IN_ENGINE ? e->min_interval : e->agent_min_interval;

	if (e->interval_kind == EVENT_INTERVAL_TIME) {
		int r = units_parse_duration_ns(arg, 1, ret);

		return r == 0 && *ret < floor ? -ERANGE : r;
	}
	if (units_parse_count(arg, ret) < 0 || *ret == 0)
		return -EINVAL;
	return 0;
}

static int parse_args(int argc, char **argv, struct record_args *a)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "cstack", required_argument, NULL, OPT_CSTACK },
		{ "lines", no_argument, NULL, OPT_LINES },
		{ "attach", no_argument, NULL, OPT_ATTACH },
		{ "loop", required_argument, NULL, OPT_LOOP },
		{ "note", required_argument, NULL, OPT_NOTE },
		OUTPUT_ARGS_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	const struct event_def *ev;
	const char *interval = NULL;
	int c;

	a->rec.event = "cpu";
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:e:d:i:o:f:tsj:h", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'e':
			a->rec.event = optarg;
			break;
		case 'd':
			if (parse_duration(optarg, &a->rec.duration_ns) < 0)
				return cli_usage_error("record",
					"-d %s: not a duration; use seconds (10, 1.5) or a unit (500ms, 2m)",
					optarg);
			a->duration_given = true;
			break;
		case 'i':
			interval = optarg;
			break;
		case 'o':
			a->format_name = optarg;
			break;
		case 'f':
			a->file = optarg;
			break;
		case 't':
			a->rec.per_thread = true;
			break;
		case 's':
			a->rec.simple_names = true;
			break;
		case 'j': {
			char *end;
			long v = strtol(optarg, &end, 10);

			if (end == optarg || *end || v < 1 || v > 65535)
				return cli_usage_error("record",
					"-j %s: not a stack depth; use a number from 1 to 65535",
					optarg);
			a->rec.max_depth = (unsigned)v;
			break;
		}
		case OPT_LINES:
			a->rec.lines = true;
			break;
		case OPT_ATTACH:
			a->attach = true;
			break;
		case OPT_LOOP:
			if (parse_duration(optarg, &a->loop_ns) < 0 || a->loop_ns < 1000000000ull)
				return cli_usage_error("record",
					"--loop %s: not a period; use 1s or more (60s, 5m)", optarg);
			break;
		case OPT_NOTE:
			if (a->nnotes == NOTES_MAX || strlen(optarg) > 400)
				return cli_usage_error("record", "--note: at most %d of them, each at "
						       "most 400 bytes", NOTES_MAX);
			a->notes[a->nnotes++] = optarg;
			break;
		case OPT_CSTACK:
			if (!strcmp(optarg, "auto"))
				a->rec.cstack = CSTACK_AUTO;
			else if (!strcmp(optarg, "fp"))
				a->rec.cstack = CSTACK_FP;
			else if (!strcmp(optarg, "dwarf"))
				a->rec.cstack = CSTACK_DWARF;
			else
				return cli_usage_error("record",
					"--cstack %s: unknown mode; use fp, dwarf or auto",
					optarg);
			break;
		case OPT_INCLUDE ... OUTPUT_ARGS_END - 1: {
			int r = output_args_parse("record", c, optarg, &a->tr,
						  &a->out);

			if (r != EXIT_OK)
				return r;
			break;
		}
		case 'h':
			fputs(nprof_record_help, stdout);
			exit(EXIT_OK);
		case ':':
		default:
			return cli_option_error("record", c, argv);
		}
	}

	ev = event_find(a->rec.event);
	if (!ev) {
		char here[256], agent[128];

		return cli_usage_error("record",
			"-e %s: unknown event; available here: %s; with the agent: %s",
			a->rec.event, engine_available_events(here, sizeof(here)),
			event_names(EVENT_IN_AGENT, agent, sizeof(agent)));
	}
	if (interval) {
		int r = parse_interval(ev, interval, &a->rec.interval);

		if (r == -ERANGE)
			return cli_usage_error("record",
				"-i %s: below %s's floor of %lluus, which would swamp the target "
				"with interrupts; use 1ms or more", interval, ev->name,
				(unsigned long long)((ev->runs & EVENT_IN_ENGINE ? ev->min_interval
										 : ev->agent_min_interval) / 1000));
		if (r < 0)
			return cli_usage_error("record",
				"-i %s: not an interval for %s; use %s",
				interval, a->rec.event,
				ev->interval_kind == EVENT_INTERVAL_TIME ? "a time such as 10ms or 1000us"
									 : "a count such as 1, 100 or 10k");
	}

	/* "--" ends options: what follows is the command to start. */
	if (optind > 0 && optind <= argc && !strcmp(argv[optind - 1], "--")) {
		if (optind == argc)
			return cli_usage_error("record", "no command after --");
		if (a->loop_ns)
			return cli_usage_error("record", "--loop records a running PID, not a command");
		a->command = argv + optind;
		if (!a->duration_given)
			a->rec.duration_ns = 0;
		return 0;
	}
	if (optind >= argc)
		return cli_usage_error("record", "no PID given; use nprof record PID or nprof record -- COMMAND");
	if (optind + 1 < argc)
		return cli_usage_error("record",
			"unexpected '%s' after the PID; to start a command, put -- before it",
			argv[optind + 1]);
	if (cli_parse_pid(argv[optind], &a->pid) < 0)
		return cli_usage_error("record",
			"'%s' is not a PID; give a process id, or -- COMMAND",
			argv[optind]);
	if (!a->duration_given)
		a->rec.duration_ns = 10ull * 1000000000ull;
	if (a->loop_ns) {
		/* each recording a file of its own, named by when it began */
		if (!a->file || !strstr(a->file, "%t"))
			return cli_usage_error("record", "--loop writes a file per recording: give -f "
					       "with %%t in its name (-f 'cpu-%%t.pb.gz')");
		if (!a->rec.duration_ns || a->rec.duration_ns > a->loop_ns)
			return cli_usage_error("record", "--loop: each recording (-d) must end within "
					       "the period; give -d at most the period");
	}
	return 0;
}

/* Resolves -o / -f into a format; returns EXIT_OK or a usage error. */
static int choose_format(const struct record_args *a, bool *ret_default,
			 enum output_format *ret)
{
	*ret_default = false;
	if (a->format_name) {
		if (output_format_parse(a->format_name, ret) < 0)
			return cli_usage_error("record",
				"-o %s: unknown format; use one of: %s",
				a->format_name, output_format_names());
		return EXIT_OK;
	}
	if (a->file) {
		if (output_format_from_path(a->file, ret) < 0)
			return cli_usage_error("record",
				"-f %s: cannot tell the format from the extension; add -o FORMAT (%s)",
				a->file, output_format_names());
		return EXIT_OK;
	}
	*ret_default = true;
	return EXIT_OK;
}

static int write_output(const struct profile *p, const struct record_args *a,
			enum output_format format, bool default_output)
{
	char path[PATH_MAX];
	FILE *out = stdout;
	int r;

	if (default_output) {
		r = output_write(p, OUTPUT_SUMMARY, NULL, stdout);
		if (r == 0) {
			putchar('\n');
			r = output_write(p, OUTPUT_FLAT, NULL, stdout);
		}
		if (r < 0)
			cli_error("cannot write to standard output: %s",
				  strerror(-r));
		return r < 0 ? EXIT_FAILED : EXIT_OK;
	}
	if (a->file) {
		if (path_template_expand(a->file, p->pid, path, sizeof(path)) < 0) {
			cli_error("-f %s: the expanded path is too long", a->file);
			return EXIT_FAILED;
		}
		out = fopen(path, "w");
		if (!out) {
			cli_error("cannot write %s: %s", path, strerror(errno));
			return EXIT_FAILED;
		}
	}
	r = output_write(p, format, &a->out, out);
	if (out != stdout && fclose(out) != 0 && r == 0)
		r = -errno;
	if (r < 0) {
		cli_error("cannot write %s: %s", a->file ? path : "standard output",
			  strerror(-r));
		return EXIT_FAILED;
	}
	if (a->file) {
		/* The summary is not on screen: repeat what the reader must
		 * know, then say where the profile is. */
		for (unsigned i = 0; i < p->nnotes; i++)
			fprintf(stderr, "nprof: note: %s\n", p->notes[i]);
		fprintf(stderr, "nprof: wrote %s (%lld %s, %zu stacks)\n", path,
			(long long)(p->nvalues ? profile_total(p, 0) : 0),
			p->nvalues ? p->value_types[0].type : "samples",
			p->nstacks);
	}
	return EXIT_OK;
}

/* record_options.take_threads for wall and offcpu: the threads of pid
 * as they are now, by the thread dump's ptrace path (each stopped for
 * tens of microseconds), unnamed: the engine names what it keeps. */
static int take_threads(void *arg, pid_t pid, struct engine_thread_start **ret,
			size_t *ret_n, struct diag *d)
{
	struct thread_dump_options o = { .sym = arg, .addresses_only = true };
	struct engine_thread_start *ts = NULL;
	struct thread_dump *td = NULL;
	size_t n = 0;
	int err = thread_dump_take(pid, &o, &td, d);

	if (err < 0)
		return err;
	err = -ENOMEM;
	ts = calloc(td->nthreads + 1, sizeof(*ts));
	if (!ts)
		goto out;
	for (size_t i = 0; i < td->nthreads; i++) {
		const struct thread_info *t = &td->threads[i];
		struct engine_thread_start *e = &ts[n++];

		e->tid = t->tid;
		e->state = t->state;
		e->truncated = t->truncated;
		e->in_syscall = t->sc == THREAD_SC_IN;
		e->syscall_nr = t->syscall_nr;
		e->sp = t->syscall_sp;
		e->pc = t->syscall_pc;
		if ((t->status != THREAD_TAKEN && t->status != THREAD_LIVE) || !t->nframes)
			continue;
		e->ips = malloc(t->nframes * sizeof(*e->ips));
		if (!e->ips)
			goto out;
		for (unsigned k = 0; k < t->nframes; k++)
			e->ips[k] = t->frames[k].addr;
		e->n = t->nframes;
	}
	*ret = ts;
	*ret_n = n;
	ts = NULL;
	err = 0;
out:
	for (size_t i = 0; ts && i < n; i++)
		free(ts[i].ips);
	free(ts);
	thread_dump_free(td);
	return err;
}

/* An event both the agent and the engine have, where the agent is the
 * better source when there: wall (its sampler needs no privilege; the
 * engine's off-CPU half needs the scheduler's tracepoint). */
static bool agent_first(const struct event_def *ev)
{
	return (ev->runs & EVENT_IN_AGENT) &&
	       (!(ev->runs & EVENT_IN_ENGINE) || ev->scheduler);
}

/* One recording of a->pid (or of a->command), written as asked. */
static int record_once(struct record_args *a, struct symbolizer *syms, enum output_format format,
		       bool default_output)
{
	struct spawned child = { .pid = -1, .go_fd = -1, .err_fd = -1 };
	struct profile *p = NULL;
	struct diag d;
	int ret = EXIT_FAILED, r;

	diag_clear(&d);
	if (a->command && agent_first(event_find(a->rec.event))) {
		/* itimer (only the agent has it), wall: preload the agent. */
		r = agent_preload_record(a->command, &a->rec, &a->pid, &p, &d);
	} else if (a->command) {
		r = spawned_start(a->command, &child, &d);
		if (r < 0) {
			cli_error("%s", d.msg);
			goto out;
		}
		a->pid = child.pid;
		r = engine_record(child.pid, &a->rec, syms, spawned_release,
				  &child, &p, &d);
		spawned_finish(&child, 2000);
		if (child.exec_error) {
			cli_error("cannot run '%s': %s", a->command[0],
				  strerror(-child.exec_error));
			goto out;
		}
	} else if ((event_find(a->rec.event)->runs & EVENT_IN_AGENT) &&
		   (r = agent_client_probe(a->pid, &d)) != 0) {
		if (r > 0) {
			/* The process has the agent: it samples from inside. */
			r = agent_client_record(a->pid, &a->rec, &p, &d);
			if (r == 0 && event_find(a->rec.event)->scheduler)
				profile_add_note(p, "%s: recorded by nprof's agent in PID %d, "
						 "which the process has loaded",
						 a->rec.event, (int)a->pid);
		} else if (r == -ENOTUNIQ && engine_event_known(a->rec.event)) {
			/* Not its agent: never trusted; sample from outside. */
			fprintf(stderr, "nprof: %s; not trusting it, recording with "
				"perf_events from outside instead\n", d.msg);
			diag_clear(&d);
			r = engine_record(a->pid, &a->rec, syms, NULL, NULL, &p, &d);
		} else if (r == -ENOTUNIQ) {
			cli_error("%s; -e %s needs nprof's agent in PID %d, so there is "
				  "nothing to fall back to", d.msg, a->rec.event, (int)a->pid);
			goto out;
		}
	} else if (!engine_event_known(a->rec.event)) {
		r = diag_set(&d, -ENOENT,
			     "-e %s needs nprof's agent in PID %d, which has none; load it with "
			     "--attach (nprof attach PID), or start the program with "
			     "LD_PRELOAD=libnprof.so or nprof record -e %s -- COMMAND",
			     a->rec.event, (int)a->pid, a->rec.event);
	} else {
		r = engine_record(a->pid, &a->rec, syms, NULL, NULL, &p, &d);
	}
	progress_clear();
	if (stop_requested)
		fprintf(stderr, "nprof: stopped early (Ctrl-C or a signal): writing what was "
			"recorded\n");
	if (r < 0) {
		cli_error("%s", d.msg[0] ? d.msg : strerror(-r));
		goto out;
	}
	for (unsigned i = 0; i < a->nnotes; i++)
		if (profile_add_note(p, "%s", a->notes[i]) < 0) {
			cli_error("out of memory");
			goto out;
		}
	ret = output_args_apply(&a->tr, &p);
	if (ret != EXIT_OK)
		goto out;
	ret = write_output(p, a, format, default_output);
out:
	profile_free(p);
	return ret;
}

/* --loop: a recording of a->pid every a->loop_ns, each to its own file,
 * until the process is gone or a signal stops it. A recording that
 * fails (the process exiting) ends the loop with its error. */
static int record_loop(struct record_args *a, struct symbolizer *syms, enum output_format format)
{
	struct timespec next;
	int ret = EXIT_OK;

	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!stop_requested && ret == EXIT_OK) {
		ret = record_once(a, syms, format, false);
		next.tv_sec += (time_t)(a->loop_ns / 1000000000ull);
		next.tv_nsec += (long)(a->loop_ns % 1000000000ull);
		if (next.tv_nsec >= 1000000000L) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000L;
		}
		/* (a signal cuts the wait short: stop_requested ends the loop) */
		while (ret == EXIT_OK && !stop_requested &&
		       clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
		if (ret == EXIT_OK && kill(a->pid, 0) < 0 && errno == ESRCH) {
			fprintf(stderr, "nprof: process %d has exited: the loop ends\n", (int)a->pid);
			break;
		}
	}
	return ret;
}

int cmd_record(int argc, char **argv)
{
	struct record_args a = { 0 };
	struct symbolizer *syms = NULL;
	enum output_format format = OUTPUT_SUMMARY;
	bool default_output;
	int ret;

	ret = parse_args(argc, argv, &a);
	if (ret != EXIT_OK)
		return ret;
	ret = choose_format(&a, &default_output, &format);
	if (ret != EXIT_OK)
		return ret;

	a.rec.stop = &stop_requested;
	if (progress_wanted()) {
		a.rec.progress = progress_recording;
		a.rec.progress_arg = &a.pid; /* a command's is known once it starts */
	}
	signal(SIGINT, on_stop_signal);
	signal(SIGTERM, on_stop_signal);
	signal(SIGPIPE, SIG_IGN);

	ret = EXIT_FAILED;
	/* --attach: the agent into PID first (nprof attach), then recorded
	 * through it like any process with the agent. */
	if (a.attach && !a.command && cli_attach_agent(a.pid) != EXIT_OK)
		goto out;
	syms = symbolizer_new();
	if (!syms) {
		cli_error("out of memory");
		goto out;
	}
	a.rec.take_threads = take_threads;
	a.rec.take_threads_arg = syms;
	ret = a.loop_ns ? record_loop(&a, syms, format)
			: record_once(&a, syms, format, default_output);
out:
	symbolizer_free(syms);
	return ret;
}
