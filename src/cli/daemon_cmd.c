/* daemon_cmd: see daemon_cmd.h. */
#include "cli/daemon_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "base/clock.h"
#include "base/utf8.h"
#include "cli/cli.h"
#include "cli/progress.h"
#include "output/output.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

int daemon_cmd_parse_id(const char *arg, long long *ret)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno || end == arg || *end || v <= 0)
		return -EINVAL;
	*ret = v;
	return 0;
}

const char *daemon_cmd_str(const json_t *o, const char *key, const char *def)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : def;
}

int daemon_cmd_worker(const char *cmd, const char *arg, char *ret_id, size_t len)
{
	json_t *reply = NULL, *list, *w;
	char path[64];
	struct diag d;
	pid_t pid;
	size_t i;
	int r;

	if (!all_digits(arg)) {
		if (strlen(arg) >= len)
			return cli_usage_error(cmd, "'%.40s...' is too long for a worker id", arg);
		strcpy(ret_id, arg);
		return EXIT_OK;
	}
	if (cli_parse_pid(arg, &pid) < 0)
		return cli_usage_error(cmd, "'%s' is not a PID or a worker id", arg);
	snprintf(path, sizeof(path), "/api/v1/workers?pid=%d", (int)pid);
	diag_clear(&d);
	r = daemon_call("GET", path, NULL, &reply, NULL, &d);
	if (r < 0) {
		cli_error("%s", d.msg);
		return EXIT_FAILED;
	}
	list = json_object_get(reply, "workers");
	json_array_foreach(list, i, w) {
		const char *id = daemon_cmd_str(w, "id", NULL);

		if (json_integer_value(json_object_get(w, "pid")) == pid && id && strlen(id) < len) {
			strcpy(ret_id, id);
			json_decref(reply);
			return EXIT_OK;
		}
	}
	json_decref(reply);
	cli_error("no worker with pid %d that you may act on: is it running, and yours? "
		  "(nprof workers lists the ones you may)", (int)pid);
	return EXIT_FAILED;
}

/* The progress line of a waiting command: the instance's state and how
 * long it has run, of how long it may. */
static void wait_progress(long long id, const json_t *inst, uint64_t waited_ns)
{
	const json_t *dur = json_object_get(inst, "duration");
	char of[32] = "";

	if (json_is_number(dur))
		snprintf(of, sizeof(of), " of %.0f s", json_number_value(dur));
	progress_show("instance %lld (%s on %s) %s: %.1f s%s; Ctrl-C stops it", id,
		      daemon_cmd_str(inst, "mode", daemon_cmd_str(inst, "kind", "?")),
		      daemon_cmd_str(inst, "worker", "?"), daemon_cmd_str(inst, "status", "?"),
		      (double)waited_ns / 1e9, of);
}

int daemon_cmd_wait(long long id, bool stop_on_ctrl_c, json_t **ret)
{
	struct sigaction sa = { .sa_handler = on_sigint, .sa_flags = SA_RESTART | SA_RESETHAND };
	struct sigaction old;
	json_t *inst = NULL;
	bool stop_asked = false, show = progress_wanted();
	uint64_t began = clock_ns(CLOCK_MONOTONIC);
	char path[80], stop[80];
	struct diag d;
	int r, ret_code = EXIT_FAILED;

	/* nprofd holds each answer until the instance ends, or a second: the
	 * end is seen as it happens (docs/api.md, ?wait=). */
	snprintf(path, sizeof(path), "/api/v1/instances/%lld?wait=%d", id, DAEMON_CMD_WAIT_S);
	snprintf(stop, sizeof(stop), "/api/v1/instances/%lld/stop", id);
	interrupted = 0;
	sigemptyset(&sa.sa_mask);
	if (stop_on_ctrl_c)
		sigaction(SIGINT, &sa, &old);
	for (;;) {
		uint64_t asked = clock_ns(CLOCK_MONOTONIC), took;

		diag_clear(&d);
		r = daemon_call("GET", path, NULL, &inst, NULL, &d);
		if (r < 0) {
			cli_error("%s", d.msg);
			break;
		}
		if (strcmp(daemon_cmd_str(inst, "status", "?"), "RUNNING")) {
			*ret = inst;
			ret_code = EXIT_OK;
			break;
		}
		if (show)
			wait_progress(id, inst, clock_ns(CLOCK_MONOTONIC) - began);
		json_decref(inst);
		inst = NULL;
		if (interrupted && !stop_asked) {
			/* Storm's Stop: what was recorded until now is the result. */
			stop_asked = true;
			progress_clear();
			fprintf(stderr, "nprof: stopping instance %lld, then writing what it recorded "
				"(Ctrl-C again to leave without it)\n", id);
			diag_clear(&d);
			r = daemon_call("POST", stop, NULL, NULL, NULL, &d);
			if (r < 0 && r != -EBUSY) /* 409: it has just ended */
				cli_error("%s", d.msg);
			continue;
		}
		/* An nprofd that does not hold the answer: poll, not spin. */
		took = clock_ns(CLOCK_MONOTONIC) - asked;
		if (took < (uint64_t)DAEMON_CMD_POLL_MS * 1000000) {
			uint64_t left = (uint64_t)DAEMON_CMD_POLL_MS * 1000000 - took;
			struct timespec ts = { (time_t)(left / 1000000000ull),
					       (long)(left % 1000000000ull) };

			nanosleep(&ts, NULL);
		}
	}
	progress_clear();
	if (stop_on_ctrl_c && !interrupted)
		sigaction(SIGINT, &old, NULL);
	return ret_code;
}

int daemon_cmd_print_end(const json_t *inst, FILE *out)
{
	const char *status = daemon_cmd_str(inst, "status", "?");
	const char *msg = daemon_cmd_str(inst, "message", "");

	fprintf(out, "instance %lld %s%s", (long long)json_integer_value(json_object_get(inst, "id")),
		status, msg[0] ? ": " : "\n");
	if (msg[0]) {
		daemon_cmd_cell(out, msg, 4096, false);
		fputc('\n', out);
	}
	fflush(out);
	return strcmp(status, "FAILED") ? EXIT_OK : EXIT_FAILED;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a > b && !strcmp(s + a - b, suffix);
}

/* The name output_format_parse takes for f. */
static const char *format_name(enum output_format f)
{
	static char name[32];
	const char *s = output_format_names();

	while (*s) {
		size_t n = strcspn(s, " ");
		enum output_format g;

		if (n < sizeof(name)) {
			memcpy(name, s, n);
			name[n] = '\0';
			if (output_format_parse(name, &g) == 0 && g == f)
				return name;
		}
		s += n;
		s += strspn(s, " ");
	}
	return NULL;
}

const char *daemon_cmd_format(const char *cmd, const char *art_format, const char *inst_format,
			      const char *file, const char *opt)
{
	bool named = file && strcmp(file, "-");
	enum output_format f;

	if (opt)
		return opt;
	if (!strcmp(art_format, "core"))
		return "core";
	if (!strcmp(art_format, "threads"))
		return named && ends_with(file, ".json") ? "json"
		       : inst_format && !strcmp(inst_format, "json") ? "json" : "text";
	if (named) {
		if (output_format_from_path(file, &f) == 0 && format_name(f))
			return format_name(f);
		cli_usage_error(cmd, "-f %s: cannot tell the format from the extension; add -o "
				"FORMAT (%s)", file, output_format_names());
		return NULL;
	}
	return inst_format ? inst_format : art_format;
}

json_t *daemon_cmd_artifact(const json_t *inst, long long want)
{
	json_t *arts = json_object_get(inst, "artifacts"), *a;
	long long id = (long long)json_integer_value(json_object_get(inst, "id"));
	size_t i;

	json_array_foreach(arts, i, a) {
		if (!want || json_integer_value(json_object_get(a, "id")) == want)
			return a;
	}
	if (want)
		cli_error("instance %lld has no artifact %lld (nprof instances lists each one's "
			  "artifacts)", id, want);
	else
		cli_error("instance %lld has no artifact: it is %s%s%s", id,
			  daemon_cmd_str(inst, "status", "?"),
			  daemon_cmd_str(inst, "message", "")[0] ? ", " : "",
			  daemon_cmd_str(inst, "message", ""));
	return NULL;
}

const char *daemon_cmd_bytes(double b, char *buf, size_t len)
{
	if (b < 1024)
		snprintf(buf, len, "%.0f B", b);
	else if (b < 1024.0 * 1024)
		snprintf(buf, len, "%.1f KiB", b / 1024);
	else if (b < 1024.0 * 1024 * 1024)
		snprintf(buf, len, "%.1f MiB", b / (1024.0 * 1024));
	else
		snprintf(buf, len, "%.1f GiB", b / (1024.0 * 1024 * 1024));
	return buf;
}

/* Puts the temporary file in place: over file (rename), or as the
 * server's name, which must not exist yet (link). */
static int settle(const char *tmp, const char *file, const char *name)
{
	if (file) {
		if (rename(tmp, file) < 0) {
			cli_error("cannot write %s: %s", file, strerror(errno));
			return EXIT_FAILED;
		}
		return EXIT_OK;
	}
	if (link(tmp, name) < 0) {
		if (errno == EEXIST)
			cli_error("%s already exists here: give another name with -f FILE", name);
		else
			cli_error("cannot write %s: %s", name, strerror(errno));
		return EXIT_FAILED;
	}
	unlink(tmp);
	return EXIT_OK;
}

int daemon_cmd_fetch(long long art_id, const char *format, const char *file)
{
	char path[160], fmt[96] = "", dir[PATH_MAX], tmp[PATH_MAX + 32], name[256] = "", size[32];
	bool to_stdout = file && !strcmp(file, "-");
	struct stat st;
	struct diag d;
	FILE *out = stdout;
	mode_t mask;
	int fd = -1, r, ret = EXIT_FAILED;

	if (format && daemon_escape(format, fmt, sizeof(fmt)) < 0) {
		cli_error("-o %.40s: not a format name", format);
		return EXIT_USAGE;
	}
	snprintf(path, sizeof(path), "/api/v1/artifacts/%lld%s%s", art_id, fmt[0] ? "?format=" : "",
		 fmt);
	tmp[0] = '\0';
	if (to_stdout || (file && stat(file, &st) == 0 && !S_ISREG(st.st_mode))) {
		/* standard output, or a device or pipe named with -f: written as it comes */
		if (!to_stdout && !(out = fopen(file, "w"))) {
			cli_error("cannot write %s: %s", file, strerror(errno));
			return EXIT_FAILED;
		}
	} else {
		snprintf(dir, sizeof(dir), "%s", file ? file : ".");
		snprintf(tmp, sizeof(tmp), "%s/.nprof-get-XXXXXX", file ? dirname(dir) : ".");
		fd = mkstemp(tmp);
		if (fd < 0 || !(out = fdopen(fd, "w"))) {
			cli_error("cannot write %s: %s", file ? file : "in the current directory",
				  strerror(errno));
			if (fd >= 0) {
				close(fd);
				unlink(tmp);
			}
			return EXIT_FAILED;
		}
		/* A core holds the process's secrets: it stays 0600 (nprof dump). */
		mask = umask(0);
		umask(mask);
		if (!format || strcmp(format, "core"))
			fchmod(fd, 0666 & ~mask);
	}
	diag_clear(&d);
	r = daemon_download(path, out, NULL, name, sizeof(name), &d);
	if (r < 0) {
		if (ferror(out))
			cli_error("cannot write %s: %s", to_stdout ? "standard output"
				  : file ? file : "the download in the current directory", strerror(-r));
		else
			cli_error("%s", d.msg);
	}
	if (!tmp[0]) {
		if (out != stdout && fclose(out) != 0 && r == 0) {
			cli_error("cannot write %s: %s", file, strerror(errno));
			r = -EIO;
		}
		if (r == 0 && !to_stdout)
			fprintf(stderr, "nprof: wrote %s\n", file);
		return r < 0 ? EXIT_FAILED : EXIT_OK;
	}
	if (fstat(fd, &st) < 0)
		st.st_size = 0;
	if (fclose(out) != 0 && r == 0) {
		cli_error("cannot write %s: %s", file ? file : name, strerror(errno));
		r = -EIO;
	}
	if (r == 0 && !file && !name[0])
		snprintf(name, sizeof(name), "artifact-%lld", art_id);
	if (r == 0)
		ret = settle(tmp, file, name);
	if (ret != EXIT_OK)
		unlink(tmp);
	else
		fprintf(stderr, "nprof: wrote %s (%s%s%s)\n", file ? file : name,
			daemon_cmd_bytes((double)st.st_size, size, sizeof(size)), format ? ", " : "",
			format ? format : "");
	return ret;
}

int daemon_cmd_print_json(const json_t *j)
{
	if (json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) < 0 || putchar('\n') == EOF || fflush(stdout)) {
		cli_error("cannot write to standard output: %s", strerror(errno));
		return EXIT_FAILED;
	}
	return EXIT_OK;
}

unsigned daemon_cmd_columns(void)
{
	struct winsize ws;
	const char *env = getenv("COLUMNS");

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
		return ws.ws_col;
	if (env && atoi(env) >= 20 && atoi(env) <= 1000)
		return (unsigned)atoi(env);
	return 80;
}

unsigned daemon_cmd_cell(FILE *out, const char *s, unsigned width, bool pad)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	unsigned cols = 0;

	while (*p && cols < width) {
		uint32_t cp;
		size_t n = utf8_next(p, &cp);

		if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0))
			fputc('?', out);
		else
			fwrite(p, 1, n, out);
		p += n;
		cols++;
	}
	if (pad) {
		for (unsigned i = cols; i < width; i++)
			fputc(' ', out);
		fputc(' ', out);
	}
	return cols;
}

const char *daemon_cmd_time(const char *iso, char *buf, size_t len)
{
	struct tm tm = { 0 }, local;
	time_t t;

	if (!iso || !strptime(iso, "%Y-%m-%dT%H:%M:%S", &tm)) {
		snprintf(buf, len, "%s", iso ? iso : "-");
		return buf;
	}
	t = timegm(&tm);
	localtime_r(&t, &local);
	strftime(buf, len, "%Y-%m-%d %H:%M:%S", &local);
	return buf;
}
