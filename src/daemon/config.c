/* config: nprofd.conf, read into struct daemon_config.
 *
 * The parser works line by line on a private copy of the configuration
 * and copies it back only when the whole text is valid, so a daemon that
 * re-reads its file keeps the old settings when the new file is wrong.
 * Every key is a row of one table per section (its kind, where it goes,
 * its limits); the table is also what the "valid keys" hints list, and
 * docs/nprofd.conf.5.md says the same. */
#include "daemon/config.h"

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
#define KIB 1024ull
#define MIB (1024ull * 1024)
#define GIB (1024ull * 1024 * 1024)
#define TIB (1024ull * 1024 * 1024 * 1024)
/* What a message quotes of a value: enough to recognise it, never a
 * whole 1 KiB value in a one-line error. */
#define SHOWN_MAX 80

static const char *const action_keys[ACTION_COUNT] = {
	[ACTION_THREAD_DUMP] = "thread_dump",
	[ACTION_HEAP_SNAPSHOT] = "heap_snapshot",
	[ACTION_HEAP_PROFILING] = "heap_profiling",
	[ACTION_CORE_FILE] = "core_file",
	[ACTION_RESTART] = "restart",
	[ACTION_COMMANDS] = "commands",
	[ACTION_ATTACH] = "attach",
};

/* A fresh install allows what only reads the target and costs little.
 * Heap snapshots are read-only: they dump what heap profiling, already
 * on, has collected. heap_profiling, core files (the target stops while
 * it is written), restart and the operator's commands change or stop the
 * target and stay off until the operator turns them on; so does attach,
 * which puts nprof's code into someone's running process. */
static const signed char action_default[ACTION_COUNT] = {
	[ACTION_THREAD_DUMP] = 1,
	[ACTION_HEAP_SNAPSHOT] = 1,
};

/* Every mode is on. The perf-event modes (cpu, page-faults,
 * context-switches, the hardware counters) read the target from outside
 * with perf_event_open. itimer, wall, alloc, heap and lock run in an
 * agent the operator chose to load, and only for the instance's bounded
 * duration: alloc, heap and lock arm its sampling interposers (which
 * otherwise cost one branch, docs/memory.md) and disarm them at the end.
 * Leaving heap profiling on with no end is [actions] heap_profiling, off. */
static const signed char mode_default[EVENT_COUNT] = {
	[EVENT_CPU] = 1, [EVENT_ITIMER] = 1, [EVENT_WALL] = 1, [EVENT_OFFCPU] = 1,
	[EVENT_ALLOC] = 1, [EVENT_HEAP] = 1, [EVENT_LOCK] = 1,
	[EVENT_PAGE_FAULTS] = 1, [EVENT_CONTEXT_SWITCHES] = 1,
	[EVENT_CYCLES] = 1, [EVENT_INSTRUCTIONS] = 1,
	[EVENT_CACHE_MISSES] = 1, [EVENT_BRANCH_MISSES] = 1,
};
_Static_assert(EVENT_COUNT == 13, "a new event needs its default in mode_default");

const char *config_action_key(enum action_kind a)
{
	return (unsigned)a < ACTION_COUNT ? action_keys[a] : "?";
}

static void copy_str(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src);
}

void config_defaults(struct daemon_config *c)
{
	memset(c, 0, sizeof(*c));
	copy_str(c->listen, sizeof(c->listen), "127.0.0.1:9700");
	copy_str(c->socket_path, sizeof(c->socket_path), "/run/nprof/nprofd.sock");
	copy_str(c->state_dir, sizeof(c->state_dir), "/var/lib/nprof");
	c->max_body = 64 * KIB;
	c->max_connections = 256;
	c->peer_connections = 16;
	c->reserved_connections = 16;
	c->reply_cache_bytes = 4 * MIB;
	c->request_timeout_ns = 30 * SEC;
	copy_str(c->proxy_user_header, sizeof(c->proxy_user_header), "X-Forwarded-User");
	c->select[0].kind = SELECT_ALL;
	c->n_select = 1;
	c->duration_max_ns = 300 * SEC;
	c->duration_default_ns = 30 * SEC;
	c->max_concurrent = 8;
	c->history_per_worker = 10;
	c->grace_ns = 10 * SEC;
	memcpy(c->allow.action, action_default, sizeof(c->allow.action));
	memcpy(c->allow.mode, mode_default, sizeof(c->allow.mode));
	c->max_count = 1000;
	c->max_age_ns = 30 * 24 * 3600 * SEC;
	c->max_bytes = 10 * GIB;
	copy_str(c->pam_service, sizeof(c->pam_service), "nprofd");
	c->session_lifetime_ns = 8 * 3600 * SEC;
	c->max_sessions = 20;
	c->max_failures = 5;
	c->max_address_failures = 20;
	c->failures_per_minute = 30;
	c->failure_window_ns = 300 * SEC;
	c->lease_ttl_ns = 10 * SEC;
	c->etcd_timeout_ns = 3 * SEC;
	c->host_timeout_ns = 5 * SEC;
	c->forward_timeout_ns = 120 * SEC;
	c->fanout = 16;
	c->max_hosts = 1000;
	c->max_reply = 32 * MIB;
	c->signature_window_ns = 30 * SEC;
	c->hosts_cache_ns = SEC;
}

/* --- the key tables ----------------------------------------------------- */

enum value_kind {
	V_LISTEN,	/* ADDR:PORT or "" */
	V_PATH,		/* absolute, or "" */
	V_PATH_SET,	/* absolute, never "" */
	V_NAME,		/* a user or group name, or "" */
	V_NAMES,	/* comma-separated names */
	V_ADDRS,	/* comma-separated IP addresses */
	V_HEADER,	/* an HTTP header name */
	V_SIZE,		/* uint64_t bytes */
	V_COUNT,	/* a whole number: unsigned or uint64_t, by the field's size */
	V_DURATION,	/* uint64_t nanoseconds */
	V_SELECTS,	/* comma-separated selectors */
	V_SELECTOR,	/* one selector */
	V_MODES,	/* comma-separated events: the section's switches */
	V_ACTION,	/* on/off: the section's switches, action number in off */
	V_TEXT,		/* any text */
	V_RUN,		/* a command line with %p %d %o %% */
	V_OUTPUT,	/* file | stdout | none */
	V_URLS,		/* comma-separated http:// or https:// URLs, or "" */
	V_URL,		/* one such URL, or "" */
	V_HOST,		/* a host's name in the cluster, or "" */
	V_HOSTNAMES,	/* comma-separated host names or IP addresses */
};

struct key_def {
	const char *name;
	enum value_kind kind;
	size_t off;		/* in the section's struct; the action for V_ACTION */
	size_t size;		/* the field's size: strings, and 4 or 8 for numbers */
	uint64_t min, max;	/* numbers, sizes, durations */
	const char *min_text, *max_text; /* the same, as the user writes them */
};

#define FIELD(type, f) offsetof(type, f), sizeof(((type *)0)->f)
#define TOP(f) FIELD(struct daemon_config, f)
#define SVC(f) FIELD(struct service_config, f)
#define CMD(f) FIELD(struct command_config, f)

static const struct key_def top_keys[] = {
	{ "listen", V_LISTEN, TOP(listen), 0, 0, NULL, NULL },
	/* sun_path holds 107 bytes and a NUL: a longer path cannot be bound */
	{ "socket", V_PATH_SET, offsetof(struct daemon_config, socket_path),
	  sizeof(((struct sockaddr_un *)0)->sun_path), 0, 0, NULL, NULL },
	{ "state_dir", V_PATH_SET, TOP(state_dir), 0, 0, NULL, NULL },
	{ "tls_cert", V_PATH, TOP(tls_cert), 0, 0, NULL, NULL },
	{ "tls_key", V_PATH, TOP(tls_key), 0, 0, NULL, NULL },
	{ "admin_users", V_NAMES, TOP(admin_users), 0, 0, NULL, NULL },
	{ "admin_group", V_NAME, TOP(admin_group), 0, 0, NULL, NULL },
	{ "nprof", V_PATH, TOP(nprof_path), 0, 0, NULL, NULL },
	{ "max_body", V_SIZE, TOP(max_body), KIB, 16 * MIB, "1k", "16M" },
	{ "max_connections", V_COUNT, TOP(max_connections), 1, 10000, "1", "10000" },
	{ "peer_connections", V_COUNT, TOP(peer_connections), 1, 10000, "1", "10000" },
	/* its maximum is max_connections - 1, checked once both are known */
	{ "reserved_connections", V_COUNT, TOP(reserved_connections), 0, 9999, "0", "9999" },
	{ "reply_cache", V_SIZE, TOP(reply_cache_bytes), 0, 256 * MIB, "0", "256M" },
	{ "request_timeout", V_DURATION, TOP(request_timeout_ns), SEC, 600 * SEC, "1s", "10m" },
	{ "trusted_proxies", V_ADDRS, TOP(trusted_proxies), 0, 0, NULL, NULL },
	{ "proxy_user_header", V_HEADER, TOP(proxy_user_header), 0, 0, NULL, NULL },
	{ "host_names", V_HOSTNAMES, TOP(host_names), 0, 0, NULL, NULL },
};

static const struct key_def workers_keys[] = {
	{ "select", V_SELECTS, TOP(select), 0, 0, NULL, NULL },
};

static const struct key_def instances_keys[] = {
	{ "modes", V_MODES, 0, 0, 0, 0, NULL, NULL },
	{ "duration_max", V_DURATION, TOP(duration_max_ns), SEC, 24 * 3600 * SEC, "1s", "24h" },
	/* its maximum is duration_max, checked once both are known */
	{ "duration_default", V_DURATION, TOP(duration_default_ns), SEC, 24 * 3600 * SEC,
	  "1s", "24h" },
	{ "max_concurrent", V_COUNT, TOP(max_concurrent), 1, 256, "1", "256" },
	{ "history_per_worker", V_COUNT, TOP(history_per_worker), 1, 10000, "1", "10000" },
	{ "grace", V_DURATION, TOP(grace_ns), SEC, 600 * SEC, "1s", "10m" },
};

static const struct key_def actions_keys[] = {
	{ "thread_dump", V_ACTION, ACTION_THREAD_DUMP, 0, 0, 0, NULL, NULL },
	{ "heap_snapshot", V_ACTION, ACTION_HEAP_SNAPSHOT, 0, 0, 0, NULL, NULL },
	{ "heap_profiling", V_ACTION, ACTION_HEAP_PROFILING, 0, 0, 0, NULL, NULL },
	{ "core_file", V_ACTION, ACTION_CORE_FILE, 0, 0, 0, NULL, NULL },
	{ "restart", V_ACTION, ACTION_RESTART, 0, 0, 0, NULL, NULL },
	{ "commands", V_ACTION, ACTION_COMMANDS, 0, 0, 0, NULL, NULL },
	{ "attach", V_ACTION, ACTION_ATTACH, 0, 0, 0, NULL, NULL },
};

static const struct key_def artifacts_keys[] = {
	{ "max_count", V_COUNT, TOP(max_count), 1, 1000000, "1", "1000000" },
	{ "max_age", V_DURATION, TOP(max_age_ns), 0, 3650 * 24 * 3600 * SEC, "0", "3650d" },
	{ "max_bytes", V_SIZE, TOP(max_bytes), KIB, 1024 * TIB, "1k", "1024T" },
};

static const struct key_def signin_keys[] = {
	{ "pam_service", V_NAME, TOP(pam_service), 0, 0, NULL, NULL },
	{ "session_lifetime", V_DURATION, TOP(session_lifetime_ns), 60 * SEC, 30 * 24 * 3600 * SEC,
	  "1m", "30d" },
	{ "max_sessions", V_COUNT, TOP(max_sessions), 1, 1000, "1", "1000" },
	{ "max_failures", V_COUNT, TOP(max_failures), 1, 1000, "1", "1000" },
	{ "max_address_failures", V_COUNT, TOP(max_address_failures), 1, 100000, "1", "100000" },
	{ "failures_per_minute", V_COUNT, TOP(failures_per_minute), 1, 100000, "1", "100000" },
	{ "failure_window", V_DURATION, TOP(failure_window_ns), SEC, 24 * 3600 * SEC, "1s", "24h" },
};

/* restart is the action's switch here as in [actions]; the command that
 * restarts the service is restart_command (struct service_config.restart). */
static const struct key_def service_keys[] = {
	{ "match", V_SELECTOR, SVC(match), 0, 0, NULL, NULL },
	{ "restart_command", V_TEXT, SVC(restart), 0, 0, NULL, NULL },
	{ "pid_file", V_PATH, SVC(pid_file), 0, 0, NULL, NULL },
	{ "modes", V_MODES, 0, 0, 0, 0, NULL, NULL },
	{ "thread_dump", V_ACTION, ACTION_THREAD_DUMP, 0, 0, 0, NULL, NULL },
	{ "heap_snapshot", V_ACTION, ACTION_HEAP_SNAPSHOT, 0, 0, 0, NULL, NULL },
	{ "heap_profiling", V_ACTION, ACTION_HEAP_PROFILING, 0, 0, 0, NULL, NULL },
	{ "core_file", V_ACTION, ACTION_CORE_FILE, 0, 0, 0, NULL, NULL },
	{ "restart", V_ACTION, ACTION_RESTART, 0, 0, 0, NULL, NULL },
	{ "commands", V_ACTION, ACTION_COMMANDS, 0, 0, 0, NULL, NULL },
	{ "attach", V_ACTION, ACTION_ATTACH, 0, 0, 0, NULL, NULL },
};

static const struct key_def command_keys[] = {
	{ "run", V_RUN, CMD(run), 0, 0, NULL, NULL },
	{ "timeout", V_DURATION, CMD(timeout_ns), SEC, 3600 * SEC, "1s", "1h" },
	{ "output", V_OUTPUT, 0, 0, 0, 0, NULL, NULL },
	{ "description", V_TEXT, CMD(description), 0, 0, NULL, NULL },
};

static const struct key_def cluster_keys[] = {
	{ "etcd", V_URLS, TOP(etcd), 0, 0, NULL, NULL },
	{ "name", V_HOST, TOP(cluster_name), 0, 0, NULL, NULL },
	{ "url", V_URL, TOP(cluster_url), 0, 0, NULL, NULL },
	{ "key_file", V_PATH, TOP(cluster_key_file), 0, 0, NULL, NULL },
	{ "lease_ttl", V_DURATION, TOP(lease_ttl_ns), 2 * SEC, 300 * SEC, "2s", "5m" },
	{ "etcd_timeout", V_DURATION, TOP(etcd_timeout_ns), SEC / 10, 60 * SEC, "100ms", "60s" },
	{ "host_timeout", V_DURATION, TOP(host_timeout_ns), SEC / 10, 300 * SEC, "100ms", "5m" },
	{ "forward_timeout", V_DURATION, TOP(forward_timeout_ns), SEC, 3600 * SEC, "1s", "1h" },
	{ "fanout", V_COUNT, TOP(fanout), 1, 256, "1", "256" },
	{ "max_hosts", V_COUNT, TOP(max_hosts), 1, 100000, "1", "100000" },
	{ "max_reply", V_SIZE, TOP(max_reply), KIB, 1024 * MIB, "1k", "1G" },
	{ "signature_window", V_DURATION, TOP(signature_window_ns), SEC, 600 * SEC, "1s", "10m" },
	{ "hosts_cache", V_DURATION, TOP(hosts_cache_ns), 0, 60 * SEC, "0", "1m" },
	{ "etcd_ca", V_PATH, TOP(etcd_ca), 0, 0, NULL, NULL },
	{ "etcd_cert", V_PATH, TOP(etcd_cert), 0, 0, NULL, NULL },
	{ "etcd_key", V_PATH, TOP(etcd_key), 0, 0, NULL, NULL },
	{ "etcd_user", V_NAME, TOP(etcd_user), 0, 0, NULL, NULL },
	{ "etcd_password_file", V_PATH, TOP(etcd_password_file), 0, 0, NULL, NULL },
};

enum section_kind {
	SEC_TOP, SEC_WORKERS, SEC_INSTANCES, SEC_ACTIONS, SEC_ARTIFACTS, SEC_SIGNIN,
	SEC_CLUSTER, SEC_SERVICE, SEC_COMMAND, SEC_COUNT
};

#define MAX_SECTION_KEYS 20
_Static_assert(sizeof(top_keys) / sizeof(top_keys[0]) <= MAX_SECTION_KEYS &&
		       sizeof(service_keys) / sizeof(service_keys[0]) <= MAX_SECTION_KEYS &&
		       sizeof(cluster_keys) / sizeof(cluster_keys[0]) <= MAX_SECTION_KEYS,
	       "struct parser's key_line[] holds every key of a section");

static const struct section_def {
	const char *name;
	const struct key_def *keys;
	size_t n_keys;
} sections[SEC_COUNT] = {
#define SECTION(k, n, t) [k] = { n, t, sizeof(t) / sizeof(t[0]) }
	SECTION(SEC_TOP, "top", top_keys),
	SECTION(SEC_WORKERS, "workers", workers_keys),
	SECTION(SEC_INSTANCES, "instances", instances_keys),
	SECTION(SEC_ACTIONS, "actions", actions_keys),
	SECTION(SEC_ARTIFACTS, "artifacts", artifacts_keys),
	SECTION(SEC_SIGNIN, "signin", signin_keys),
	SECTION(SEC_CLUSTER, "cluster", cluster_keys),
	SECTION(SEC_SERVICE, "service", service_keys),
	SECTION(SEC_COMMAND, "command", command_keys),
#undef SECTION
};

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
	unsigned key_line[MAX_SECTION_KEYS]; /* where each key of the open section was set */
	unsigned fixed_line[SEC_COUNT];	/* where each fixed section was opened */
	bool has_o;			/* the open [command]'s run uses %o */

	unsigned listen_line, tls_cert_line, tls_key_line;
	unsigned duration_max_line, duration_default_line;
	unsigned reserved_line;			/* reserved_connections, when set */
	unsigned etcd_line;		/* where [cluster] etcd was set, 0 if not */
	unsigned lease_ttl_line, etcd_timeout_line;
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

static int set_modes(struct parser *p, const char *key, char *v, struct switches *sw)
{
	signed char mode[EVENT_COUNT] = { 0 };
	char buf[SHOWN_MAX + 4], names[256];
	bool empty;

	if (*v) {
		for (char *list = v, *it; (it = next_item(&list, &empty));) {
			const struct event_def *e;

			if (empty)
				return EMPTY_ITEM(p, key);
			e = event_find(it);
			if (!e)
				return fail(p, "%s: unknown mode '%s'; valid modes: %s", key,
					    shown(it, buf), mode_list(names, sizeof(names)));
			mode[e - event_defs] = 1;
		}
	}
	memcpy(sw->mode, mode, sizeof(mode));
	return 0;
}

static int check_path(struct parser *p, const struct key_def *k, const char *v)
{
	char buf[SHOWN_MAX + 4];

	if (!*v) {
		if (k->kind == V_PATH_SET)
			return fail(p, "%s is empty; set an absolute path", k->name);
		return 0;
	}
	if (v[0] != '/')
		return fail(p, "%s = %s is not an absolute path; write it from /", k->name,
			    shown(v, buf));
	if (strlen(v) >= k->size)
		return fail(p, "%s is %zu bytes, above the limit of %zu bytes; use a "
			    "shorter path", k->name, strlen(v), k->size - 1);
	return 0;
}

static int set_number(struct parser *p, const struct key_def *k, const char *v, void *field)
{
	char buf[SHOWN_MAX + 4];
	uint64_t x;
	int r;

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
				    k->name, shown(v, buf), k->min_text, k->max_text);
		break;
	}
	if (r == -ERANGE || x > k->max)
		return fail(p, "%s = %s is above the limit of %s; set at most %s", k->name,
			    shown(v, buf), k->max_text, k->max_text);
	if (x < k->min)
		return fail(p, "%s = %s is below the minimum of %s; set at least %s", k->name,
			    shown(v, buf), k->min_text, k->min_text);
	if (k->size == sizeof(unsigned))
		*(unsigned *)field = (unsigned)x;
	else
		*(uint64_t *)field = x;
	return 0;
}

/* "%p %d %o %%" only: a typo such as %P would otherwise reach the
 * command line as it is. */
static int check_run(struct parser *p, const char *v)
{
	p->has_o = false;
	if (!*v)
		return fail(p, "run is empty; write the command line, for example "
			    "run = perf stat -p %%p -- sleep %%d");
	for (const char *s = v; (s = strchr(s, '%')); s += 2) {
		if (s[1] == 'o')
			p->has_o = true;
		if (!s[1] || !strchr("pdo%", s[1]))
			return fail(p, "run has an unknown placeholder '%%%.1s'; use %%p (pid), "
				    "%%d (seconds), %%o (output file) or %%%% for a %%", s + 1);
	}
	return 0;
}

static int set_value(struct parser *p, const struct key_def *k, char *v)
{
	char *base = p->svc ? (char *)p->svc : p->cmd ? (char *)p->cmd : (char *)p->c;
	struct switches *sw = p->svc ? &p->svc->overrides : &p->c->allow;
	void *field = base + k->off;
	char buf[SHOWN_MAX + 4];
	bool empty, loopback;
	size_t n = 0;

	switch (k->kind) {
	case V_LISTEN:
		if (parse_listen(v, &loopback) < 0)
			return fail(p, "listen = %s is not ADDR:PORT; write 127.0.0.1:9700, "
				    "[::1]:9700 (port 1 to 65535), or \"\" for no HTTP",
				    shown(v, buf));
		p->listen_line = p->line;
		break;
	case V_PATH:
	case V_PATH_SET:
		if (check_path(p, k, v) < 0)
			return -EINVAL;
		if (!strcmp(k->name, "tls_cert"))
			p->tls_cert_line = *v ? p->line : 0;
		else if (!strcmp(k->name, "tls_key"))
			p->tls_key_line = *v ? p->line : 0;
		break;
	case V_NAME:
	case V_HEADER:
		if (strlen(v) >= k->size)
			return fail(p, "%s is %zu bytes, above the limit of %zu; use a shorter "
				    "name", k->name, strlen(v), k->size - 1);
		if (k->kind == V_HEADER && !valid_header(v))
			return fail(p, "%s = %s is not an HTTP header name; write one such as "
				    "X-Forwarded-User", k->name, shown(v, buf));
		if (k->kind == V_NAME && *v && !config_valid_name(v))
			return fail(p, "%s = %s is not a %s; use A-Z a-z 0-9 _ . @ $ -, "
				    "not starting with -", k->name, shown(v, buf),
				    strcmp(k->name, "admin_group") ? "name" : "group name");
		break;
	case V_NAMES:
	case V_ADDRS: {
		char (*names)[CONFIG_NAME_MAX] = field;
		size_t *count = k->kind == V_NAMES ? &p->c->n_admin_users
						   : &p->c->n_trusted_proxies;
		unsigned char bin[16];

		for (char *list = *v ? v : NULL, *it; (it = next_item(&list, &empty));) {
			if (empty)
				return EMPTY_ITEM(p, k->name);
			if (n == CONFIG_MAX_NAMES)
				return fail(p, "%s has more than %d entries, the limit; list at "
					    "most %d", k->name, CONFIG_MAX_NAMES, CONFIG_MAX_NAMES);
			if (k->kind == V_NAMES &&
			    (!config_valid_name(it) || strlen(it) >= CONFIG_NAME_MAX))
				return fail(p, "%s: '%s' is not a user name; use at most %d of "
					    "A-Z a-z 0-9 _ . @ $ -, not starting with -", k->name,
					    shown(it, buf), CONFIG_NAME_MAX - 1);
			if (k->kind == V_ADDRS && inet_pton(AF_INET, it, bin) != 1 &&
			    inet_pton(AF_INET6, it, bin) != 1)
				return fail(p, "%s: '%s' is not an IP address; write addresses "
					    "such as 10.0.0.5 or fd00::5, without a port", k->name,
					    shown(it, buf));
			copy_str(names[n++], CONFIG_NAME_MAX, it);
		}
		*count = n;
		return 0;
	}
	case V_HOSTNAMES: {
		char (*names)[CONFIG_HOST_MAX] = field;

		for (char *list = *v ? v : NULL, *it; (it = next_item(&list, &empty));) {
			size_t len = strlen(it);

			if (empty)
				return EMPTY_ITEM(p, k->name);
			if (n == CONFIG_MAX_NAMES)
				return fail(p, "%s has more than %d entries, the limit; list at "
					    "most %d", k->name, CONFIG_MAX_NAMES, CONFIG_MAX_NAMES);
			if (!config_valid_host(it))
				return fail(p, "%s: '%s' is not a host name or an IP address; write "
					    "names such as nprof.example.com or addresses such as "
					    "192.0.2.7, without a port", k->name, shown(it, buf));
			if (it[0] == '[') {
				it[len - 1] = '\0';
				it++;
			}
			for (char *c = it; *c; c++)
				*c = (char)tolower((unsigned char)*c);
			copy_str(names[n++], CONFIG_HOST_MAX, it);
		}
		p->c->n_host_names = n;
		return 0;
	}
	case V_SELECTS: {
		struct selector *sel = p->c->select;

		for (char *list = *v ? v : NULL, *it; (it = next_item(&list, &empty));) {
			if (empty)
				return EMPTY_ITEM(p, k->name);
			if (n == CONFIG_MAX_NAMES)
				return fail(p, "select has more than %d selectors, the limit; list "
					    "at most %d", CONFIG_MAX_NAMES, CONFIG_MAX_NAMES);
			if (parse_selector(p, "select", it, &sel[n]) < 0)
				return -EINVAL;
			n++;
		}
		if (n == 0)
			return fail(p, "select is empty, which would select no worker; write "
				    "select = all, or selectors such as unit:nginx.service");
		p->c->n_select = n;
		return 0;
	}
	case V_SELECTOR:
		return parse_selector(p, "match", v, field);
	case V_MODES:
		return set_modes(p, k->name, v, sw);
	case V_ACTION:
		if (!parse_bool(v, &sw->action[k->off])) {
			if (p->svc && k->off == ACTION_RESTART)
				return fail(p, "restart = %s is not on or off; restart switches the "
					    "action here too: set the command with "
					    "restart_command = %s", shown(v, buf), shown(v, buf));
			return fail(p, "%s = %s is not on or off; write on, off, true, false, "
				    "yes, no, 1 or 0", k->name, shown(v, buf));
		}
		return 0;
	case V_SIZE:
	case V_COUNT:
	case V_DURATION:
		if (set_number(p, k, v, field) < 0)
			return -EINVAL;
		if (!strcmp(k->name, "duration_max"))
			p->duration_max_line = p->line;
		else if (!strcmp(k->name, "duration_default"))
			p->duration_default_line = p->line;
		else if (!strcmp(k->name, "reserved_connections"))
			p->reserved_line = p->line;
		else if (!strcmp(k->name, "lease_ttl"))
			p->lease_ttl_line = p->line;
		else if (!strcmp(k->name, "etcd_timeout"))
			p->etcd_timeout_line = p->line;
		return 0;
	case V_TEXT:
		break;
	case V_RUN:
		if (check_run(p, v) < 0)
			return -EINVAL;
		break;
	case V_URLS:
	case V_URL: {
		const char *why = config_check_urls(v, k->kind == V_URLS);

		if (*why)
			return fail(p, "%s = %s: %s; write for example %s", k->name, shown(v, buf),
				    why, k->kind == V_URLS ? "http://10.0.0.2:2379,http://10.0.0.3:2379"
							   : "https://db1.example.com:9443");
		if (k->kind == V_URLS)
			p->etcd_line = *v ? p->line : 0;
		break;
	}
	case V_HOST:
		if (strlen(v) >= k->size || (*v && !valid_section_name(v, false)) ||
		    strchr(v, '@') || v[0] == '.')
			return fail(p, "%s = %s is not a host name; use at most %zu of A-Z a-z 0-9 "
				    "_ . -", k->name, shown(v, buf), k->size - 1);
		break;
	case V_OUTPUT:
		if (!strcmp(v, "file") || !strcmp(v, "stdout") || !strcmp(v, "none")) {
			p->cmd->keep_output = !strcmp(v, "file");
			p->cmd->keep_stdout = !strcmp(v, "stdout");
			return 0;
		}
		return fail(p, "output = %s is not an output; write file (keep %%o), stdout "
			    "or none", shown(v, buf));
	}
	/* the string kinds; every value fits CONFIG_VALUE_MAX, checked when read */
	copy_str(field, k->size, v);
	return 0;
}

/* --- sections ----------------------------------------------------------- */

/* Where the open section set key, or 0. */
static unsigned key_line(const struct parser *p, const char *key)
{
	for (size_t i = 0; i < sections[p->sec].n_keys; i++)
		if (!strcmp(sections[p->sec].keys[i].name, key))
			return p->key_line[i];
	return 0;
}

/* What a section must hold, checked when the next one opens or at the end. */
static int finish_section(struct parser *p)
{
	if (p->svc && !key_line(p, "match"))
		return fail_at(p, p->sec_line, "%s has no match; add match = unit:GLOB, "
			       "cgroup:/PATH, exe:GLOB or user:NAME", p->sec_title);
	/* pid_file says who may have restart_command run: alone, nothing */
	if (p->svc && p->svc->pid_file[0] && !p->svc->restart[0])
		return fail_at(p, key_line(p, "pid_file"), "%s has pid_file but no restart_command; "
			       "add restart_command = COMMAND, or remove pid_file", p->sec_title);
	if (p->cmd) {
		unsigned run = key_line(p, "run"), output = key_line(p, "output");

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
	p->svc = NULL;
	p->cmd = NULL;
	return 0;
}

static const char *key_names(enum section_kind s, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sections[s].n_keys && used < len; i++) {
		int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
				 sections[s].keys[i].name);

		if (n < 0)
			break;
		used += (size_t)n;
	}
	return buf;
}

static int open_section(struct parser *p, char *inside)
{
	static const char valid[] = "valid sections: [workers], [instances], [actions], "
				    "[artifacts], [signin], [cluster], [service NAME], [command NAME]";
	char buf[SHOWN_MAX + 4];
	char *head = trim(inside), *name = NULL;
	enum section_kind s = SEC_COUNT;

	if (finish_section(p) < 0)
		return -EINVAL;
	for (int i = SEC_TOP; i < SEC_SERVICE; i++)
		if (!strcmp(head, sections[i].name))
			s = i;
	for (int i = SEC_SERVICE; i <= SEC_COMMAND; i++) {
		size_t n = strlen(sections[i].name);

		if (!strncmp(head, sections[i].name, n) && (!head[n] || is_blank(head[n]))) {
			s = i;
			name = trim(head + n);
		}
	}
	if (s == SEC_COUNT)
		return fail(p, "unknown section [%s]; %s", shown(head, buf), valid);

	memset(p->key_line, 0, sizeof(p->key_line));
	p->sec = s;
	p->sec_line = p->line;
	if (!name) {
		if (p->fixed_line[s])
			return fail(p, "[%s] appears twice (first at line %u); merge the two",
				    sections[s].name, p->fixed_line[s]);
		p->fixed_line[s] = p->line;
		snprintf(p->sec_title, sizeof(p->sec_title), "[%s]", sections[s].name);
		return 0;
	}

	const char *kind = sections[s].name;
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

	if (!command) {
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
	} else {
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
		p->cmd->timeout_ns = 60 * SEC;
		p->has_o = false;
	}
	return 0;
}

static int set_key(struct parser *p, const char *key, char *value)
{
	const struct section_def *sd = &sections[p->sec];
	char buf[SHOWN_MAX + 4], names[512];

	if (p->sec == SEC_TOP && !p->fixed_line[SEC_TOP])
		p->fixed_line[SEC_TOP] = p->line;
	for (unsigned i = 0; i < sd->n_keys; i++) {
		if (strcmp(sd->keys[i].name, key) != 0)
			continue;
		if (p->key_line[i])
			return fail(p, "duplicate key '%s' in %s (first at line %u); keep one",
				    key, p->sec_title, p->key_line[i]);
		p->key_line[i] = p->line;
		return set_value(p, &sd->keys[i], value);
	}
	/* A key of another section is most likely under the wrong header. */
	for (int s = SEC_TOP; s < SEC_COUNT; s++)
		for (size_t i = 0; s != (int)p->sec && i < sections[s].n_keys; i++)
			if (!strcmp(sections[s].keys[i].name, key))
				return fail(p, "key '%s' is not one of %s's; move it %s[%s%s]",
					    key, p->sec_title,
					    s == SEC_TOP ? "above the first section, or under "
							 : "under ",
					    sections[s].name, s >= SEC_SERVICE ? " NAME" : "");
	return fail(p, "unknown key '%s' in %s; valid keys: %s", shown(key, buf), p->sec_title,
		    key_names(p->sec, names, sizeof(names)));
}

/* One line, without its end of line; checked free of NULs and control
 * characters. */
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

/* ns in the largest unit that writes it exactly: "5m", "1500ms". */
static const char *fmt_duration(uint64_t ns, char buf[32])
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = {
		{ "d", 24 * 3600 * SEC }, { "h", 3600 * SEC }, { "m", 60 * SEC },
		{ "s", SEC }, { "ms", 1000000 }, { "us", 1000 }, { "ns", 1 },
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (ns && ns % units[i].ns == 0) {
			snprintf(buf, 32, "%llu%s", (unsigned long long)(ns / units[i].ns),
				 units[i].unit);
			return buf;
		}
	}
	return "0";
}

/* Checks between keys, once the whole text is known. */
static int check_all(struct parser *p)
{
	struct daemon_config *c = p->c;
	char buf[SHOWN_MAX + 4], t1[32], t2[32];
	bool loopback = true;

	(void)parse_listen(c->listen, &loopback);
	if (!loopback && (!c->tls_cert[0] || !c->tls_key[0]))
		return fail_at(p, p->listen_line ? p->listen_line : p->line,
			       "listen = %s is not a loopback address and %s is not set; set "
			       "tls_cert and tls_key (PEM files), or listen on 127.0.0.1",
			       shown(c->listen, buf), c->tls_cert[0] ? "tls_key" : "tls_cert");
	if (!c->tls_cert[0] != !c->tls_key[0]) {
		unsigned line = c->tls_cert[0] ? p->tls_cert_line : p->tls_key_line;

		return fail_at(p, line ? line : p->line,
			       "%s is set but %s is not; set both, or neither",
			       c->tls_cert[0] ? "tls_cert" : "tls_key",
			       c->tls_cert[0] ? "tls_key" : "tls_cert");
	}
	if (c->etcd[0] && !c->cluster_key_file[0])
		return fail_at(p, p->etcd_line ? p->etcd_line : p->line,
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
		return fail_at(p, p->lease_ttl_line, "[cluster] lease_ttl = %s: etcd's leases are "
			       "whole seconds; write %llus", fmt_duration(c->lease_ttl_ns, t1),
			       (unsigned long long)(c->lease_ttl_ns / SEC));
	/* The lease is kept alive every third of lease_ttl: one keepalive
	 * that times out must leave the lease time for another. */
	if (c->etcd_timeout_ns * 3 >= c->lease_ttl_ns)
		return fail_at(p, p->etcd_timeout_line ? p->etcd_timeout_line
			       : p->lease_ttl_line ? p->lease_ttl_line : p->line,
			       "[cluster] etcd_timeout = %s is not below a third of lease_ttl = %s: "
			       "a keepalive that timed out would leave the lease no time for "
			       "another; set etcd_timeout to at most %llums, or lease_ttl to at "
			       "least %llus", fmt_duration(c->etcd_timeout_ns, t1),
			       fmt_duration(c->lease_ttl_ns, t2),
			       (unsigned long long)((c->lease_ttl_ns / 3 - 1) / 1000000),
			       (unsigned long long)(c->etcd_timeout_ns * 3 / SEC + 1));
	/* the default keeps at most a quarter of a small door */
	if (!p->reserved_line && c->reserved_connections > c->max_connections / 4)
		c->reserved_connections = c->max_connections / 4;
	if (c->reserved_connections >= c->max_connections)
		return fail_at(p, p->reserved_line,
			       "reserved_connections = %u is not below max_connections = %u: no "
			       "user but root and the admins could connect to the socket; set at "
			       "most %u", c->reserved_connections, c->max_connections,
			       c->max_connections - 1);
	if (c->duration_default_ns > c->duration_max_ns) {
		/* the default follows a lower maximum unless it was written */
		if (!p->duration_default_line) {
			c->duration_default_ns = c->duration_max_ns;
			return 0;
		}
		return fail_at(p, p->duration_default_line,
			       "duration_default = %s is above duration_max = %s; set at most %s",
			       fmt_duration(c->duration_default_ns, t1),
			       fmt_duration(c->duration_max_ns, t2), t2);
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
			      "actions", svc, action_keys[a], key, keylen);
}

bool config_mode_allowed(const struct daemon_config *c, const struct service_config *svc,
			 enum event_id m, char *key, size_t keylen)
{
	if ((unsigned)m >= EVENT_COUNT)
		return false;
	return switch_allowed(c->allow.mode[m], svc ? svc->overrides.mode[m] : -1,
			      "instances", svc, "modes", key, keylen);
}

static bool selector_matches(const struct selector *s, const char *unit, const char *cgroup,
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
		if (selector_matches(&c->services[i].match, unit, cgroup, exe, user))
			return &c->services[i];
	return NULL;
}

bool config_selects(const struct daemon_config *c, const char *unit, const char *cgroup,
		    const char *exe, const char *user)
{
	for (size_t i = 0; i < c->n_select; i++)
		if (selector_matches(&c->select[i], unit, cgroup, exe, user))
			return true;
	return false;
}
