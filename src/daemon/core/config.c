/* config: nprofd.conf, read into struct daemon_config.
 *
 * The parser works line by line on a private copy of the configuration
 * and copies it back only when the whole text is valid, so a daemon that
 * re-reads its file keeps the old settings when the new file is wrong.
 * Every key is one row of one table, keys[] below: its section, its kind
 * of value, where it goes, its default, its bounds and how the docs
 * describe it. The defaults are applied from it, each kind's parser
 * reads it, the messages and the "valid keys" hints are written from it,
 * and tests/unit/daemon_config_test.c holds docs/nprofd.conf.5.md to it. */
#include "daemon/core/config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/units.h"

#define LINE_MAX_BYTES 4096
#define FILE_MAX_BYTES (1u << 20)
#define SEC 1000000000ull
#define MINUTE (60 * SEC)
#define HOUR (60 * MINUTE)
#define DAY (24 * HOUR)
#define KIB 1024ull
#define MIB (1024ull * 1024)
#define GIB (1024ull * 1024 * 1024)
#define TIB (1024ull * 1024 * 1024 * 1024)
/* What a message quotes of a value: enough to recognise it, never a
 * whole 1 KiB value in a one-line error. */
#define SHOWN_MAX 80

/* --- the one table of keys ---------------------------------------------- */

enum section_kind {
	SEC_TOP, SEC_WORKERS, SEC_INSTANCES, SEC_ACTIONS, SEC_ARTIFACTS, SEC_SIGNIN,
	SEC_CLUSTER, SEC_CONTINUOUS, SEC_SERVICE, SEC_COMMAND, SEC_SCHEDULE, SEC_COUNT
};

/* [service NAME], [command NAME] and [schedule NAME] (SEC_SERVICE and
 * after) may come many times, the others once. */
static const char *const section_names[SEC_COUNT] = {
	[SEC_TOP] = "top", [SEC_WORKERS] = "workers", [SEC_INSTANCES] = "instances",
	[SEC_ACTIONS] = "actions", [SEC_ARTIFACTS] = "artifacts", [SEC_SIGNIN] = "signin",
	[SEC_CLUSTER] = "cluster", [SEC_CONTINUOUS] = "continuous", [SEC_SERVICE] = "service",
	[SEC_COMMAND] = "command", [SEC_SCHEDULE] = "schedule",
};

/* What a value is; each kind has its parser (setters[], below). */
enum value_kind {
	V_LISTEN,	/* ADDR:PORT or "" */
	V_PATH,		/* absolute, or "" */
	V_PATH_SET,	/* absolute, never "" */
	V_NAME,		/* a user name (or a name of the same shape), or "" */
	V_GROUP,	/* a group name, or "" */
	V_NAMES,	/* comma-separated user names */
	V_ADDRS,	/* comma-separated IP addresses */
	V_HEADER,	/* an HTTP header name */
	V_SIZE,		/* uint64_t bytes */
	V_COUNT,	/* a whole number: unsigned or uint64_t, by the field's size */
	V_DURATION,	/* uint64_t nanoseconds */
	V_PERCENT,	/* a share, "1%" or "0.5%": double, 0.01 for 1 %; bounds in
			   hundredths of a percent */
	V_SELECTS,	/* comma-separated selectors */
	V_SELECTOR,	/* one selector */
	V_MODES,	/* comma-separated events: the section's switches */
	V_ACTION,	/* on/off: the section's switches, the action in off */
	V_TEXT,		/* any text */
	V_RUN,		/* a command line with %p %d %o %% */
	V_OUTPUT,	/* file | stdout | none */
	V_URLS,		/* comma-separated http:// or https:// URLs, or "" */
	V_URL,		/* one such URL, or "" */
	V_HOST,		/* a host's name in the cluster, or "" */
	V_HOSTNAMES,	/* comma-separated host names or IP addresses */
	V_SCHED_SELECTOR, /* a schedule's selector of the key's kind (schedule_spec.h) */
	V_SCHED_MODES,	/* comma-separated events: a schedule's */
	V_KIND_COUNT
};

struct parser;

struct key_def {
	const char *name;
	enum section_kind sec;	/* where it is set, and where its default applies */
	enum value_kind kind;
	const char *def;	/* the default, as the docs write it; NULL: none of its
				   own (required, or following another key) */
	size_t off;		/* its field in sec's struct; V_ACTION: the action */
	size_t size;		/* the field's size: strings, and 4 or 8 for numbers */
	size_t n_off;		/* lists: where their length goes in struct daemon_config */
	uint64_t min, max;	/* sizes, counts, durations: the bounds, as values */
	bool per_service;	/* also a [service NAME] key: that service's own */
	/* the rare key with a rule of its own, checked before its kind's parser */
	int (*check)(struct parser *p, const struct key_def *k, const char *v);
	const char *doc;	/* how docs/nprofd.conf.5.md starts saying what it is */
};

#define FIELD(type, f) .off = offsetof(type, f), .size = sizeof(((type *)0)->f)
#define TOP(f) FIELD(struct daemon_config, f)
#define SVC(f) FIELD(struct service_config, f)
#define CMD(f) FIELD(struct command_config, f)
#define SCHED(f) FIELD(struct schedule_config, spec.f)
#define LIST(f, n) TOP(f), .n_off = offsetof(struct daemon_config, n)
#define RANGE(lo, hi) .min = (lo), .max = (hi)
#define SWITCH(a) .off = (a), .per_service = true

static int check_restart_switch(struct parser *p, const struct key_def *k, const char *v);

/* In the order of docs/nprofd.conf.5.md, which the "valid keys" hints follow. */
static const struct key_def keys[] = {
	{ "listen", SEC_TOP, V_LISTEN, "127.0.0.1:9700", TOP(listen),
	  .doc = "the HTTP listener" },
	/* sun_path holds 107 bytes and a NUL: a longer path cannot be bound */
	{ "socket", SEC_TOP, V_PATH_SET, "/run/nprof/nprofd.sock",
	  .off = offsetof(struct daemon_config, socket_path),
	  .size = sizeof(((struct sockaddr_un *)0)->sun_path),
	  .doc = "the unix socket every local user may connect to" },
	{ "state_dir", SEC_TOP, V_PATH_SET, "/var/lib/nprof", TOP(state_dir),
	  .doc = "the index (`nprofd.db`) and the artifacts" },
	{ "tls_cert", SEC_TOP, V_PATH, "", TOP(tls_cert),
	  .doc = "PEM certificate (chain) for HTTPS" },
	{ "tls_key", SEC_TOP, V_PATH, "", TOP(tls_key),
	  .doc = "its PEM private key" },
	{ "admin_users", SEC_TOP, V_NAMES, "", LIST(admin_users, n_admin_users),
	  .doc = "users who see and act on every worker" },
	{ "admin_group", SEC_TOP, V_GROUP, "", TOP(admin_group),
	  .doc = "members are admins too" },
	{ "nprof", SEC_TOP, V_PATH, "", TOP(nprof_path),
	  .doc = "the nprof binary each instance runs" },
	{ "max_body", SEC_TOP, V_SIZE, "64k", TOP(max_body), RANGE(KIB, 16 * MIB),
	  .doc = "largest request body" },
	{ "max_connections", SEC_TOP, V_COUNT, "256", TOP(max_connections), RANGE(1, 10000),
	  .doc = "connections each door (the socket, HTTP) holds at once" },
	{ "peer_connections", SEC_TOP, V_COUNT, "16", TOP(peer_connections), RANGE(1, 10000),
	  .doc = "connections one peer holds at once on a door" },
	/* below max_connections too, and its default a quarter of a smaller
	 * one: check_all, once both are known */
	{ "reserved_connections", SEC_TOP, V_COUNT, "16", TOP(reserved_connections),
	  RANGE(0, 9999),
	  .doc = "the last connections of the socket, which only root and the admins may take" },
	{ "reply_cache", SEC_TOP, V_SIZE, "4M", TOP(reply_cache_bytes), RANGE(0, 256 * MIB),
	  .doc = "memory for the lists last sent" },
	{ "request_timeout", SEC_TOP, V_DURATION, "30s", TOP(request_timeout_ns),
	  RANGE(SEC, 10 * MINUTE),
	  .doc = "time to receive a whole request" },
	{ "trusted_proxies", SEC_TOP, V_ADDRS, "", LIST(trusted_proxies, n_trusted_proxies),
	  .doc = "peers whose `proxy_user_header` names the user" },
	{ "proxy_user_header", SEC_TOP, V_HEADER, "X-Forwarded-User", TOP(proxy_user_header),
	  .doc = "the header such a proxy sets" },
	{ "host_names", SEC_TOP, V_HOSTNAMES, "", LIST(host_names, n_host_names),
	  .doc = "names an HTTP request's `Host` may say besides those nprofd knows" },

	{ "select", SEC_WORKERS, V_SELECTS, "all", LIST(select, n_select),
	  .doc = "the processes that are workers" },

	/* Every mode is on by default (config_defaults): the perf-event
	 * modes read the target from outside with perf_event_open; itimer,
	 * wall, alloc, heap and lock run in an agent the operator chose to
	 * load, and only for the instance's bounded duration (alloc, heap
	 * and lock arm its sampling interposers, which otherwise cost one
	 * branch, docs/memory.md, and disarm them at the end). Leaving heap
	 * profiling on with no end is [actions] heap_profiling, off. */
	{ "modes", SEC_INSTANCES, V_MODES, NULL, .per_service = true,
	  .doc = "profiling modes an instance may use" },
	{ "duration_max", SEC_INSTANCES, V_DURATION, "5m", TOP(duration_max_ns), RANGE(SEC, DAY),
	  .doc = "longest instance" },
	/* at most duration_max too, which it follows when not set: check_all */
	{ "duration_default", SEC_INSTANCES, V_DURATION, "30s", TOP(duration_default_ns),
	  RANGE(SEC, DAY),
	  .doc = "duration of an instance that names none" },
	{ "max_concurrent", SEC_INSTANCES, V_COUNT, "8", TOP(max_concurrent), RANGE(1, 256),
	  .doc = "instances running at once on this host" },
	{ "history_per_worker", SEC_INSTANCES, V_COUNT, "10", TOP(history_per_worker),
	  RANGE(1, 10000),
	  .doc = "finished instances kept per worker" },
	{ "grace", SEC_INSTANCES, V_DURATION, "10s", TOP(grace_ns), RANGE(SEC, 10 * MINUTE),
	  .doc = "an instance still running at its duration plus grace is ended" },

	/* A fresh install allows what only reads the target and costs little.
	 * Heap snapshots are read-only: they dump what heap profiling, already
	 * on, has collected. heap_profiling, core files (the target stops
	 * while it is written), restart and the operator's commands change or
	 * stop the target and stay off until the operator turns them on; so
	 * does attach, which puts nprof's code into someone's running process. */
	{ "thread_dump", SEC_ACTIONS, V_ACTION, "on", SWITCH(ACTION_THREAD_DUMP),
	  .doc = "every thread's stack, now" },
	{ "heap_snapshot", SEC_ACTIONS, V_ACTION, "on", SWITCH(ACTION_HEAP_SNAPSHOT),
	  .doc = "the in-use heap now" },
	{ "heap_profiling", SEC_ACTIONS, V_ACTION, "off", SWITCH(ACTION_HEAP_PROFILING),
	  .doc = "switching heap profiling on (with no end) or off in the target's agent" },
	{ "core_file", SEC_ACTIONS, V_ACTION, "off", SWITCH(ACTION_CORE_FILE),
	  .doc = "a core file of the running process" },
	/* in a service, restart is this switch too, not restart_command */
	{ "restart", SEC_ACTIONS, V_ACTION, "off", SWITCH(ACTION_RESTART),
	  .check = check_restart_switch,
	  .doc = "restarting the worker through systemd or its service's `restart_command`" },
	{ "commands", SEC_ACTIONS, V_ACTION, "off", SWITCH(ACTION_COMMANDS),
	  .doc = "running the `[command]` sections" },
	{ "attach", SEC_ACTIONS, V_ACTION, "off", SWITCH(ACTION_ATTACH),
	  .doc = "loading nprof's agent into a worker started without it" },

	{ "max_count", SEC_ARTIFACTS, V_COUNT, "1000", TOP(max_count), RANGE(1, 1000000),
	  .doc = "artifacts kept" },
	{ "max_age", SEC_ARTIFACTS, V_DURATION, "30d", TOP(max_age_ns), RANGE(0, 3650 * DAY),
	  .doc = "artifacts older than this are removed" },
	{ "max_bytes", SEC_ARTIFACTS, V_SIZE, "10G", TOP(max_bytes), RANGE(KIB, 1024 * TIB),
	  .doc = "total size of the artifacts" },

	{ "pam_service", SEC_SIGNIN, V_NAME, "nprofd", TOP(pam_service),
	  .doc = "the PAM service" },
	{ "session_lifetime", SEC_SIGNIN, V_DURATION, "8h", TOP(session_lifetime_ns),
	  RANGE(MINUTE, 30 * DAY),
	  .doc = "how long a session lasts from its sign-in" },
	{ "max_sessions", SEC_SIGNIN, V_COUNT, "20", TOP(max_sessions), RANGE(1, 1000),
	  .doc = "live sessions per user" },
	{ "max_failures", SEC_SIGNIN, V_COUNT, "5", TOP(max_failures), RANGE(1, 1000),
	  .doc = "failed sign-ins of one user name from one client address" },
	{ "max_address_failures", SEC_SIGNIN, V_COUNT, "20", TOP(max_address_failures),
	  RANGE(1, 100000),
	  .doc = "the same for one client address" },
	{ "failures_per_minute", SEC_SIGNIN, V_COUNT, "30", TOP(failures_per_minute),
	  RANGE(1, 100000),
	  .doc = "failed sign-ins the HTTP door takes in a minute" },
	{ "failure_window", SEC_SIGNIN, V_DURATION, "5m", TOP(failure_window_ns),
	  RANGE(SEC, DAY),
	  .doc = "how long a failure is remembered" },

	{ "etcd", SEC_CLUSTER, V_URLS, "", TOP(etcd),
	  .doc = "etcd's client URLs" },
	{ "name", SEC_CLUSTER, V_HOST, "", TOP(cluster_name),
	  .doc = "this host's name in the cluster" },
	{ "url", SEC_CLUSTER, V_URL, "", TOP(cluster_url),
	  .doc = "where the other daemons reach this one" },
	{ "key_file", SEC_CLUSTER, V_PATH, "", TOP(cluster_key_file),
	  .doc = "the cluster's shared key" },
	/* whole seconds, and above three etcd_timeouts: check_all */
	{ "lease_ttl", SEC_CLUSTER, V_DURATION, "10s", TOP(lease_ttl_ns),
	  RANGE(2 * SEC, 5 * MINUTE),
	  .doc = "the registration's lease" },
	{ "etcd_timeout", SEC_CLUSTER, V_DURATION, "3s", TOP(etcd_timeout_ns),
	  RANGE(SEC / 10, MINUTE),
	  .doc = "one call to one etcd endpoint" },
	{ "host_timeout", SEC_CLUSTER, V_DURATION, "5s", TOP(host_timeout_ns),
	  RANGE(SEC / 10, 5 * MINUTE),
	  .doc = "one host's answer to a fan-out" },
	{ "forward_timeout", SEC_CLUSTER, V_DURATION, "2m", TOP(forward_timeout_ns),
	  RANGE(SEC, HOUR),
	  .doc = "an action or download on another host's worker" },
	{ "fanout", SEC_CLUSTER, V_COUNT, "16", TOP(fanout), RANGE(1, 256),
	  .doc = "hosts asked at once" },
	{ "max_hosts", SEC_CLUSTER, V_COUNT, "1000", TOP(max_hosts), RANGE(1, 100000),
	  .doc = "hosts read from etcd" },
	{ "max_reply", SEC_CLUSTER, V_SIZE, "32M", TOP(max_reply), RANGE(KIB, 1024 * MIB),
	  .doc = "largest answer read from one host or from etcd" },
	{ "signature_window", SEC_CLUSTER, V_DURATION, "30s", TOP(signature_window_ns),
	  RANGE(SEC, 10 * MINUTE),
	  .doc = "how far a signed request's time may be from this host's clock" },
	{ "hosts_cache", SEC_CLUSTER, V_DURATION, "1s", TOP(hosts_cache_ns), RANGE(0, MINUTE),
	  .doc = "how long a read of etcd's registry (or its failure) is kept" },
	{ "etcd_ca", SEC_CLUSTER, V_PATH, "", TOP(etcd_ca),
	  .doc = "PEM CA bundle for `https://` etcd endpoints" },
	{ "etcd_cert", SEC_CLUSTER, V_PATH, "", TOP(etcd_cert),
	  .doc = "client certificate and key for etcd" },
	{ "etcd_key", SEC_CLUSTER, V_PATH, "", TOP(etcd_key),
	  .doc = "client certificate and key for etcd" },
	{ "etcd_user", SEC_CLUSTER, V_NAME, "", TOP(etcd_user),
	  .doc = "etcd's own auth" },
	{ "etcd_password_file", SEC_CLUSTER, V_PATH, "", TOP(etcd_password_file),
	  .doc = "etcd's own auth" },
	{ "cpu_budget", SEC_CONTINUOUS, V_PERCENT, "1%", TOP(cpu_budget), RANGE(1, 10000),
	  .doc = "the CPU a schedule's recordings may take, a share of one CPU" },

	/* [schedule NAME]: the API's fields (docs/api.md, "Schedules"), its
	 * selector's kinds each a key, one of them set. The bounds that
	 * depend on other keys (duration_max, the modes switched on, every
	 * at least duration) and the budget's are schedule_spec_check's,
	 * the API's own check, in check_all; the ranges here are the same
	 * constants, for the docs and the messages of a single value. */
	{ "service", SEC_SCHEDULE, V_SCHED_SELECTOR, NULL,
	  .doc = "the workers of the services whose name matches GLOB" },
	{ "workers", SEC_SCHEDULE, V_SCHED_SELECTOR, NULL,
	  .doc = "these workers" },
	{ "container", SEC_SCHEDULE, V_SCHED_SELECTOR, NULL,
	  .doc = "the workers of the container whose id starts with ID" },
	{ "pod", SEC_SCHEDULE, V_SCHED_SELECTOR, NULL,
	  .doc = "the workers of the Kubernetes pod whose uid starts with UID" },
	{ "unit", SEC_SCHEDULE, V_SCHED_SELECTOR, NULL,
	  .doc = "the workers of the systemd units whose name matches GLOB" },
	{ "cgroup", SEC_SCHEDULE, V_SCHED_SELECTOR, NULL,
	  .doc = "the workers in that cgroup or below it" },
	{ "exe", SEC_SCHEDULE, V_SCHED_SELECTOR, NULL,
	  .doc = "the workers whose executable's path matches GLOB" },
	{ "user", SEC_SCHEDULE, V_SCHED_SELECTOR, NULL,
	  .doc = "the workers of that user" },
	{ "modes", SEC_SCHEDULE, V_SCHED_MODES, NULL,
	  .doc = "the modes to record" },
	/* its default follows duration_default: check_all */
	{ "duration", SEC_SCHEDULE, V_DURATION, NULL, SCHED(duration_ns),
	  RANGE(SCHEDULE_SPAN_MIN_NS, SCHEDULE_EVERY_MAX_NS),
	  .doc = "each recording's length" },
	{ "every", SEC_SCHEDULE, V_DURATION, NULL, SCHED(every_ns),
	  RANGE(SCHEDULE_SPAN_MIN_NS, SCHEDULE_EVERY_MAX_NS),
	  .doc = "the period" },
	{ "keep", SEC_SCHEDULE, V_DURATION, "1d", SCHED(keep_ns),
	  RANGE(SCHEDULE_SPAN_MIN_NS, SCHEDULE_KEEP_MAX_NS),
	  .doc = "what it recorded is removed past this age" },
	/* its default follows cpu_budget: check_all; above 0, which
	 * schedule_spec_check holds it to */
	{ "budget", SEC_SCHEDULE, V_PERCENT, NULL, SCHED(budget), RANGE(0, 10000),
	  .doc = "the CPU its recordings may take, a share of one CPU" },

	/* [service NAME]: these, and modes and the [actions] keys (per_service)
	 * for that service's workers; restart is the switch there too, the
	 * command restart_command */
	{ "match", SEC_SERVICE, V_SELECTOR, NULL, SVC(match),
	  .doc = "which workers are this service's" },
	{ "restart_command", SEC_SERVICE, V_TEXT, "", SVC(restart),
	  .doc = "the command that restarts the service, run as root" },
	{ "pid_file", SEC_SERVICE, V_PATH, "", SVC(pid_file),
	  .doc = "the file the service's supervisor writes its main process's pid to" },

	{ "run", SEC_COMMAND, V_RUN, NULL, CMD(run),
	  .doc = "the command line" },
	{ "timeout", SEC_COMMAND, V_DURATION, "60s", CMD(timeout_ns), RANGE(SEC, HOUR),
	  .doc = "the command is killed past it" },
	/* its default follows run: finish_section */
	{ "output", SEC_COMMAND, V_OUTPUT, NULL,
	  .doc = "what becomes the artifact" },
	{ "description", SEC_COMMAND, V_TEXT, "", CMD(description),
	  .doc = "one line shown in the API" },
};

#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

/* Whether key k may be set in section s. */
static bool key_in(const struct key_def *k, enum section_kind s)
{
	return k->sec == s || (k->per_service && s == SEC_SERVICE);
}

/* The row of section s named name, or NULL. */
static const struct key_def *key_find(enum section_kind s, const char *name)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (key_in(&keys[i], s) && !strcmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

const char *config_action_key(enum action_kind a)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (keys[i].kind == V_ACTION && keys[i].off == (size_t)a)
			return keys[i].name;
	return "?";
}

static void copy_str(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src);
}

/* bytes in the largest unit that writes it whole: "64k", "16M", "1024T". */
static const char *fmt_size(uint64_t bytes, char buf[32])
{
	static const struct {
		const char *unit;
		uint64_t bytes;
	} units[] = { { "T", TIB }, { "G", GIB }, { "M", MIB }, { "k", KIB }, { "", 1 } };

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (bytes && bytes % units[i].bytes == 0) {
			snprintf(buf, 32, "%llu%s", (unsigned long long)(bytes / units[i].bytes),
				 units[i].unit);
			return buf;
		}
	}
	return "0";
}

/* A bound of k as the user writes it: "16M", "24h", "10000". */
static const char *fmt_bound(const struct key_def *k, uint64_t v, char buf[32])
{
	if (k->kind == V_SIZE)
		return fmt_size(v, buf);
	if (k->kind == V_DURATION)
		return units_format_duration(v, buf, 32);
	if (k->kind == V_PERCENT) {
		snprintf(buf, 32, v % 100 ? "%.2f%%" : "%.0f%%", (double)v / 100);
		return buf;
	}
	snprintf(buf, 32, "%llu", (unsigned long long)v);
	return buf;
}

bool config_key_doc(size_t i, struct config_key_doc *ret)
{
	const struct key_def *k = i < N_KEYS ? &keys[i] : NULL;

	if (!k)
		return false;
	*ret = (struct config_key_doc){
		.name = k->name, .section = section_names[k->sec],
		.per_service = k->per_service, .def = k->def, .doc = k->doc,
	};
	if (k->kind == V_SIZE || k->kind == V_COUNT || k->kind == V_DURATION ||
	    k->kind == V_PERCENT) {
		fmt_bound(k, k->min, ret->min);
		fmt_bound(k, k->max, ret->max);
	}
	return true;
}

/* --- the parser's state and its one-line errors ------------------------- */

struct parser {
	const char *file;
	unsigned line;
	char *err;
	size_t errlen;
	struct daemon_config *c;	/* the private copy being filled */

	enum section_kind sec;
	unsigned sec_line;		/* its header's line; 0 for the implicit top */
	char sec_title[CONFIG_NAME_MAX + 16]; /* "[top]", "[service web]" */
	struct service_config *svc;	/* the open [service], else NULL */
	struct command_config *cmd;	/* the open [command], else NULL */
	struct schedule_config *sched;	/* the open [schedule], else NULL */
	/* where each key was set in the section that last took it: a fixed
	 * section's keys for the whole file, check_all's lines */
	unsigned key_line[N_KEYS];
	unsigned fixed_line[SEC_COUNT];	/* where each fixed section was opened */
	bool has_o;			/* the open [command]'s run uses %o */
};

__attribute__((format(printf, 3, 4)))
static int fail_at(struct parser *p, unsigned line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!p->err || !p->errlen)
		return -EINVAL;
	n = snprintf(p->err, p->errlen, "%s:%u: ", p->file, line);
	if (n >= 0 && (size_t)n < p->errlen) {
		va_start(ap, fmt);
		vsnprintf(p->err + n, p->errlen - n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

#define fail(p, ...) fail_at((p), (p)->line, __VA_ARGS__)

/* s cut to SHOWN_MAX bytes (on a UTF-8 boundary) with "...", in buf.
 * Lines were checked for control characters, so this stays one line. */
static const char *shown(const char *s, char buf[SHOWN_MAX + 4])
{
	size_t n = strlen(s);

	if (n <= SHOWN_MAX)
		return s;
	n = SHOWN_MAX;
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	memcpy(buf, s, n);
	memcpy(buf + n, "...", 4);
	return buf;
}

static bool is_blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

static char *trim(char *s)
{
	char *end = s + strlen(s);

	while (is_blank(*s))
		s++;
	while (end > s && is_blank(end[-1]))
		*--end = '\0';
	return s;
}

/* --- values ------------------------------------------------------------- */

static bool parse_bool(const char *v, signed char *ret)
{
	static const char *const yes[] = { "on", "true", "yes", "1" };
	static const char *const no[] = { "off", "false", "no", "0" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(v, yes[i])) {
			*ret = 1;
			return true;
		}
		if (!strcasecmp(v, no[i])) {
			*ret = 0;
			return true;
		}
	}
	return false;
}

/* Digits, an optional fraction, then letters: the shape units_* accept
 * that a person writes. Keeps out what strtod would also take ("1e3",
 * "0x10", " 5"). */
static bool number_shaped(const char *v, const char **ret_suffix)
{
	const char *s = v;
	bool digit = false;

	while (isdigit((unsigned char)*s) || *s == '.')
		digit |= *s++ != '.';
	if (!digit)
		return false;
	*ret_suffix = s;
	while (isalpha((unsigned char)*s))
		s++;
	return *s == '\0';
}

static int parse_duration(const char *v, uint64_t *ret)
{
	const char *suffix;

	if (!number_shaped(v, &suffix))
		return -EINVAL;
	return units_parse_duration_ns(v, SEC, ret);
}

static int parse_size(const char *v, uint64_t *ret)
{
	const char *suffix;

	if (!number_shaped(v, &suffix))
		return -EINVAL;
	return units_parse_count(v, ret);
}

static int parse_whole(const char *v, uint64_t *ret)
{
	uint64_t x = 0;

	if (!*v)
		return -EINVAL;
	for (const char *s = v; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		if (x > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*ret = x;
	return 0;
}

/* "ADDR:PORT", "[ADDR6]:PORT" or "": 0 and whether it is loopback only. */
static int parse_listen(const char *v, bool *ret_loopback)
{
	char addr[INET6_ADDRSTRLEN + 1];
	const char *colon, *a = v;
	size_t alen;
	uint64_t port;
	bool v6 = v[0] == '[';
	unsigned char bin[16];

	if (!*v) {
		*ret_loopback = true;
		return 0;
	}
	if (v6) {
		const char *close = strchr(v, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		a = v + 1;
		alen = (size_t)(close - a);
		colon = close + 1;
	} else {
		colon = strrchr(v, ':');
		if (!colon)
			return -EINVAL;
		alen = (size_t)(colon - v);
	}
	if (alen == 0 || alen >= sizeof(addr))
		return -EINVAL;
	memcpy(addr, a, alen);
	addr[alen] = '\0';
	if (inet_pton(v6 ? AF_INET6 : AF_INET, addr, bin) != 1)
		return -EINVAL;
	if (strlen(colon + 1) > 5 || parse_whole(colon + 1, &port) < 0 || port < 1 ||
	    port > 65535)
		return -EINVAL;
	if (v6) {
		static const unsigned char lo6[16] = { [15] = 1 };
		struct in6_addr in6;

		memcpy(&in6, bin, sizeof(in6));
		*ret_loopback = !memcmp(bin, lo6, sizeof(lo6)) ||
				(IN6_IS_ADDR_V4MAPPED(&in6) && bin[12] == 127);
	} else {
		*ret_loopback = bin[0] == 127;
	}
	return 0;
}

/* A user or group name: what useradd and directory services produce. */
bool config_valid_name(const char *s)
{
	if (!*s || *s == '-')
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.@$-", *s))
			return false;
	return true;
}

/* An HTTP header name: RFC 9110's token. */
static bool valid_header(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("!#$%&'*+-.^_`|~", *s))
			return false;
	return true;
}

bool config_valid_host(const char *s)
{
	unsigned char bin[16];
	char v6[INET6_ADDRSTRLEN + 2];
	size_t n = strlen(s), label = 0;

	if (s[0] == '[' && n >= 2 && n - 2 < sizeof(v6) && s[n - 1] == ']') {
		memcpy(v6, s + 1, n - 2);
		v6[n - 2] = '\0';
		return inet_pton(AF_INET6, v6, bin) == 1;
	}
	if (inet_pton(AF_INET, s, bin) == 1 || inet_pton(AF_INET6, s, bin) == 1)
		return true;
	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i <= n; i++) {
		if (s[i] == '.' || !s[i]) {
			if (label == 0 || label > 63 || s[i - 1] == '-')
				return false;
			label = 0;
		} else if (isalnum((unsigned char)s[i]) || (s[i] == '-' && label > 0)) {
			label++;
		} else {
			return false;
		}
	}
	return true;
}

static bool valid_section_name(const char *s, bool command)
{
	if (!*s)
		return false;
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (command ? !(islower(ch) || isdigit(ch) || ch == '_' || ch == '-')
			    : !(isalnum(ch) || strchr("_.@-", ch)))
			return false;
	}
	return true;
}

/* One URL: http:// or https://, then a host (and port), an optional path;
 * no blank, comma, quote or control character. */
static bool valid_url(const char *s, size_t n)
{
	size_t skip = !strncmp(s, "http://", 7) ? 7 : !strncmp(s, "https://", 8) ? 8 : 0;

	if (!skip || n <= skip || n > 255 || s[skip] == '/')
		return false;
	for (size_t i = skip; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f ||
		    strchr(",\"'<>\\`", s[i]))
			return false;
	return true;
}

const char *config_check_urls(const char *s, bool list)
{
	size_t count = 0;

	if (!*s)
		return "";
	for (const char *item = s;; item++) {
		const char *comma = list ? strchr(item, ',') : NULL;
		size_t n = comma ? (size_t)(comma - item) : strlen(item);

		if (!valid_url(item, n))
			return "each URL must be http://HOST:PORT or https://HOST:PORT, at most "
			       "255 bytes, without blanks";
		if (++count > 16)
			return "at most 16 URLs";
		if (!comma)
			return "";
		item = comma;
	}
}

static int parse_selector(struct parser *p, const char *key, const char *v,
			  struct selector *ret)
{
	static const struct {
		const char *prefix;
		enum selector_kind kind;
	} kinds[] = {
		{ "unit:", SELECT_UNIT }, { "cgroup:", SELECT_CGROUP },
		{ "exe:", SELECT_EXE }, { "user:", SELECT_USER },
	};
	char buf[SHOWN_MAX + 4];
	struct selector s = { .kind = SELECT_ALL };
	const char *rest = NULL;

	if (strcmp(v, "all") != 0) {
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
			size_t n = strlen(kinds[i].prefix);

			if (!strncmp(v, kinds[i].prefix, n)) {
				s.kind = kinds[i].kind;
				rest = v + n;
				break;
			}
		}
		if (!rest)
			return fail(p, "%s: '%s' is not a selector; use all, unit:GLOB, "
				    "cgroup:/PATH, exe:GLOB or user:NAME", key, shown(v, buf));
		if (!*rest)
			return fail(p, "%s: '%s' selects nothing; write what follows the ':', "
				    "for example unit:nginx.service", key, shown(v, buf));
		if (s.kind == SELECT_CGROUP && rest[0] != '/')
			return fail(p, "%s: '%s' is not an absolute cgroup path; write "
				    "cgroup:/system.slice/NAME", key, shown(v, buf));
		if (s.kind == SELECT_USER && (!config_valid_name(rest) || strlen(rest) >= CONFIG_NAME_MAX))
			return fail(p, "%s: '%s' is not a user name; write user:NAME with at "
				    "most %d of A-Z a-z 0-9 _ . @ $ -", key, shown(v, buf),
				    CONFIG_NAME_MAX - 1);
		copy_str(s.value, sizeof(s.value), rest);
		/* cgroup:/a/ and cgroup:/a are the same subtree */
		if (s.kind == SELECT_CGROUP) {
			size_t n = strlen(s.value);

			while (n > 1 && s.value[n - 1] == '/')
				s.value[--n] = '\0';
		}
	}
	*ret = s;
	return 0;
}

/* The next comma-separated item of *list (trimmed), or NULL at the end;
 * an empty item is an error the caller reports. */
static char *next_item(char **list, bool *ret_empty)
{
	char *item = *list, *comma;

	if (!item)
		return NULL;
	comma = strchr(item, ',');
	if (comma) {
		*comma = '\0';
		*list = comma + 1;
	} else {
		*list = NULL;
	}
	item = trim(item);
	*ret_empty = !*item;
	return item;
}

#define EMPTY_ITEM(p, key) \
	fail((p), "%s has an empty item; remove the extra comma", (key))

static const char *mode_list(char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < EVENT_COUNT && used < len; i++) {
		int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", event_defs[i].name);

		if (n < 0)
			break;
		used += (size_t)n;
	}
	return buf;
}

/* --- each kind's parser: checks v and stores it in field ---------------- */

/* The string kinds' last step: every value fits CONFIG_VALUE_MAX, checked
 * when read, and k->size bounds what each kind takes. */
static int store(const struct key_def *k, const char *v, void *field)
{
	copy_str(field, k->size, v);
	return 0;
}

static int set_listen(struct parser *p, const struct key_def *k, char *v, void *field)
{
	char buf[SHOWN_MAX + 4];
	bool loopback;

	if (parse_listen(v, &loopback) < 0)
		return fail(p, "%s = %s is not ADDR:PORT; write 127.0.0.1:9700, [::1]:9700 "
			    "(port 1 to 65535), or \"\" for no HTTP", k->name, shown(v, buf));
	return store(k, v, field);
}

static int set_path(struct parser *p, const struct key_def *k, char *v, void *field)
{
	char buf[SHOWN_MAX + 4];

	if (!*v && k->kind == V_PATH_SET)
		return fail(p, "%s is empty; set an absolute path", k->name);
	if (*v && v[0] != '/')
		return fail(p, "%s = %s is not an absolute path; write it from /", k->name,
			    shown(v, buf));
	if (strlen(v) >= k->size)
		return fail(p, "%s is %zu bytes, above the limit of %zu bytes; use a "
			    "shorter path", k->name, strlen(v), k->size - 1);
	return store(k, v, field);
}

static int set_name(struct parser *p, const struct key_def *k, char *v, void *field)
{
	char buf[SHOWN_MAX + 4];

	if (strlen(v) >= k->size)
		return fail(p, "%s is %zu bytes, above the limit of %zu; use a shorter name",
			    k->name, strlen(v), k->size - 1);
	if (*v && !config_valid_name(v))
		return fail(p, "%s = %s is not a %s; use A-Z a-z 0-9 _ . @ $ -, not starting "
			    "with -", k->name, shown(v, buf),
			    k->kind == V_GROUP ? "group name" : "name");
	return store(k, v, field);
}

static int set_header(struct parser *p, const struct key_def *k, char *v, void *field)
{
	char buf[SHOWN_MAX + 4];

	if (strlen(v) >= k->size)
		return fail(p, "%s is %zu bytes, above the limit of %zu; use a shorter name",
			    k->name, strlen(v), k->size - 1);
	if (!valid_header(v))
		return fail(p, "%s = %s is not an HTTP header name; write one such as "
			    "X-Forwarded-User", k->name, shown(v, buf));
	return store(k, v, field);
}

/* One item of a list, checked and stored as item n of the list's field. */
typedef int item_fn(struct parser *p, const struct key_def *k, char *it, void *field,
		    size_t n);

/* v's comma-separated items ("entries" in messages), at most
 * CONFIG_MAX_NAMES, each through one; their number in the row's length
 * field. */
static int set_list(struct parser *p, const struct key_def *k, char *v, void *field,
		    item_fn *one, const char *items)
{
	size_t n = 0;
	bool empty;

	for (char *list = *v ? v : NULL, *it; (it = next_item(&list, &empty));) {
		if (empty)
			return EMPTY_ITEM(p, k->name);
		if (n == CONFIG_MAX_NAMES)
			return fail(p, "%s has more than %d %s, the limit; list at most %d",
				    k->name, CONFIG_MAX_NAMES, items, CONFIG_MAX_NAMES);
		if (one(p, k, it, field, n) < 0)
			return -EINVAL;
		n++;
	}
	*(size_t *)((char *)p->c + k->n_off) = n;
	return 0;
}

static int user_item(struct parser *p, const struct key_def *k, char *it, void *field, size_t n)
{
	char buf[SHOWN_MAX + 4];

	if (!config_valid_name(it) || strlen(it) >= CONFIG_NAME_MAX)
		return fail(p, "%s: '%s' is not a user name; use at most %d of A-Z a-z 0-9 _ . "
			    "@ $ -, not starting with -", k->name, shown(it, buf),
			    CONFIG_NAME_MAX - 1);
	copy_str(((char (*)[CONFIG_NAME_MAX])field)[n], CONFIG_NAME_MAX, it);
	return 0;
}

static int addr_item(struct parser *p, const struct key_def *k, char *it, void *field, size_t n)
{
	char buf[SHOWN_MAX + 4];
	unsigned char bin[16];

	if (inet_pton(AF_INET, it, bin) != 1 && inet_pton(AF_INET6, it, bin) != 1)
		return fail(p, "%s: '%s' is not an IP address; write addresses such as "
			    "10.0.0.5 or fd00::5, without a port", k->name, shown(it, buf));
	copy_str(((char (*)[CONFIG_NAME_MAX])field)[n], CONFIG_NAME_MAX, it);
	return 0;
}

/* Kept in lower case, an IPv6 address without its brackets: as a Host
 * header is compared. */
static int host_item(struct parser *p, const struct key_def *k, char *it, void *field, size_t n)
{
	char buf[SHOWN_MAX + 4];

	if (!config_valid_host(it))
		return fail(p, "%s: '%s' is not a host name or an IP address; write names "
			    "such as nprof.example.com or addresses such as 192.0.2.7, without "
			    "a port", k->name, shown(it, buf));
	if (it[0] == '[') {
		it[strlen(it) - 1] = '\0';
		it++;
	}
	for (char *c = it; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	copy_str(((char (*)[CONFIG_HOST_MAX])field)[n], CONFIG_HOST_MAX, it);
	return 0;
}

static int selector_item(struct parser *p, const struct key_def *k, char *it, void *field,
			 size_t n)
{
	return parse_selector(p, k->name, it, &((struct selector *)field)[n]);
}

static int set_users(struct parser *p, const struct key_def *k, char *v, void *field)
{
	return set_list(p, k, v, field, user_item, "entries");
}

static int set_addrs(struct parser *p, const struct key_def *k, char *v, void *field)
{
	return set_list(p, k, v, field, addr_item, "entries");
}

static int set_hostnames(struct parser *p, const struct key_def *k, char *v, void *field)
{
	return set_list(p, k, v, field, host_item, "entries");
}

static int set_selects(struct parser *p, const struct key_def *k, char *v, void *field)
{
	if (set_list(p, k, v, field, selector_item, "selectors") < 0)
		return -EINVAL;
	if (*(size_t *)((char *)p->c + k->n_off) == 0)
		return fail(p, "%s is empty, which would select no worker; write %s = all, "
			    "or selectors such as unit:nginx.service", k->name, k->name);
	return 0;
}

static int set_selector(struct parser *p, const struct key_def *k, char *v, void *field)
{
	return parse_selector(p, k->name, v, field);
}

/* The switches a mode or action key sets: the open service's, else the
 * host's. */
static struct switches *switches_of(struct parser *p)
{
	return p->svc ? &p->svc->overrides : &p->c->allow;
}

static int set_modes(struct parser *p, const struct key_def *k, char *v, void *field)
{
	signed char mode[EVENT_COUNT] = { 0 };
	char buf[SHOWN_MAX + 4], names[256];
	bool empty;

	(void)field;
	for (char *list = *v ? v : NULL, *it; (it = next_item(&list, &empty));) {
		const struct event_def *e;

		if (empty)
			return EMPTY_ITEM(p, k->name);
		e = event_find(it);
		if (!e)
			return fail(p, "%s: unknown mode '%s'; valid modes: %s", k->name,
				    shown(it, buf), mode_list(names, sizeof(names)));
		mode[e - event_defs] = 1;
	}
	memcpy(switches_of(p)->mode, mode, sizeof(mode));
	return 0;
}

static int set_action(struct parser *p, const struct key_def *k, char *v, void *field)
{
	char buf[SHOWN_MAX + 4];

	(void)field;
	if (!parse_bool(v, &switches_of(p)->action[k->off]))
		return fail(p, "%s = %s is not on or off; write on, off, true, false, yes, no, "
			    "1 or 0", k->name, shown(v, buf));
	return 0;
}

/* A person who wrote a command in a service's restart meant restart_command. */
static int check_restart_switch(struct parser *p, const struct key_def *k, const char *v)
{
	char buf[SHOWN_MAX + 4];
	signed char on;

	if (p->svc && !parse_bool(v, &on))
		return fail(p, "%s = %s is not on or off; %s switches the action here too: set "
			    "the command with restart_command = %s", k->name, shown(v, buf),
			    k->name, shown(v, buf));
	return 0;
}

static int set_number(struct parser *p, const struct key_def *k, char *v, void *field)
{
	char buf[SHOWN_MAX + 4], lo[32], hi[32];
	uint64_t x;
	int r;

	fmt_bound(k, k->min, lo);
	fmt_bound(k, k->max, hi);
	switch (k->kind) {
	case V_SIZE:
		r = parse_size(v, &x);
		if (r == -EINVAL)
			return fail(p, "%s = %s is not a size; write bytes, or a number with "
				    "k, M, G or T (64k, 10G)", k->name, shown(v, buf));
		break;
	case V_DURATION:
		r = parse_duration(v, &x);
		if (r == -EINVAL)
			return fail(p, "%s = %s is not a duration; write a number with ms, s, "
				    "m, h or d (30s, 5m, 2h, 30d); a bare number is seconds",
				    k->name, shown(v, buf));
		break;
	default:
		r = parse_whole(v, &x);
		if (r == -EINVAL)
			return fail(p, "%s = %s is not a whole number; write one from %s to %s",
				    k->name, shown(v, buf), lo, hi);
		break;
	}
	if (r == -ERANGE || x > k->max)
		return fail(p, "%s = %s is above the limit of %s; set at most %s", k->name,
			    shown(v, buf), hi, hi);
	if (x < k->min)
		return fail(p, "%s = %s is below the minimum of %s; set at least %s", k->name,
			    shown(v, buf), lo, lo);
	if (k->size == sizeof(unsigned))
		*(unsigned *)field = (unsigned)x;
	else
		*(uint64_t *)field = x;
	return 0;
}

static int set_text(struct parser *p, const struct key_def *k, char *v, void *field)
{
	(void)p;
	return store(k, v, field);
}

/* "%p %d %o %%" only: a typo such as %P would otherwise reach the
 * command line as it is. */
static int set_run(struct parser *p, const struct key_def *k, char *v, void *field)
{
	p->has_o = false;
	if (!*v)
		return fail(p, "%s is empty; write the command line, for example "
			    "%s = perf stat -p %%p -- sleep %%d", k->name, k->name);
	for (const char *s = v; (s = strchr(s, '%')); s += 2) {
		if (s[1] == 'o')
			p->has_o = true;
		if (!s[1] || !strchr("pdo%", s[1]))
			return fail(p, "%s has an unknown placeholder '%%%.1s'; use %%p (pid), "
				    "%%d (seconds), %%o (output file) or %%%% for a %%", k->name,
				    s + 1);
	}
	return store(k, v, field);
}

static int set_output(struct parser *p, const struct key_def *k, char *v, void *field)
{
	char buf[SHOWN_MAX + 4];

	(void)field;
	if (strcmp(v, "file") && strcmp(v, "stdout") && strcmp(v, "none"))
		return fail(p, "%s = %s is not an output; write file (keep %%o), stdout or none",
			    k->name, shown(v, buf));
	p->cmd->keep_output = !strcmp(v, "file");
	p->cmd->keep_stdout = !strcmp(v, "stdout");
	return 0;
}

static int set_urls(struct parser *p, const struct key_def *k, char *v, void *field)
{
	const char *why = config_check_urls(v, k->kind == V_URLS);
	char buf[SHOWN_MAX + 4];

	if (*why)
		return fail(p, "%s = %s: %s; write for example %s", k->name, shown(v, buf), why,
			    k->kind == V_URLS ? "http://10.0.0.2:2379,http://10.0.0.3:2379"
					      : "https://db1.example.com:9443");
	return store(k, v, field);
}

static int set_host(struct parser *p, const struct key_def *k, char *v, void *field)
{
	char buf[SHOWN_MAX + 4];

	if (strlen(v) >= k->size || (*v && !valid_section_name(v, false)) || strchr(v, '@') ||
	    v[0] == '.')
		return fail(p, "%s = %s is not a host name; use at most %zu of A-Z a-z 0-9 _ . -",
			    k->name, shown(v, buf), k->size - 1);
	return store(k, v, field);
}

static int set_percent(struct parser *p, const struct key_def *k, char *v, void *field)
{
	char buf[SHOWN_MAX + 4], lo[32], hi[32], *end;
	double x = strtod(v, &end);

	if (end == v || (*end && strcmp(end, "%")) || !(x * 100 >= (double)k->min) ||
	    !(x * 100 <= (double)k->max))
		return fail(p, "%s = %s is not a share from %s to %s of one CPU; write for example "
			    "1%% or 0.5%%", k->name, shown(v, buf), fmt_bound(k, k->min, lo),
			    fmt_bound(k, k->max, hi));
	*(double *)field = x / 100;
	return 0;
}

/* A schedule's selector, of the kind the key names: one kind a section
 * (the API's object holds one key too). */
static int set_sched_selector(struct parser *p, const struct key_def *k, char *v, void *field)
{
	struct schedule_selector *sel = &p->sched->spec.selector;
	char why[512];
	bool empty;

	(void)field;
	if (sel->kind != BY_NONE)
		return fail(p, "%s: %s already has a selector (%s); a schedule has exactly one, "
			    "keep one", k->name, p->sec_title, schedule_selector_kind_key(sel));
	if (strcmp(k->name, "workers")) {
		if (schedule_selector_set(sel, k->name, v, why, sizeof(why)) < 0)
			return fail(p, "%s", why);
		return 0;
	}
	for (char *list = *v ? v : NULL, *it; (it = next_item(&list, &empty));) {
		if (empty)
			return EMPTY_ITEM(p, k->name);
		if (schedule_selector_add_worker(sel, it, why, sizeof(why)) < 0)
			return fail(p, "%s", why);
	}
	if (sel->kind == BY_NONE)
		return fail(p, "workers is empty; list worker ids (nprof workers shows them)");
	return 0;
}

static int set_sched_modes(struct parser *p, const struct key_def *k, char *v, void *field)
{
	struct schedule_spec *spec = &p->sched->spec;
	char why[512];
	bool empty;

	(void)field;
	for (char *list = *v ? v : NULL, *it; (it = next_item(&list, &empty));) {
		if (empty)
			return EMPTY_ITEM(p, k->name);
		if (schedule_spec_add_mode(spec, it, why, sizeof(why)) < 0)
			return fail(p, "%s: %s", k->name, why);
	}
	return 0;
}

static int (*const setters[V_KIND_COUNT])(struct parser *p, const struct key_def *k, char *v,
					   void *field) = {
	[V_LISTEN] = set_listen, [V_PATH] = set_path, [V_PATH_SET] = set_path,
	[V_NAME] = set_name, [V_GROUP] = set_name, [V_NAMES] = set_users,
	[V_ADDRS] = set_addrs, [V_HEADER] = set_header, [V_SIZE] = set_number,
	[V_COUNT] = set_number, [V_DURATION] = set_number, [V_PERCENT] = set_percent,
	[V_SELECTS] = set_selects,
	[V_SELECTOR] = set_selector, [V_MODES] = set_modes, [V_ACTION] = set_action,
	[V_TEXT] = set_text, [V_RUN] = set_run, [V_OUTPUT] = set_output,
	[V_URLS] = set_urls, [V_URL] = set_urls, [V_HOST] = set_host,
	[V_HOSTNAMES] = set_hostnames, [V_SCHED_SELECTOR] = set_sched_selector,
	[V_SCHED_MODES] = set_sched_modes,
};

/* v into key k of the open section (its struct: the service, the command
 * or the whole configuration). */
static int set_value(struct parser *p, const struct key_def *k, char *v)
{
	char *base = p->svc ? (char *)p->svc : p->cmd ? (char *)p->cmd
		     : p->sched ? (char *)p->sched : (char *)p->c;

	if (k->check && k->check(p, k, v) < 0)
		return -EINVAL;
	return setters[k->kind](p, k, v, base + k->off);
}

/* --- sections ----------------------------------------------------------- */

/* Where key of section s was set (in the open one, for a [service] or
 * [command]), or 0. */
static unsigned key_line(const struct parser *p, enum section_kind s, const char *key)
{
	const struct key_def *k = key_find(s, key);

	return k ? p->key_line[k - keys] : 0;
}

/* The line to blame for key of section s: where it was set, else the
 * last one read. */
static unsigned line_of(const struct parser *p, enum section_kind s, const char *key)
{
	unsigned line = key_line(p, s, key);

	return line ? line : p->line;
}

/* Section s's defaults, into the struct the parser has open for it. */
static void apply_defaults(struct parser *p, enum section_kind s)
{
	char v[CONFIG_VALUE_MAX];

	for (size_t i = 0; i < N_KEYS; i++) {
		if (keys[i].sec != s || !keys[i].def)
			continue;
		/* a list's parser cuts its copy into items */
		copy_str(v, sizeof(v), keys[i].def);
		(void)set_value(p, &keys[i], v);
	}
}

void config_defaults(struct daemon_config *c)
{
	struct parser p = { .file = "(defaults)", .c = c };

	memset(c, 0, sizeof(*c));
	for (int s = SEC_TOP; s < SEC_SERVICE; s++)
		apply_defaults(&p, s);
	/* [instances] modes: every event nprof has (src/profile/events.c) */
	memset(c->allow.mode, 1, sizeof(c->allow.mode));
}

/* What a section must hold, checked when the next one opens or at the end. */
static int finish_section(struct parser *p)
{
	if (p->svc && !key_line(p, p->sec, "match"))
		return fail_at(p, p->sec_line, "%s has no match; add match = unit:GLOB, "
			       "cgroup:/PATH, exe:GLOB or user:NAME", p->sec_title);
	/* pid_file says who may have restart_command run: alone, nothing */
	if (p->svc && p->svc->pid_file[0] && !p->svc->restart[0])
		return fail_at(p, key_line(p, p->sec, "pid_file"), "%s has pid_file but no restart_command; "
			       "add restart_command = COMMAND, or remove pid_file", p->sec_title);
	if (p->cmd) {
		unsigned run = key_line(p, p->sec, "run"), output = key_line(p, p->sec, "output");

		if (!run)
			return fail_at(p, p->sec_line, "%s has no run; add run = COMMAND "
				       "(%%p pid, %%d seconds, %%o output file)", p->sec_title);
		/* output's default follows run: a command that names an output
		 * file keeps it, any other keeps what it prints */
		if (!output) {
			p->cmd->keep_output = p->has_o;
			p->cmd->keep_stdout = !p->has_o;
		} else if (p->cmd->keep_output && !p->has_o) {
			return fail_at(p, output, "output = file but run has no %%o; put %%o "
				       "where the command writes its file, or set output = stdout");
		}
	}
	if (p->sched) {
		/* what check_all's messages name: a field's line, else the header's */
		p->sched->header = p->sec_line;
		for (int f = 0; f < SF_COUNT; f++)
			p->sched->line[f] = p->sec_line;
		for (size_t i = 0; i < N_KEYS; i++) {
			int f = keys[i].kind == V_SCHED_SELECTOR ? SF_SELECTOR : -1;

			if (keys[i].sec != SEC_SCHEDULE || !p->key_line[i])
				continue;
			for (int g = 0; f < 0 && g < SF_COUNT; g++)
				if (!strcmp(keys[i].name, schedule_field_name(g)))
					f = g;
			if (f >= 0)
				p->sched->line[f] = p->key_line[i];
		}
	}
	p->svc = NULL;
	p->cmd = NULL;
	p->sched = NULL;
	return 0;
}

/* Section s's keys, its own first: a service's, then what it overrides. */
static const char *key_names(enum section_kind s, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int own = 1; own >= 0; own--) {
		for (size_t i = 0; i < N_KEYS && used < len; i++) {
			int n;

			if (!key_in(&keys[i], s) || (keys[i].sec == s) != own)
				continue;
			n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
				     keys[i].name);
			if (n < 0)
				break;
			used += (size_t)n;
		}
	}
	return buf;
}

static int open_section(struct parser *p, char *inside)
{
	static const char valid[] = "valid sections: [workers], [instances], [actions], "
				    "[artifacts], [signin], [cluster], [continuous], [service NAME], "
				    "[command NAME], [schedule NAME]";
	char buf[SHOWN_MAX + 4];
	char *head = trim(inside), *name = NULL;
	enum section_kind s = SEC_COUNT;

	if (finish_section(p) < 0)
		return -EINVAL;
	for (int i = SEC_TOP; i < SEC_SERVICE; i++)
		if (!strcmp(head, section_names[i]))
			s = i;
	for (int i = SEC_SERVICE; i <= SEC_SCHEDULE; i++) {
		size_t n = strlen(section_names[i]);

		if (!strncmp(head, section_names[i], n) && (!head[n] || is_blank(head[n]))) {
			s = i;
			name = trim(head + n);
		}
	}
	if (s == SEC_COUNT)
		return fail(p, "unknown section [%s]; %s", shown(head, buf), valid);

	for (size_t i = 0; i < N_KEYS; i++)
		if (key_in(&keys[i], s))
			p->key_line[i] = 0;
	p->sec = s;
	p->sec_line = p->line;
	if (!name) {
		if (p->fixed_line[s])
			return fail(p, "[%s] appears twice (first at line %u); merge the two",
				    section_names[s], p->fixed_line[s]);
		p->fixed_line[s] = p->line;
		snprintf(p->sec_title, sizeof(p->sec_title), "[%s]", section_names[s]);
		return 0;
	}

	const char *kind = section_names[s];
	bool command = s == SEC_COMMAND;

	if (!*name)
		return fail(p, "[%s] needs a name; write [%s NAME]", kind, kind);
	if (!valid_section_name(name, command))
		return fail(p, "[%s %s]: the name may hold only %s; rename it", kind,
			    shown(name, buf), command ? "a-z 0-9 _ - (it is part of the API's URLs)"
						      : "A-Z a-z 0-9 _ . @ -");
	if (strlen(name) >= CONFIG_NAME_MAX)
		return fail(p, "[%s %s]: the name is %zu bytes, above the limit of %d; use a "
			    "shorter one", kind, shown(name, buf), strlen(name),
			    CONFIG_NAME_MAX - 1);
	snprintf(p->sec_title, sizeof(p->sec_title), "[%s %s]", kind, name);

	if (s == SEC_SERVICE) {
		struct daemon_config *c = p->c;

		for (size_t i = 0; i < c->n_services; i++)
			if (!strcmp(c->services[i].name, name))
				return fail(p, "%s appears twice; merge the two or rename one",
					    p->sec_title);
		if (c->n_services == CONFIG_MAX_SERVICES)
			return fail(p, "more than %d [service] sections, the limit; merge some "
				    "with a wider match", CONFIG_MAX_SERVICES);
		p->svc = &c->services[c->n_services++];
		memset(p->svc, 0, sizeof(*p->svc));
		memset(&p->svc->overrides, -1, sizeof(p->svc->overrides));
		copy_str(p->svc->name, sizeof(p->svc->name), name);
		apply_defaults(p, s);
	} else if (s == SEC_COMMAND) {
		struct daemon_config *c = p->c;

		for (size_t i = 0; i < c->n_commands; i++)
			if (!strcmp(c->commands[i].name, name))
				return fail(p, "%s appears twice; merge the two or rename one",
					    p->sec_title);
		if (c->n_commands == CONFIG_MAX_COMMANDS)
			return fail(p, "more than %d [command] sections, the limit; remove "
				    "some", CONFIG_MAX_COMMANDS);
		p->cmd = &c->commands[c->n_commands++];
		memset(p->cmd, 0, sizeof(*p->cmd));
		copy_str(p->cmd->name, sizeof(p->cmd->name), name);
		apply_defaults(p, s);
		p->has_o = false;
	} else {
		struct daemon_config *c = p->c;

		for (size_t i = 0; i < c->n_schedules; i++)
			if (!strcmp(c->schedules[i].name, name))
				return fail(p, "%s appears twice; merge the two or rename one",
					    p->sec_title);
		if (c->n_schedules == CONFIG_MAX_SCHEDULES)
			return fail(p, "more than %d [schedule] sections, the limit; merge some "
				    "with a wider selector", CONFIG_MAX_SCHEDULES);
		p->sched = &c->schedules[c->n_schedules++];
		memset(p->sched, 0, sizeof(*p->sched));
		copy_str(p->sched->name, sizeof(p->sched->name), name);
		apply_defaults(p, s);
	}
	return 0;
}

static int set_key(struct parser *p, const char *key, char *value)
{
	const struct key_def *k = key_find(p->sec, key);
	char buf[SHOWN_MAX + 4], names[512];

	if (p->sec == SEC_TOP && !p->fixed_line[SEC_TOP])
		p->fixed_line[SEC_TOP] = p->line;
	if (k) {
		if (p->key_line[k - keys])
			return fail(p, "duplicate key '%s' in %s (first at line %u); keep one",
				    key, p->sec_title, p->key_line[k - keys]);
		p->key_line[k - keys] = p->line;
		return set_value(p, k, value);
	}
	/* A key of another section is most likely under the wrong header. */
	for (size_t i = 0; i < N_KEYS; i++) {
		enum section_kind s = keys[i].sec;

		if (!strcmp(keys[i].name, key))
			return fail(p, "key '%s' is not one of %s's; move it %s[%s%s]",
				    key, p->sec_title,
				    s == SEC_TOP ? "above the first section, or under " : "under ",
				    section_names[s], s >= SEC_SERVICE ? " NAME" : "");
	}
	return fail(p, "unknown key '%s' in %s; valid keys: %s", shown(key, buf), p->sec_title,
		    key_names(p->sec, names, sizeof(names)));
}

static int parse_line(struct parser *p, const char *s, size_t n)
{
	char value[CONFIG_VALUE_MAX], key[CONFIG_NAME_MAX];
	size_t i = 0, k0, klen, v0, vlen = 0;

	while (i < n && is_blank(s[i]))
		i++;
	if (i == n || s[i] == '#')
		return 0;

	if (s[i] == '[') {
		char inside[LINE_MAX_BYTES + 1];
		const char *close = memchr(s + i, ']', n - i);
		size_t j;

		if (!close)
			return fail(p, "'[' without ']'; write [section]");
		j = (size_t)(close - s) + 1;
		while (j < n && is_blank(s[j]))
			j++;
		if (j < n && s[j] != '#')
			return fail(p, "text after ']'; put it on a line of its own");
		memcpy(inside, s + i + 1, (size_t)(close - s) - i - 1);
		inside[close - s - i - 1] = '\0';
		return open_section(p, inside);
	}

	k0 = i;
	while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '-'))
		i++;
	klen = i - k0;
	if (klen == 0)
		return fail(p, "expected key = value, found '%c'; write key = value or "
			    "[section]", s[i]);
	memcpy(key, s + k0, klen < sizeof(key) ? klen : sizeof(key) - 1);
	key[klen < sizeof(key) ? klen : sizeof(key) - 1] = '\0';
	while (i < n && is_blank(s[i]))
		i++;
	if (i == n || s[i] != '=')
		return fail(p, "expected '=' after '%s'; write %s = value", key, key);
	i++;
	while (i < n && is_blank(s[i]))
		i++;

	if (i < n && s[i] == '"') {
		/* \" and \\ are the only escapes, so that a command line can hold
		 * a quote; any other backslash is itself */
		for (i++;; i++) {
			if (i == n)
				return fail(p, "%s: quoted value without its closing '\"'; close "
					    "it", key);
			if (s[i] == '"')
				break;
			if (s[i] == '\\' && i + 1 < n && (s[i + 1] == '"' || s[i + 1] == '\\'))
				i++;
			if (vlen == sizeof(value) - 1)
				return fail(p, "%s: the value is longer than %zu bytes, the limit; "
					    "shorten it", key, sizeof(value) - 1);
			value[vlen++] = s[i];
		}
		value[vlen] = '\0';
		for (i++; i < n && is_blank(s[i]); i++)
			;
		if (i < n && s[i] != '#')
			return fail(p, "%s: text after the closing quote; quote the whole value, "
				    "with \\\" for a quote inside", key);
		return set_key(p, key, value);
	}

	v0 = i;
	while (i < n && s[i] != '#')
		i++;
	while (i > v0 && is_blank(s[i - 1]))
		i--;
	vlen = i - v0;
	if (vlen > sizeof(value) - 1)
		return fail(p, "%s: the value is %zu bytes, above the limit of %zu; shorten it",
			    key, vlen, sizeof(value) - 1);
	memcpy(value, s + v0, vlen);
	value[vlen] = '\0';
	return set_key(p, key, value);
}

/* Checks between keys, once the whole text is known. */
static int check_all(struct parser *p)
{
	struct daemon_config *c = p->c;
	char buf[SHOWN_MAX + 4], t1[32], t2[32];
	bool loopback = true;

	(void)parse_listen(c->listen, &loopback);
	if (!loopback && (!c->tls_cert[0] || !c->tls_key[0]))
		return fail_at(p, line_of(p, SEC_TOP, "listen"),
			       "listen = %s is not a loopback address and %s is not set; set "
			       "tls_cert and tls_key (PEM files), or listen on 127.0.0.1",
			       shown(c->listen, buf), c->tls_cert[0] ? "tls_key" : "tls_cert");
	if (!c->tls_cert[0] != !c->tls_key[0]) {
		return fail_at(p, line_of(p, SEC_TOP, c->tls_cert[0] ? "tls_cert" : "tls_key"),
			       "%s is set but %s is not; set both, or neither",
			       c->tls_cert[0] ? "tls_cert" : "tls_key",
			       c->tls_cert[0] ? "tls_key" : "tls_cert");
	}
	if (c->etcd[0] && !c->cluster_key_file[0])
		return fail_at(p, line_of(p, SEC_CLUSTER, "etcd"),
			       "[cluster] etcd is set but key_file is not; create the cluster's "
			       "shared key (head -c 32 /dev/urandom | base64 >/etc/nprof/cluster.key, mode "
			       "0600) and set key_file to it");
	if (!c->etcd_user[0] != !c->etcd_password_file[0])
		return fail_at(p, p->line, "[cluster] %s is set but %s is not; set both, or neither",
			       c->etcd_user[0] ? "etcd_user" : "etcd_password_file",
			       c->etcd_user[0] ? "etcd_password_file" : "etcd_user");
	if (!c->etcd_cert[0] != !c->etcd_key[0])
		return fail_at(p, p->line, "[cluster] %s is set but %s is not; set both, or neither",
			       c->etcd_cert[0] ? "etcd_cert" : "etcd_key",
			       c->etcd_cert[0] ? "etcd_key" : "etcd_cert");
	/* Checked with etcd unset too: --etcd may set it after the file. */
	if (c->lease_ttl_ns % SEC)
		return fail_at(p, line_of(p, SEC_CLUSTER, "lease_ttl"), "[cluster] lease_ttl = %s: "
			       "etcd's leases are whole seconds; write %llus",
			       units_format_duration(c->lease_ttl_ns, t1, sizeof(t1)),
			       (unsigned long long)(c->lease_ttl_ns / SEC));
	/* The lease is kept alive every third of lease_ttl: one keepalive
	 * that times out must leave the lease time for another. */
	if (c->etcd_timeout_ns * 3 >= c->lease_ttl_ns)
		return fail_at(p, key_line(p, SEC_CLUSTER, "etcd_timeout")
				   ? line_of(p, SEC_CLUSTER, "etcd_timeout")
				   : line_of(p, SEC_CLUSTER, "lease_ttl"),
			       "[cluster] etcd_timeout = %s is not below a third of lease_ttl = %s: "
			       "a keepalive that timed out would leave the lease no time for "
			       "another; set etcd_timeout to at most %llums, or lease_ttl to at "
			       "least %llus", units_format_duration(c->etcd_timeout_ns, t1, sizeof(t1)),
			       units_format_duration(c->lease_ttl_ns, t2, sizeof(t2)),
			       (unsigned long long)((c->lease_ttl_ns / 3 - 1) / 1000000),
			       (unsigned long long)(c->etcd_timeout_ns * 3 / SEC + 1));
	/* the default keeps at most a quarter of a small door */
	if (!key_line(p, SEC_TOP, "reserved_connections") &&
	    c->reserved_connections > c->max_connections / 4)
		c->reserved_connections = c->max_connections / 4;
	if (c->reserved_connections >= c->max_connections)
		return fail_at(p, line_of(p, SEC_TOP, "reserved_connections"),
			       "reserved_connections = %u is not below max_connections = %u: no "
			       "user but root and the admins could connect to the socket; set at "
			       "most %u", c->reserved_connections, c->max_connections,
			       c->max_connections - 1);
	if (c->duration_default_ns > c->duration_max_ns) {
		/* the default follows a lower maximum unless it was written */
		if (!key_line(p, SEC_INSTANCES, "duration_default")) {
			c->duration_default_ns = c->duration_max_ns;
			return 0;
		}
		return fail_at(p, line_of(p, SEC_INSTANCES, "duration_default"),
			       "duration_default = %s is above duration_max = %s; set at most %s",
			       units_format_duration(c->duration_default_ns, t1, sizeof(t1)),
			       units_format_duration(c->duration_max_ns, t2, sizeof(t2)), t2);
	}
	return 0;
}

/* Each [schedule NAME] held to what the API holds a new schedule to
 * (schedule_spec_check), once every key it depends on is known; an
 * unset duration and budget follow [instances] duration_default and
 * [continuous] cpu_budget, as the API's do. */
static int check_schedules(struct parser *p)
{
	struct daemon_config *c = p->c;
	char why[512];

	for (size_t i = 0; i < c->n_schedules; i++) {
		struct schedule_config *sc = &c->schedules[i];
		enum schedule_field f;

		if (sc->line[SF_DURATION] == sc->header)
			sc->spec.duration_ns = c->duration_default_ns;
		if (sc->line[SF_BUDGET] == sc->header)
			sc->spec.budget = c->cpu_budget;
		if (schedule_spec_check(c, &sc->spec, &f, why, sizeof(why)) < 0)
			return fail_at(p, sc->line[f], "[schedule %s] %s", sc->name, why);
	}
	return 0;
}

int config_parse(struct daemon_config *c, const char *file, const char *text,
		 size_t len, char *err, size_t errlen)
{
	struct parser p = {
		.file = file ? file : "(config)", .err = err, .errlen = errlen,
		.sec = SEC_TOP, .sec_title = "[top]",
	};
	size_t pos = 0;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	p.c = malloc(sizeof(*p.c));
	if (!p.c) {
		if (err && errlen)
			snprintf(err, errlen, "%s: out of memory reading the configuration",
				 p.file);
		return -ENOMEM;
	}
	*p.c = *c;
	while (pos < len) {
		const char *s = text + pos, *nl = memchr(s, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - s) : len - pos;

		p.line++;
		pos += n + (nl != NULL);
		if (n > 0 && s[n - 1] == '\r')
			n--;
		if (n > LINE_MAX_BYTES) {
			ret = fail(&p, "the line is %zu bytes, above the limit of %d; shorten it",
				   n, LINE_MAX_BYTES);
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			unsigned char ch = (unsigned char)s[i];

			if (ch == 0) {
				ret = fail(&p, "NUL byte at column %zu; the file must be text",
					   i + 1);
				goto out;
			}
			if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
				ret = fail(&p, "control character 0x%02x at column %zu; remove it",
					   ch, i + 1);
				goto out;
			}
		}
		ret = parse_line(&p, s, n);
		if (ret < 0)
			goto out;
	}
	ret = finish_section(&p);
	if (ret < 0)
		goto out;
	ret = check_all(&p);
	if (ret < 0)
		goto out;
	ret = check_schedules(&p);
	if (ret < 0)
		goto out;
	*c = *p.c;
out:
	free(p.c);
	return ret;
}

int config_load(struct daemon_config *c, const char *path, char *err, size_t errlen)
{
	struct daemon_config *fresh = NULL;
	size_t len = 0;
	char *text = NULL;
	int fd = -1, ret;

	if (err && errlen)
		err[0] = '\0';
	fresh = malloc(sizeof(*fresh));
	if (!fresh) {
		ret = -ENOMEM;
		goto out;
	}
	config_defaults(fresh);
	if (!path) {
		*c = *fresh;
		ret = 0;
		goto out;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		if (err && errlen)
			snprintf(err, errlen, "%s: cannot open: %s; check the path given to "
				 "--config", path, strerror(-ret));
		goto out;
	}
	/* one byte past the limit tells a file at the limit from a bigger one */
	text = malloc(FILE_MAX_BYTES + 1);
	if (!text) {
		ret = -ENOMEM;
		goto out;
	}
	while (len <= FILE_MAX_BYTES) {
		ssize_t n = read(fd, text + len, FILE_MAX_BYTES + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			if (err && errlen)
				snprintf(err, errlen, "%s: cannot read: %s; check that it is a "
					 "readable file", path, strerror(-ret));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > FILE_MAX_BYTES) {
		ret = -EFBIG;
		if (err && errlen)
			snprintf(err, errlen, "%s: the file is larger than the limit of 1 MiB; "
				 "shorten it", path);
		goto out;
	}
	ret = config_parse(fresh, path, text, len, err, errlen);
	if (ret < 0)
		goto out;
	*c = *fresh;
out:
	if (fd >= 0)
		close(fd);
	free(text);
	free(fresh);
	return ret;
}

/* --- questions the daemon asks ------------------------------------------ */

static bool switch_allowed(signed char global, signed char over, const char *section,
			   const struct service_config *svc, const char *name, char *key,
			   size_t keylen)
{
	bool from_svc = svc && over >= 0;
	bool ok = from_svc ? over > 0 : global > 0;

	if (!ok && key && keylen) {
		if (from_svc)
			snprintf(key, keylen, "[service %s] %s", svc->name, name);
		else
			snprintf(key, keylen, "[%s] %s", section, name);
	}
	return ok;
}

bool config_action_allowed(const struct daemon_config *c, const struct service_config *svc,
			   enum action_kind a, char *key, size_t keylen)
{
	if ((unsigned)a >= ACTION_COUNT)
		return false;
	return switch_allowed(c->allow.action[a], svc ? svc->overrides.action[a] : -1,
			      "actions", svc, config_action_key(a), key, keylen);
}

bool config_mode_allowed(const struct daemon_config *c, const struct service_config *svc,
			 enum event_id m, char *key, size_t keylen)
{
	if ((unsigned)m >= EVENT_COUNT)
		return false;
	return switch_allowed(c->allow.mode[m], svc ? svc->overrides.mode[m] : -1,
			      "instances", svc, "modes", key, keylen);
}

bool config_selector_matches(const struct selector *s, const char *unit, const char *cgroup,
			     const char *exe, const char *user)
{
	size_t n;

	switch (s->kind) {
	case SELECT_ALL:
		return true;
	case SELECT_UNIT:
		return unit && *unit && fnmatch(s->value, unit, 0) == 0;
	case SELECT_EXE:
		return exe && *exe && fnmatch(s->value, exe, 0) == 0;
	case SELECT_USER:
		return user && !strcmp(s->value, user);
	case SELECT_CGROUP:
		/* a subtree: /system.slice/web takes /system.slice/web/x but
		 * not /system.slice/web2 */
		if (!cgroup)
			return false;
		n = strlen(s->value);
		if (n == 1 && s->value[0] == '/')
			return cgroup[0] == '/';
		return !strncmp(cgroup, s->value, n) && (cgroup[n] == '\0' || cgroup[n] == '/');
	}
	return false;
}

bool config_selector_forgeable(const struct selector *s)
{
	return s->kind == SELECT_UNIT || (s->kind == SELECT_EXE && strpbrk(s->value, "*?[\\"));
}

const struct service_config *config_service_for(const struct daemon_config *c,
						const char *unit, const char *cgroup,
						const char *exe, const char *user)
{
	for (size_t i = 0; i < c->n_services; i++)
		if (config_selector_matches(&c->services[i].match, unit, cgroup, exe, user))
			return &c->services[i];
	return NULL;
}

bool config_selects(const struct daemon_config *c, const char *unit, const char *cgroup,
		    const char *exe, const char *user)
{
	for (size_t i = 0; i < c->n_select; i++)
		if (config_selector_matches(&c->select[i], unit, cgroup, exe, user))
			return true;
	return false;
}
