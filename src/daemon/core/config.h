/* config: nprofd.conf — what the operator sets, with every default and
 * limit in one place (docs/nprofd.conf.5.md lists the same keys).
 *
 * The file is lines of "key = value" under optional [section] headers;
 * '#' starts a comment. The sections: the top (before any header),
 * [workers], [instances], [actions], [artifacts], [signin], [cluster],
 * [service NAME] (any [actions] key and modes too: that service's own),
 * [command NAME] and [schedule NAME]; their keys are the rows of the one table, keys[]
 * in config.c, which docs/nprofd.conf.5.md describes.
 * An unknown section or key, a malformed value or a value past its limit
 * stops start-up with "FILE:LINE: what is wrong; the fix"; so do a
 * listen address off loopback without tls_cert and tls_key, and an
 * etcd_timeout not below a third of lease_ttl (the keepalive's period),
 * and a [schedule NAME] that schedule_spec_check refuses, as the API
 * would refuse its body. */
#ifndef NPROF_DAEMON_CONFIG_H
#define NPROF_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/core/schedule_spec.h"
#include "daemon/core/selector.h"
#include "profile/events.h"

#define CONFIG_MAX_NAMES 32	   /* admin users, trusted proxies, selectors */
#define CONFIG_MAX_SERVICES 64
#define CONFIG_MAX_COMMANDS 32
#define CONFIG_MAX_SCHEDULES 32
#define CONFIG_NAME_MAX 64	   /* a user, service or command name */
#define CONFIG_HOST_MAX 254	   /* a DNS name (253 bytes) or an IP address, and its NUL */

/* The kinds of point-in-time action, each switched on or off. */
enum action_kind {
	ACTION_THREAD_DUMP,	/* [actions] thread_dump: on */
	ACTION_HEAP_SNAPSHOT,	/* heap_snapshot: on (needs the agent loaded) */
	ACTION_HEAP_PROFILING,	/* heap_profiling: off (enables heap sampling in the target) */
	ACTION_CORE_FILE,	/* core_file: off */
	ACTION_RESTART,		/* restart: off */
	ACTION_COMMANDS,	/* commands: off (the [command] sections) */
	ACTION_ATTACH,		/* attach: off (loads the agent into a running process) */
	ACTION_COUNT
};

/* Per-action and per-mode switches; -1 in a service means "as [actions]". */
struct switches {
	signed char action[ACTION_COUNT];
	signed char mode[EVENT_COUNT];	/* a profiling mode allowed */
};

struct service_config {
	char name[CONFIG_NAME_MAX];
	struct selector match;			/* which workers are this service */
	char restart[CONFIG_VALUE_MAX];		/* restart_command; "" = systemd when it runs, else none */
	/* pid_file: names the service's main process, whose owner may have
	 * restart_command run (as root); "" = none: only a match another
	 * user cannot meet says whose the service is (docs/nprofd.conf.5.md) */
	char pid_file[CONFIG_VALUE_MAX];
	struct switches overrides;		/* -1 where not set */
};

struct command_config {
	char name[CONFIG_NAME_MAX];		/* [a-z0-9_-], shown in the API */
	char description[CONFIG_VALUE_MAX];
	char run[CONFIG_VALUE_MAX];		/* %p pid, %d seconds, %o output file, %% */
	uint64_t timeout_ns;			/* default 60 s, at most 1 h */
	bool keep_output;			/* output = file (keep %o) | stdout | none, */
	bool keep_stdout;			/* by default file when run has %o, else stdout */
};

/* [schedule NAME]: a schedule the operator wants always, put in the
 * index at each start (api_schedules.c, schedules_declare). */
struct schedule_config {
	char name[CONFIG_NAME_MAX];		/* A-Z a-z 0-9 _ . @ - */
	struct schedule_spec spec;		/* checked as the API's are */
	/* where each field was set, or the header's line where it was not:
	 * what a message about that field names */
	unsigned line[SF_COUNT];
	unsigned header;			/* the [schedule NAME] line */
};

struct daemon_config {
	/* top */
	char listen[CONFIG_VALUE_MAX];		/* "127.0.0.1:9700"; "" = no HTTP */
	char socket_path[CONFIG_VALUE_MAX];	/* "/run/nprof/nprofd.sock" */
	char state_dir[CONFIG_VALUE_MAX];	/* "/var/lib/nprof" */
	char tls_cert[CONFIG_VALUE_MAX];	/* PEM files; required off loopback */
	char tls_key[CONFIG_VALUE_MAX];
	char admin_users[CONFIG_MAX_NAMES][CONFIG_NAME_MAX];
	size_t n_admin_users;			/* default: none but root on the socket */
	char admin_group[CONFIG_NAME_MAX];	/* default "" */
	char nprof_path[CONFIG_VALUE_MAX];	/* default "": the nprof beside nprofd */
	uint64_t max_body;			/* default 64 KiB, at most 16 MiB */
	unsigned max_connections;		/* default 256 a door, 1..10000 */
	unsigned peer_connections;		/* default 16: of one uid or client (peer.h) */
	unsigned reserved_connections;		/* default 16, or a quarter of max_connections
						   when that is lower: the socket's, for
						   root and the admins only */
	uint64_t reply_cache_bytes;		/* default 4 MiB, 0..256 MiB */
	uint64_t request_timeout_ns;		/* default 30 s: a whole request, and no traffic */
	char trusted_proxies[CONFIG_MAX_NAMES][CONFIG_NAME_MAX]; /* addresses */
	size_t n_trusted_proxies;
	char proxy_user_header[CONFIG_NAME_MAX]; /* default "X-Forwarded-User" */
	char host_names[CONFIG_MAX_NAMES][CONFIG_HOST_MAX]; /* more names a Host may say, */
	size_t n_host_names;			/* lower case; IPv6 without brackets */

	/* [workers] */
	struct selector select[CONFIG_MAX_NAMES];
	size_t n_select;			/* default: one SELECT_ALL */

	/* [instances] */
	uint64_t duration_max_ns;		/* default 5 min, at most 24 h */
	uint64_t duration_default_ns;		/* default 30 s */
	unsigned max_concurrent;		/* default 8, 1..256 */
	unsigned history_per_worker;		/* default 10, 1..10000 */
	uint64_t grace_ns;			/* default 10 s: past duration + grace, FAILED */

	/* [actions], and [instances] modes: the defaults every service
	 * starts from. Fresh install: every mode on (each instance ends
	 * within duration_max); thread_dump, heap_snapshot on; the rest
	 * (heap_profiling with no end, core_file, restart, commands) off. */
	struct switches allow;

	/* [artifacts] */
	uint64_t max_count;			/* default 1000 */
	uint64_t max_age_ns;			/* default 30 days; 0 = no limit */
	uint64_t max_bytes;			/* default 10 GiB */

	/* [signin]: the web UI's sign-in (PAM) and its sessions */
	char pam_service[CONFIG_NAME_MAX];	/* default "nprofd" */
	uint64_t session_lifetime_ns;		/* default 8 h, 1 min .. 30 days */
	unsigned max_sessions;			/* per user, default 20: the oldest ends */
	unsigned max_failures;			/* default 5 failures of one name from one address, */
	unsigned max_address_failures;		/* 20 of one address, then waits (signin_limit.h); */
	unsigned failures_per_minute;		/* 30 a minute at the door, then who failed waits */
	uint64_t failure_window_ns;		/* default 5 min: a failure is forgotten after it */

	/* [cluster]: several hosts found through etcd (docs/cluster.md) */
	char etcd[CONFIG_VALUE_MAX];		/* "http://h:2379,..."; "" = one host alone */
	char cluster_name[CONFIG_NAME_MAX];	/* default "": the host name */
	char cluster_url[CONFIG_VALUE_MAX];	/* how the others reach this daemon; "": from listen */
	char cluster_key_file[CONFIG_VALUE_MAX]; /* the shared key; required with etcd */
	uint64_t lease_ttl_ns;			/* default 10 s, 2 s .. 5 min */
	uint64_t etcd_timeout_ns;		/* default 3 s: one call to etcd; below lease_ttl / 3 */
	uint64_t host_timeout_ns;		/* default 5 s: one host of a fan-out */
	uint64_t forward_timeout_ns;		/* default 2 min: an action or download routed */
	unsigned fanout;			/* default 16 hosts asked at once */
	unsigned max_hosts;			/* default 1000 read from etcd */
	uint64_t max_reply;			/* default 32 MiB from one host */
	uint64_t signature_window_ns;		/* default 30 s either way */
	uint64_t hosts_cache_ns;		/* default 1 s: a read of the registry kept; 0 = none */
	double cpu_budget;			/* [continuous]: a schedule's share of one CPU, 0.01 */
	char etcd_ca[CONFIG_VALUE_MAX], etcd_cert[CONFIG_VALUE_MAX], etcd_key[CONFIG_VALUE_MAX];
	char etcd_user[CONFIG_NAME_MAX];	/* etcd's auth; "" none */
	char etcd_password_file[CONFIG_VALUE_MAX]; /* its password, a private file */

	struct service_config services[CONFIG_MAX_SERVICES];
	size_t n_services;
	struct command_config commands[CONFIG_MAX_COMMANDS];
	size_t n_commands;
	struct schedule_config schedules[CONFIG_MAX_SCHEDULES];
	size_t n_schedules;
};

/* A user or group name as nprofd takes it: A-Z a-z 0-9 _ . @ $ -, not
 * empty, not starting with '-' (the caller bounds its length). */
bool config_valid_name(const char *s);

/* Whether s is a host name (labels of A-Z a-z 0-9 -, 1 to 63 bytes each,
 * at most 253 in all), an IPv4 address, or an IPv6 one (bracketed or
 * not): what host_names and a request's Host may name. */
bool config_valid_host(const char *s);

/* The key an action is switched by, "thread_dump" ... */
const char *config_action_key(enum action_kind a);

/* Whether s is "" or http:// or https:// URLs (list: comma-separated, as
 * [cluster] etcd and --etcd take them): "" when it is, else the fault in
 * words. */
const char *config_check_urls(const char *s, bool list);

/* The keys nprofd.conf takes, one row each of the table in config.c, as
 * docs/nprofd.conf.5.md must describe them (tests/unit/daemon_config_test.c
 * holds it to them): key i (from 0) in ret, false past the last. */
struct config_key_doc {
	const char *name;
	const char *section;	/* "top", "workers", ..., "service", "command", "schedule" */
	bool per_service;	/* also a [service NAME] key, that service's own */
	const char *def;	/* the default as written ("64k", "on", ""); NULL: none of
				   its own (required, or following another key) */
	char min[32], max[32];	/* a number's bounds as written ("1k", "16M", "1"); else "" */
	const char *doc;	/* how the docs start saying what it is */
};
bool config_key_doc(size_t i, struct config_key_doc *ret);

/* Fills c with every default. */
void config_defaults(struct daemon_config *c);

/* Parses text (len bytes, not NUL-terminated; file names it in errors)
 * over what c holds. 0, or -EINVAL with "FILE:LINE: cause; fix" in err
 * (errlen bytes), c then unchanged; -ENOMEM. Never reads past len. */
int config_parse(struct daemon_config *c, const char *file, const char *text,
		 size_t len, char *err, size_t errlen);

/* config_defaults, then the file at path (NULL: defaults only; at most
 * 1 MiB, else -EFBIG) into c: 0, or -errno / -EINVAL with the message
 * in err ("FILE: cause; fix" when no line is to blame), c unchanged. */
int config_load(struct daemon_config *c, const char *path, char *err, size_t errlen);

/* Whether action a / mode m is allowed for a worker of service svc
 * (NULL: none of the [service] sections). When not, key (keylen bytes,
 * may be NULL) names the setting that switches it, for the message:
 * "[actions] core_file" or "[service web] core_file". */
bool config_action_allowed(const struct daemon_config *c, const struct service_config *svc,
			   enum action_kind a, char *key, size_t keylen);
bool config_mode_allowed(const struct daemon_config *c, const struct service_config *svc,
			 enum event_id m, char *key, size_t keylen);

/* The first [service] section, in file order, whose match selects a
 * worker, or NULL. unit is
 * its systemd unit ("" if none), cgroup its cgroup path, exe its
 * executable, user its owner's name. */
const struct service_config *config_service_for(const struct daemon_config *c,
						const char *unit, const char *cgroup,
						const char *exe, const char *user);

/* Whether any user can make a process of theirs that s takes: a unit:
 * name (their own systemd names units as they like), an exe: pattern
 * (a program of theirs at a path that matches it). What such a selector
 * takes says nothing of whose the processes are. */
bool config_selector_forgeable(const struct selector *s);

/* Whether a process of that unit, cgroup, executable and user is one s
 * selects (NULL or "": the process has none). */
bool config_selector_matches(const struct selector *s, const char *unit, const char *cgroup,
			     const char *exe, const char *user);

/* Whether [workers] select takes a process with these properties. */
bool config_selects(const struct daemon_config *c, const char *unit, const char *cgroup,
		    const char *exe, const char *user);

#endif
