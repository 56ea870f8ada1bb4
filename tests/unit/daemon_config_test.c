/* nprofd.conf: defaults, a full file, every class of error with its
 * FILE:LINE, service overrides, selectors, quoting and comments; and
 * docs/nprofd.conf.5.md holds the table of keys: each key in its
 * section's table with its default, its bounds and its meaning as the
 * table has them, in the synopsis with its default, and no other key. */
#include "daemon/core/config.h"
#include "test.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "profile/events.h"

#define SEC 1000000000ull

/* ~300 KiB each: off the stack. */
static struct daemon_config cfg, before;
static char err[512];

static int parse(const char *text)
{
	config_defaults(&cfg);
	err[0] = '\0';
	return config_parse(&cfg, "nprofd.conf", text, strlen(text), err, sizeof(err));
}

/* text is refused with exactly one line that starts with want (its
 * FILE:LINE and cause) and holds fix, and cfg is left as it was. */
static void refused(const char *text, const char *want, const char *fix, const char *what)
{
	int r;

	config_defaults(&cfg);
	before = cfg;
	err[0] = '\0';
	r = config_parse(&cfg, "nprofd.conf", text, strlen(text), err, sizeof(err));
	CHECK(r == -EINVAL && !strncmp(err, want, strlen(want)) && strstr(err, fix) &&
		      !strchr(err, '\n') && !memcmp(&cfg, &before, sizeof(cfg)),
	      "refused: %s", what);
	if (r != -EINVAL || strncmp(err, want, strlen(want)) || !strstr(err, fix))
		printf("#   rc %d, got \"%s\"\n#   want \"%s...%s...\"\n", r, err, want, fix);
}

static void test_defaults(void)
{
	char key[96];

	config_defaults(&cfg);
	CHECK_STR(cfg.listen, "127.0.0.1:9700", "listen defaults to loopback");
	CHECK_STR(cfg.socket_path, "/run/nprof/nprofd.sock", "socket default");
	CHECK_STR(cfg.state_dir, "/var/lib/nprof", "state_dir default");
	CHECK(!cfg.tls_cert[0] && !cfg.tls_key[0] && !cfg.nprof_path[0] && !cfg.admin_group[0],
	      "no TLS, nprof beside nprofd, no admin group");
	CHECK(cfg.n_admin_users == 0 && cfg.n_trusted_proxies == 0 && cfg.n_host_names == 0,
	      "no admins, no proxies, no more host names");
	CHECK_UINT(cfg.max_body, ==, 64 << 10, "max_body 64 KiB");
	CHECK_UINT(cfg.max_connections, ==, 256, "max_connections 256");
	CHECK(cfg.peer_connections == 16 && cfg.reserved_connections == 16,
	      "peer_connections 16, reserved_connections 16");
	CHECK_UINT(cfg.request_timeout_ns, ==, 30 * SEC, "request_timeout 30 s");
	CHECK_STR(cfg.proxy_user_header, "X-Forwarded-User", "proxy_user_header");
	CHECK(cfg.n_select == 1 && cfg.select[0].kind == SELECT_ALL, "select = all");
	CHECK_UINT(cfg.duration_max_ns, ==, 300 * SEC, "duration_max 5 min");
	CHECK_UINT(cfg.duration_default_ns, ==, 30 * SEC, "duration_default 30 s");
	CHECK(cfg.max_concurrent == 8 && cfg.history_per_worker == 10, "8 concurrent, 10 kept");
	CHECK_UINT(cfg.grace_ns, ==, 10 * SEC, "grace 10 s");
	CHECK_UINT(cfg.max_count, ==, 1000, "max_count 1000");
	CHECK_UINT(cfg.max_age_ns, ==, 30ull * 24 * 3600 * SEC, "max_age 30 days");
	CHECK_UINT(cfg.max_bytes, ==, 10ull << 30, "max_bytes 10 GiB");
	CHECK(cfg.n_services == 0 && cfg.n_commands == 0, "no services, no commands");
	CHECK_UINT(cfg.reply_cache_bytes, ==, 4ull << 20, "reply_cache 4 MiB");
	CHECK(!strcmp(cfg.pam_service, "nprofd") && cfg.session_lifetime_ns == 8 * 3600 * SEC &&
		      cfg.max_sessions == 20 && cfg.max_failures == 5 &&
		      cfg.max_address_failures == 20 && cfg.failures_per_minute == 30 &&
		      cfg.failure_window_ns == 300 * SEC,
	      "[signin]: PAM service nprofd, 8 h sessions, 20 a user, 5 failures of a name from "
	      "an address, 20 of an address, 30 a minute at the door, remembered 5 min");

	CHECK(config_action_allowed(&cfg, NULL, ACTION_THREAD_DUMP, NULL, 0) &&
		      config_action_allowed(&cfg, NULL, ACTION_HEAP_SNAPSHOT, NULL, 0),
	      "thread dumps and heap snapshots on");
	static const enum action_kind off[] = { ACTION_HEAP_PROFILING, ACTION_CORE_FILE,
						ACTION_RESTART, ACTION_COMMANDS };
	static const char *const off_key[] = { "[actions] heap_profiling", "[actions] core_file",
					       "[actions] restart", "[actions] commands" };
	for (size_t i = 0; i < 4; i++) {
		key[0] = '\0';
		CHECK(!config_action_allowed(&cfg, NULL, off[i], key, sizeof(key)), "%s off",
		      config_action_key(off[i]));
		CHECK_STR(key, off_key[i], "%s: the key that switches it", off_key[i]);
	}
	for (unsigned m = 0; m < EVENT_COUNT; m++) {
		key[0] = '\0';
		CHECK(config_mode_allowed(&cfg, NULL, m, key, sizeof(key)) && !key[0],
		      "mode %s on by default, no key written", event_name(m));
	}
	CHECK(!config_action_allowed(&cfg, NULL, ACTION_COUNT, NULL, 0) &&
		      !config_mode_allowed(&cfg, NULL, EVENT_COUNT, NULL, 0),
	      "out-of-range action or mode: not allowed");
	CHECK_STR(config_action_key(ACTION_CORE_FILE), "core_file", "config_action_key");

	config_defaults(&before);
	CHECK(parse("") == 0 && !memcmp(&cfg, &before, sizeof(cfg)), "an empty file is the defaults");
	CHECK(parse("# only a comment\n\n   \n\t\n") == 0 && !memcmp(&cfg, &before, sizeof(cfg)),
	      "comments and blank lines change nothing");
}

static const char full[] =
	"# nprofd.conf: every section\n"
	"listen = 0.0.0.0:9443\n"
	"socket = /run/nprof/test.sock\n"
	"state_dir = /srv/nprof\n"
	"tls_cert = /etc/nprof/cert.pem\n"
	"tls_key = /etc/nprof/key.pem\n"
	"admin_users = alice, bob,carol\n"
	"admin_group = wheel\n"
	"nprof = /opt/nprof/bin/nprof\n"
	"max_body = 1M\n"
	"max_connections = 100\n"
	"request_timeout = 1m\n"
	"trusted_proxies = 10.0.0.1, fd00::1\n"
	"proxy_user_header = X-Remote-User\n"
	"host_names = nprof.example.com, [fd00::7], 192.0.2.7, Web.Example\n"
	"\n"
	"[workers]\n"
	"select = unit:*.service, cgroup:/system.slice/, exe:/usr/bin/*, user:www-data\n"
	"\n"
	"[instances]\n"
	"modes = cpu, wall, alloc\n"
	"duration_max = 2h\n"
	"duration_default = 90\n"
	"max_concurrent = 16\n"
	"history_per_worker = 20\n"
	"grace = 30s\n"
	"\n"
	"[actions]\n"
	"thread_dump = no\n"
	"heap_snapshot = off\n"
	"heap_profiling = yes\n"
	"core_file = true\n"
	"restart = 1\n"
	"commands = On\n"
	"\n"
	"[artifacts]\n"
	"max_count = 500\n"
	"max_age = 7d\n"
	"max_bytes = 2T\n"
	"\n"
	"[service web]\n"
	"match = unit:nginx*.service\n"
	"restart_command = systemctl restart nginx\n"
	"pid_file = /run/nginx.pid\n"
	"core_file = off\n"
	"modes = cpu\n"
	"\n"
	"[service db.main@1]\n"
	"match = cgroup:/system.slice/postgresql.service\n"
	"restart = off\n"
	"thread_dump = on\n"
	"\n"
	"[command perf-stat]\n"
	"run = perf stat -p %p -- sleep %d\n"
	"timeout = 2m\n"
	"description = \"  counters, # of everything  \"\n"
	"\n"
	"[command gcore]\n"
	"run = gcore -o %o %p  # a 100%% literal is %%\n"
	"output = file\n"
	"[command quiet]\n"
	"run = true\n"
	"output = none\n";

static void test_full(void)
{
	const struct service_config *web, *db;
	char key[96];

	CHECK_INT(parse(full), ==, 0, "a full file parses");
	if (err[0])
		printf("#   %s\n", err);
	CHECK_STR(cfg.listen, "0.0.0.0:9443", "listen");
	CHECK_STR(cfg.socket_path, "/run/nprof/test.sock", "socket");
	CHECK_STR(cfg.state_dir, "/srv/nprof", "state_dir");
	CHECK_STR(cfg.tls_cert, "/etc/nprof/cert.pem", "tls_cert");
	CHECK_STR(cfg.tls_key, "/etc/nprof/key.pem", "tls_key");
	CHECK(cfg.n_admin_users == 3 && !strcmp(cfg.admin_users[0], "alice") &&
		      !strcmp(cfg.admin_users[1], "bob") && !strcmp(cfg.admin_users[2], "carol"),
	      "admin_users: three names, trimmed");
	CHECK_STR(cfg.admin_group, "wheel", "admin_group");
	CHECK_STR(cfg.nprof_path, "/opt/nprof/bin/nprof", "nprof");
	CHECK_UINT(cfg.max_body, ==, 1 << 20, "max_body 1M");
	CHECK_UINT(cfg.max_connections, ==, 100, "max_connections");
	CHECK_UINT(cfg.request_timeout_ns, ==, 60 * SEC, "request_timeout 1m");
	CHECK(cfg.n_trusted_proxies == 2 && !strcmp(cfg.trusted_proxies[1], "fd00::1"),
	      "trusted_proxies: IPv4 and IPv6");
	CHECK_STR(cfg.proxy_user_header, "X-Remote-User", "proxy_user_header");
	CHECK(cfg.n_host_names == 4 && !strcmp(cfg.host_names[0], "nprof.example.com") &&
		      !strcmp(cfg.host_names[1], "fd00::7") && !strcmp(cfg.host_names[2], "192.0.2.7") &&
		      !strcmp(cfg.host_names[3], "web.example"),
	      "host_names: names in lower case, addresses, IPv6 without its brackets");
	CHECK(cfg.n_select == 4 && cfg.select[0].kind == SELECT_UNIT &&
		      cfg.select[1].kind == SELECT_CGROUP && cfg.select[2].kind == SELECT_EXE &&
		      cfg.select[3].kind == SELECT_USER,
	      "four selectors of four kinds");
	CHECK_STR(cfg.select[1].value, "/system.slice", "a cgroup's trailing / dropped");
	CHECK_STR(cfg.select[3].value, "www-data", "user selector");
	CHECK(cfg.allow.mode[EVENT_CPU] == 1 && cfg.allow.mode[EVENT_WALL] == 1 &&
		      cfg.allow.mode[EVENT_ALLOC] == 1 && cfg.allow.mode[EVENT_ITIMER] == 0 &&
		      cfg.allow.mode[EVENT_CYCLES] == 0,
	      "modes: exactly the list");
	CHECK_UINT(cfg.duration_max_ns, ==, 7200 * SEC, "duration_max 2h");
	CHECK_UINT(cfg.duration_default_ns, ==, 90 * SEC, "a bare duration is seconds");
	CHECK(cfg.max_concurrent == 16 && cfg.history_per_worker == 20, "counts");
	CHECK_UINT(cfg.grace_ns, ==, 30 * SEC, "grace");
	CHECK(cfg.allow.action[ACTION_THREAD_DUMP] == 0 && cfg.allow.action[ACTION_HEAP_SNAPSHOT] == 0 &&
		      cfg.allow.action[ACTION_HEAP_PROFILING] == 1 &&
		      cfg.allow.action[ACTION_CORE_FILE] == 1 && cfg.allow.action[ACTION_RESTART] == 1 &&
		      cfg.allow.action[ACTION_COMMANDS] == 1,
	      "actions: no, off, yes, true, 1, On");
	CHECK_UINT(cfg.max_count, ==, 500, "max_count");
	CHECK_UINT(cfg.max_age_ns, ==, 7ull * 24 * 3600 * SEC, "max_age 7d");
	CHECK_UINT(cfg.max_bytes, ==, 2ull << 40, "max_bytes 2T");

	CHECK(cfg.n_services == 2, "two services");
	web = &cfg.services[0];
	db = &cfg.services[1];
	CHECK_STR(web->name, "web", "service name");
	CHECK(web->match.kind == SELECT_UNIT && !strcmp(web->match.value, "nginx*.service"),
	      "service match");
	CHECK_STR(web->restart, "systemctl restart nginx", "restart_command");
	CHECK_STR(web->pid_file, "/run/nginx.pid", "pid_file");
	CHECK(web->overrides.action[ACTION_CORE_FILE] == 0 &&
		      web->overrides.action[ACTION_RESTART] == -1 &&
		      web->overrides.mode[EVENT_CPU] == 1 && web->overrides.mode[EVENT_WALL] == 0,
	      "web's overrides: core_file off, modes = cpu, the rest as the defaults");
	CHECK_STR(db->name, "db.main@1", "a service name with . and @");
	CHECK(db->overrides.action[ACTION_RESTART] == 0 &&
		      db->overrides.action[ACTION_THREAD_DUMP] == 1 && db->restart[0] == '\0' &&
		      db->overrides.mode[EVENT_CPU] == -1,
	      "db: restart switch off, thread_dump on, no restart command");

	key[0] = '\0';
	CHECK(!config_action_allowed(&cfg, web, ACTION_CORE_FILE, key, sizeof(key)),
	      "web: core_file off though [actions] has it on");
	CHECK_STR(key, "[service web] core_file", "named by the service");
	CHECK(config_action_allowed(&cfg, web, ACTION_RESTART, NULL, 0),
	      "web: restart as [actions]");
	CHECK(!config_action_allowed(&cfg, web, ACTION_THREAD_DUMP, key, sizeof(key)),
	      "web: thread_dump off, as [actions]");
	CHECK_STR(key, "[actions] thread_dump", "named by [actions]");
	CHECK(config_action_allowed(&cfg, db, ACTION_THREAD_DUMP, NULL, 0),
	      "db: thread_dump on though [actions] has it off");
	CHECK(!config_mode_allowed(&cfg, web, EVENT_WALL, key, sizeof(key)),
	      "web: wall off by its modes");
	CHECK_STR(key, "[service web] modes", "named by the service's modes");
	CHECK(config_mode_allowed(&cfg, db, EVENT_ALLOC, NULL, 0) &&
		      !config_mode_allowed(&cfg, db, EVENT_ITIMER, key, sizeof(key)),
	      "db: modes as [instances]");
	CHECK_STR(key, "[instances] modes", "named by [instances] modes");

	CHECK(cfg.n_commands == 3, "three commands");
	CHECK_STR(cfg.commands[0].name, "perf-stat", "command name");
	CHECK_STR(cfg.commands[0].run, "perf stat -p %p -- sleep %d", "run");
	CHECK_UINT(cfg.commands[0].timeout_ns, ==, 120 * SEC, "timeout");
	CHECK_STR(cfg.commands[0].description, "  counters, # of everything  ",
		  "a quoted value keeps its spaces and its #");
	CHECK(!cfg.commands[0].keep_output && cfg.commands[0].keep_stdout,
	      "output defaults to stdout without %%o");
	CHECK_STR(cfg.commands[1].run, "gcore -o %o %p", "the comment after run is gone");
	CHECK(cfg.commands[1].keep_output && !cfg.commands[1].keep_stdout, "output = file");
	CHECK_UINT(cfg.commands[1].timeout_ns, ==, 60 * SEC, "timeout defaults to 60 s");
	CHECK(!cfg.commands[2].keep_output && !cfg.commands[2].keep_stdout, "output = none");

	/* a second parse over the first keeps what it does not set */
	static const char more[] = "[instances]\nmax_concurrent = 3\n";

	CHECK(config_parse(&cfg, "more.conf", more, sizeof(more) - 1, err, sizeof(err)) == 0 &&
		      cfg.max_concurrent == 3 && cfg.n_services == 2 && cfg.max_count == 500,
	      "config_parse over a configuration");
}

static void test_syntax(void)
{
	CHECK(parse("listen=127.0.0.1:1\nsocket =/a\nstate_dir= /b\n") == 0 &&
		      !strcmp(cfg.listen, "127.0.0.1:1") && !strcmp(cfg.socket_path, "/a") &&
		      !strcmp(cfg.state_dir, "/b"),
	      "spaces around = optional");
	CHECK(parse("  \tadmin_group =  staff  \t# the staff\n") == 0 &&
		      !strcmp(cfg.admin_group, "staff"),
	      "indented key, value trimmed, comment after it");
	CHECK(parse("[command x]\nrun = \"echo \\\"a # b\\\" \\\\ \\d\"  # c\n") == 0 &&
		      !strcmp(cfg.commands[0].run, "echo \"a # b\" \\ \\d"),
	      "quoted: \\\" and \\\\ escapes, other backslashes kept, # kept");
	CHECK(parse("listen = \"\"\n") == 0 && cfg.listen[0] == '\0', "listen = \"\": no HTTP");
	CHECK(parse("listen =\n") == 0 && cfg.listen[0] == '\0', "an empty value");
	CHECK(parse("listen = [::1]:9700\r\n[ instances ]\r\ngrace = 1500ms\r\n") == 0 &&
		      !strcmp(cfg.listen, "[::1]:9700") && cfg.grace_ns == 1500000000ull,
	      "CRLF lines, IPv6 loopback, spaces inside a header");
	CHECK(parse("[top]\nlisten = 127.0.0.2:80\n[workers]\nselect = all\n") == 0 &&
		      !strcmp(cfg.listen, "127.0.0.2:80"),
	      "an explicit [top]");
	CHECK(parse("max_bytes = 100\n[artifacts]\n") != 0, "a top key is not one of [artifacts]'s");
	CHECK(parse("[workers] # which processes\nselect = all") == 0,
	      "comment after a header; last line without a newline");
	CHECK(parse("[instances]\nmodes =\n") == 0 && !config_mode_allowed(&cfg, NULL, EVENT_CPU, NULL, 0),
	      "modes = nothing: profiling off");
	CHECK(parse("[instances]\nduration_max = 10s\n") == 0 && cfg.duration_default_ns == 10 * SEC,
	      "duration_default follows a lower duration_max when not set");
	CHECK(parse("[artifacts]\nmax_age = 0\nmax_bytes = 1.5G\n") == 0 && cfg.max_age_ns == 0 &&
		      cfg.max_bytes == 1610612736ull,
	      "max_age 0 = no limit; fractional sizes");
	CHECK(parse("[artifacts]\nmax_age = 1.5d\n") == 0 && cfg.max_age_ns == 36ull * 3600 * SEC,
	      "fractional days");
	CHECK(parse("[actions]\ncore_file = YES\n") == 0 && cfg.allow.action[ACTION_CORE_FILE] == 1,
	      "booleans in any case");
	CHECK(parse("[service a]\nmatch = all\n[service b]\nmatch = user:x\n") == 0 &&
		      cfg.n_services == 2,
	      "two services");
}

static void test_errors(void)
{
	char big[6000], line[2000];

	refused("listen = 127.0.0.1:9700\n\nlistne = 1\n",
		"nprofd.conf:3: unknown key 'listne' in [top]; valid keys: listen, socket, ",
		"proxy_user_header", "an unknown key, with the valid ones");
	refused("[workers]\nselect = all\nduration_max = 1h\n",
		"nprofd.conf:3: key 'duration_max' is not one of [workers]'s; move it under [instances]",
		"", "a key under the wrong header");
	refused("[service s]\nmatch = all\nlisten = 127.0.0.1:1\n",
		"nprofd.conf:3: key 'listen' is not one of [service s]'s; move it above the first "
		"section, or under [top]", "", "a top key in a service");
	refused("# x\n[instance]\n", "nprofd.conf:2: unknown section [instance]; valid sections:",
		"[command NAME]", "an unknown section");
	refused("[instances\n", "nprofd.conf:1: '[' without ']'", "[section]", "an unclosed header");
	refused("[actions] core_file = on\n", "nprofd.conf:1: text after ']'", "own",
		"text after a header");
	refused("just words\n", "nprofd.conf:1: expected '=' after 'just'", "just = value",
		"a line without =");
	refused("= 3\n", "nprofd.conf:1: expected key = value", "[section]", "a value without key");

	CHECK(parse("reply_cache = 0\n[signin]\npam_service = login\nsession_lifetime = 1h\n"
		    "max_sessions = 1\nmax_failures = 3\nfailure_window = 30s\n"
		    "max_address_failures = 7\nfailures_per_minute = 100\n") == 0 &&
		      cfg.reply_cache_bytes == 0 && !strcmp(cfg.pam_service, "login") &&
		      cfg.session_lifetime_ns == 3600 * SEC && cfg.max_sessions == 1 &&
		      cfg.max_failures == 3 && cfg.failure_window_ns == 30 * SEC &&
		      cfg.max_address_failures == 7 && cfg.failures_per_minute == 100,
	      "[signin] and reply_cache set (%s)", err);
	refused("[signin]\nsession_lifetime = 10s\n",
		"nprofd.conf:2: session_lifetime = 10s is below the minimum of 1m; set at least 1m", "",
		"a session shorter than a minute");
	refused("[signin]\nfailures_per_minute = 0\n",
		"nprofd.conf:2: failures_per_minute = 0 is below the minimum of 1; set at least 1", "",
		"a door that takes no failure at all");
	refused("[signin]\npam_service = a/b\n", "nprofd.conf:2: pam_service", "",
		"a PAM service that is not a name");
	refused("[instances]\nduration_max = 3d\n",
		"nprofd.conf:2: duration_max = 3d is above the limit of 24h; set at most 24h", "",
		"a duration above its limit");
	refused("[instances]\ngrace = 0\n",
		"nprofd.conf:2: grace = 0 is below the minimum of 1s; set at least 1s", "",
		"a duration below its minimum");
	refused("[instances]\nduration_max = 5x\n", "nprofd.conf:2: duration_max = 5x is not a duration",
		"a bare number is seconds", "a malformed duration");
	refused("request_timeout = 1e3\n", "nprofd.conf:1: request_timeout = 1e3 is not a duration",
		"30s", "strtod's exponents are not durations");
	refused("[instances]\nduration_max = 99999999999999999999h\n",
		"nprofd.conf:2: duration_max = 99999999999999999999h is above the limit of 24h", "",
		"an overflowing duration");
	refused("max_body = 17M\n", "nprofd.conf:1: max_body = 17M is above the limit of 16M",
		"set at most 16M", "a size above its limit");
	refused("max_body = 10 k\n", "nprofd.conf:1: max_body = 10 k is not a size", "64k",
		"a malformed size");
	refused("[artifacts]\nmax_bytes = 2000T\n",
		"nprofd.conf:2: max_bytes = 2000T is above the limit of 1024T", "", "terabytes");
	CHECK(parse("max_connections = 40\npeer_connections = 5\n") == 0 &&
		      cfg.peer_connections == 5 && cfg.reserved_connections == 10,
	      "a small door: the default reserve is a quarter of it (%u)", cfg.reserved_connections);
	CHECK(parse("max_connections = 1\n") == 0 && cfg.reserved_connections == 0,
	      "a door of one: no reserve");
	CHECK(parse("max_connections = 40\nreserved_connections = 39\n") == 0 &&
		      cfg.reserved_connections == 39, "a reserve written: kept as written");
	refused("max_connections = 40\nreserved_connections = 40\n",
		"nprofd.conf:2: reserved_connections = 40 is not below max_connections = 40",
		"set at most 39", "a reserve that leaves other users nothing");
	refused("peer_connections = 0\n", "nprofd.conf:1: peer_connections = 0 is below the minimum of 1",
		"at least 1", "a share of nothing");
	refused("max_connections = 0\n",
		"nprofd.conf:1: max_connections = 0 is below the minimum of 1", "at least 1",
		"a count below its minimum");
	refused("max_connections = 10001\n",
		"nprofd.conf:1: max_connections = 10001 is above the limit of 10000", "at most 10000",
		"a count above its limit");
	refused("max_connections = 1.5\n", "nprofd.conf:1: max_connections = 1.5 is not a whole number",
		"from 1 to 10000", "a fractional count");
	refused("[instances]\nduration_max = 1m\nduration_default = 2m\n",
		"nprofd.conf:3: duration_default = 2m is above duration_max = 1m; set at most 1m", "",
		"duration_default above duration_max");
	refused("[actions]\nrestart = maybe\n", "nprofd.conf:2: restart = maybe is not on or off",
		"yes, no, 1 or 0", "a malformed boolean");
	refused("[service s]\nmatch = all\nrestart = sv restart s\n",
		"nprofd.conf:3: restart = sv restart s is not on or off",
		"restart_command = sv restart s", "a service's restart is the switch");

	refused("socket = /a\n\nsocket = /b\n",
		"nprofd.conf:3: duplicate key 'socket' in [top] (first at line 1); keep one", "",
		"a duplicate key");
	refused("[service a]\nmatch = all\nmodes = cpu\nmodes = wall\n",
		"nprofd.conf:4: duplicate key 'modes' in [service a] (first at line 3)", "keep one",
		"a duplicate key in a service");
	refused("[actions]\n[workers]\n[actions]\n",
		"nprofd.conf:3: [actions] appears twice (first at line 1)", "merge",
		"a section twice");
	refused("[service a]\nmatch = all\n[service a]\nmatch = all\n",
		"nprofd.conf:3: [service a] appears twice", "merge", "a service name twice");
	refused("[command a]\nrun = x\n[command a]\nrun = y\n",
		"nprofd.conf:3: [command a] appears twice", "rename", "a command name twice");

	{
		/* refused() uses strlen: give the NUL by length */
		static const char t[] = "listen =\nsocket = /a\0b\n";

		config_defaults(&cfg);
		CHECK(config_parse(&cfg, "nprofd.conf", t, sizeof(t) - 1, err, sizeof(err)) == -EINVAL &&
			      !strncmp(err, "nprofd.conf:2: NUL byte at column 12;", 37),
		      "a NUL inside a value");
	}
	refused("admin_group = a\x01z\n", "nprofd.conf:1: control character 0x01 at column 16",
		"remove it", "a control character");
	memset(big, 'x', sizeof(big));
	memcpy(big, "# ", 2);
	big[4097] = '\n';
	big[4098] = '\0';
	refused(big, "nprofd.conf:1: the line is 4097 bytes, above the limit of 4096", "shorten",
		"a line over 4096 bytes");
	big[4096] = '\n';
	big[4097] = '\0';
	CHECK(parse(big) == 0, "a line of exactly 4096 bytes");
	/* line 3 of a [command]: a description of 1024 bytes, then 1023 */
	memcpy(line, "[command x]\nrun = y\ndescription = ", 34);
	memset(line + 34, 'd', 1024);
	memcpy(line + 34 + 1024, "\n", 2);
	refused(line, "nprofd.conf:3: description: the value is 1024 bytes, above the limit of 1023",
		"shorten it", "a value over CONFIG_VALUE_MAX - 1");
	memcpy(line + 34 + 1023, "\n", 2);
	CHECK(parse(line) == 0 && strlen(cfg.commands[0].description) == 1023,
	      "a value of exactly 1023 bytes");
	refused("[command x]\nrun = \"abc\n", "nprofd.conf:2: run: quoted value without its closing",
		"close it", "an unterminated quote");
	refused("[command x]\nrun = \"abc\" def\n", "nprofd.conf:2: run: text after the closing quote",
		"quote the whole value", "text after a quoted value");

	/* arrays full */
	{
		char *t = malloc(70 * 40), *w = t;

		w += sprintf(w, "admin_users = ");
		for (int i = 0; i < 33; i++)
			w += sprintf(w, "%su%d", i ? "," : "", i);
		refused(t, "nprofd.conf:1: admin_users has more than 32 entries, the limit", "at most 32",
			"33 admin users");
		w = t;
		for (int i = 0; i < 65; i++)
			w += sprintf(w, "[service s%d]\nmatch = all\n", i);
		refused(t, "nprofd.conf:129: more than 64 [service] sections, the limit", "merge",
			"65 services");
		w = t;
		for (int i = 0; i < 33; i++)
			w += sprintf(w, "[command c%d]\nrun = x\n", i);
		refused(t, "nprofd.conf:65: more than 32 [command] sections, the limit", "remove",
			"33 commands");
		w = t;
		w += sprintf(w, "[workers]\nselect = ");
		for (int i = 0; i < 33; i++)
			w += sprintf(w, "%suser:u%d", i ? "," : "", i);
		refused(t, "nprofd.conf:2: select has more than 32 selectors", "at most 32",
			"33 selectors");
		free(t);
	}
	refused("admin_users = a,,b\n", "nprofd.conf:1: admin_users has an empty item",
		"remove the extra comma", "an empty list item");
	refused("admin_users = root, x y\n", "nprofd.conf:1: admin_users: 'x y' is not a user name",
		"A-Z", "a malformed user name");
	refused("admin_users = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
		"nprofd.conf:1: admin_users: 'aaaa", "at most 63", "a user name over 63 bytes");
	refused("trusted_proxies = 10.0.0.1:80\n",
		"nprofd.conf:1: trusted_proxies: '10.0.0.1:80' is not an IP address", "without a port",
		"a proxy with a port");
	refused("host_names = nprof.example:9700\n",
		"nprofd.conf:1: host_names: 'nprof.example:9700' is not a host name or an IP address",
		"without a port", "a host name with a port");
	refused("host_names = a, -b.example\n", "nprofd.conf:1: host_names: '-b.example'",
		"nprof.example.com", "a label starting with '-'");
	refused("host_names = a..b\n", "nprofd.conf:1: host_names: 'a..b'", "", "an empty label");
	refused("proxy_user_header = X User\n",
		"nprofd.conf:1: proxy_user_header = X User is not an HTTP header name", "X-Forwarded-User",
		"a header name with a space");

	/* sections that lack what they need */
	refused("[command gcore]\ntimeout = 5s\n\n[actions]\n",
		"nprofd.conf:1: [command gcore] has no run; add run = COMMAND", "%o output file",
		"a command without run");
	refused("[command gcore]\ntimeout = 5s\n",
		"nprofd.conf:1: [command gcore] has no run", "add run", "... at the end of the file");
	refused("\n[service web]\nrestart_command = sv restart web\n[service db]\nmatch = all\n",
		"nprofd.conf:2: [service web] has no match; add match = unit:GLOB", "user:NAME",
		"a service without match");
	refused("[service]\n", "nprofd.conf:1: [service] needs a name; write [service NAME]", "",
		"a service without a name");
	refused("[service q]\nmatch = exe:/opt/q\npid_file = /run/q.pid\n\n[actions]\n",
		"nprofd.conf:3: [service q] has pid_file but no restart_command", "remove pid_file",
		"pid_file without restart_command, which it is for");
	refused("[service q]\nmatch = exe:/opt/q\nrestart_command = sv restart q\npid_file = q.pid\n",
		"nprofd.conf:4: pid_file = q.pid is not an absolute path", "from /",
		"a relative pid_file");
	refused("[service a/b]\n", "nprofd.conf:1: [service a/b]: the name may hold only", "rename",
		"a service name with a /");
	refused("[command Gcore]\n", "nprofd.conf:1: [command Gcore]: the name may hold only a-z",
		"URLs", "a command name in capitals");
	refused("[service aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]\n",
		"nprofd.conf:1: [service aaaa", "above the limit of 63", "a service name over 63 bytes");

	/* selectors */
	refused("[workers]\nselect = all, pid:1\n", "nprofd.conf:2: select: 'pid:1' is not a selector",
		"use all, unit:GLOB, cgroup:/PATH, exe:GLOB or user:NAME", "an unknown selector");
	refused("[workers]\nselect = unit:\n", "nprofd.conf:2: select: 'unit:' selects nothing",
		"unit:nginx.service", "an empty selector");
	refused("[workers]\nselect = cgroup:system.slice\n",
		"nprofd.conf:2: select: 'cgroup:system.slice' is not an absolute cgroup path", "",
		"a relative cgroup");
	refused("[workers]\nselect =\n", "nprofd.conf:2: select is empty", "select = all",
		"an empty select");
	refused("[service x]\nmatch = any\n", "nprofd.conf:2: match: 'any' is not a selector", "",
		"a service's match");

	/* listen */
	refused("listen = 9700\n", "nprofd.conf:1: listen = 9700 is not ADDR:PORT", "[::1]:9700",
		"listen without an address");
	refused("listen = localhost:9700\n", "nprofd.conf:1: listen = localhost:9700 is not ADDR:PORT",
		"", "listen with a host name");
	refused("listen = 127.0.0.1:0\n", "nprofd.conf:1: listen = 127.0.0.1:0 is not ADDR:PORT",
		"port 1 to 65535", "port 0");
	refused("listen = 127.0.0.1:65536\n", "nprofd.conf:1: listen = 127.0.0.1:65536 is not", "",
		"port 65536");
	refused("listen = ::1:9700\n", "nprofd.conf:1: listen = ::1:9700 is not ADDR:PORT", "",
		"IPv6 without brackets");
	refused("listen = [::1]9700\n", "nprofd.conf:1: listen = [::1]9700 is not", "", "no colon");
	refused("# public\nlisten = 0.0.0.0:9700\n",
		"nprofd.conf:2: listen = 0.0.0.0:9700 is not a loopback address and tls_cert is not set",
		"set tls_cert and tls_key", "off loopback without TLS");
	refused("listen = [::]:9700\ntls_cert = /c.pem\n",
		"nprofd.conf:1: listen = [::]:9700 is not a loopback address and tls_key is not set", "",
		"off loopback with half of TLS");
	refused("tls_key = /k.pem\n", "nprofd.conf:1: tls_key is set but tls_cert is not",
		"set both, or neither", "tls_key alone");
	CHECK(parse("listen = [::ffff:127.0.0.1]:1\n") == 0, "IPv4-mapped loopback is loopback");

	/* paths */
	refused("state_dir = var/lib/nprof\n",
		"nprofd.conf:1: state_dir = var/lib/nprof is not an absolute path", "from /",
		"a relative state_dir");
	refused("socket = \"\"\n", "nprofd.conf:1: socket is empty", "absolute path", "no socket");
	refused("tls_cert = cert.pem\n", "nprofd.conf:1: tls_cert = cert.pem is not an absolute path",
		"", "a relative tls_cert");
	refused("socket = /run/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock\n",
		"nprofd.conf:1: socket is 113 bytes, above the limit of 107 bytes", "shorter path",
		"a socket path sun_path cannot hold");

	/* commands */
	refused("[command x]\nrun = kill -%s %p\n",
		"nprofd.conf:2: run has an unknown placeholder '%s'", "%p (pid), %d (seconds), %o",
		"an unknown placeholder");
	refused("[command x]\nrun = echo 100%\n", "nprofd.conf:2: run has an unknown placeholder",
		"%% for a %", "a trailing %");
	refused("[command x]\nrun = \"\"\n", "nprofd.conf:2: run is empty", "run = ", "an empty run");
	refused("[command x]\nrun = echo %%o %p\noutput = file\n",
		"nprofd.conf:3: output = file but run has no %o", "output = stdout",
		"output = file without %o (%%o is a literal)");
	refused("[command x]\nrun = x\noutput = log\n", "nprofd.conf:3: output = log is not an output",
		"stdout or none", "an unknown output");
	refused("[command x]\nrun = x\ntimeout = 2h\n",
		"nprofd.conf:3: timeout = 2h is above the limit of 1h", "", "a command timeout");

	/* modes */
	refused("[instances]\nmodes = cpu, cpuu\n", "nprofd.conf:2: modes: unknown mode 'cpuu'; valid modes: cpu, itimer, wall",
		"branch-misses", "an unknown mode");

	/* a long value is cut in the message */
	memcpy(line, "max_body = ", 11);
	memset(line + 11, '9', 500);
	line[511] = 'q';
	line[512] = '\0';
	refused(line, "nprofd.conf:1: max_body = 9999", "...", "a long value is cut");
	CHECK_UINT(strlen(err), <, 300, "the message stays short");

	/* a small err buffer is cut, not overrun */
	{
		char small[12];

		config_defaults(&cfg);
		CHECK(config_parse(&cfg, "nprofd.conf", "x = 1", 5, small, sizeof(small)) == -EINVAL &&
			      !strcmp(small, "nprofd.conf"),
		      "a short err buffer gets a terminated prefix");
		CHECK(config_parse(&cfg, "nprofd.conf", "x = 1", 5, NULL, 0) == -EINVAL,
		      "no err buffer at all");
	}
	/* never reads past len */
	config_defaults(&cfg);
	CHECK(config_parse(&cfg, "f", "socket = /abc", 11, err, sizeof(err)) == 0 &&
		      !strcmp(cfg.socket_path, "/a"),
	      "only len bytes are read");
}

static void test_selectors(void)
{
	const struct service_config *s;

	CHECK(parse("[workers]\nselect = unit:web-*.service, cgroup:/system.slice/db.service,"
		    " exe:*/bin/redis-server, user:alice\n"
		    "[service web]\nmatch = unit:web-*.service\n"
		    "[service db]\nmatch = cgroup:/system.slice/db.service\n"
		    "[service redis]\nmatch = exe:/usr/*/redis-*\n"
		    "[service alice]\nmatch = user:alice\n"
		    "[service root-cg]\nmatch = cgroup:/\n") == 0,
	      "selectors parse");
	if (err[0])
		printf("#   %s\n", err);
	CHECK(config_selects(&cfg, "web-1.service", "/system.slice/web-1.service", "/usr/bin/web",
			     "www"),
	      "unit glob selects");
	CHECK(!config_selects(&cfg, "web.service", "/x", "/usr/bin/web", "www"),
	      "unit glob does not select web.service");
	CHECK(config_selects(&cfg, "", "/system.slice/db.service/worker", "/usr/bin/pg", "pg"),
	      "a cgroup below the prefix");
	CHECK(config_selects(&cfg, "", "/system.slice/db.service", "/usr/bin/pg", "pg"),
	      "the cgroup itself");
	CHECK(!config_selects(&cfg, "", "/system.slice/db.service2", "/usr/bin/pg", "pg"),
	      "a prefix only on a path component boundary");
	CHECK(config_selects(&cfg, "", "/user.slice", "/opt/bin/redis-server", "x"),
	      "exe glob");
	CHECK(config_selects(&cfg, NULL, NULL, NULL, "alice"), "user, NULL for the rest");
	CHECK(!config_selects(&cfg, NULL, NULL, NULL, "alicex"), "user is exact");
	CHECK(!config_selects(&cfg, "", "", "", ""), "nothing matches nothing");

	s = config_service_for(&cfg, "web-2.service", "/system.slice/web-2.service", "/x", "alice");
	CHECK(s && !strcmp(s->name, "web"), "the first service in file order");
	s = config_service_for(&cfg, "", "/system.slice/db.service/a", "/usr/bin/pg", "alice");
	CHECK(s && !strcmp(s->name, "db"), "service by cgroup");
	s = config_service_for(&cfg, "", "/user.slice", "/usr/local/redis-server", "bob");
	CHECK(s && !strcmp(s->name, "redis"), "service by exe");
	s = config_service_for(&cfg, "", "/user.slice", "/bin/sh", "alice");
	CHECK(s && !strcmp(s->name, "alice"), "service by user");
	s = config_service_for(&cfg, "", "/user.slice/x", "/bin/sh", "bob");
	CHECK(s && !strcmp(s->name, "root-cg"), "cgroup:/ takes every cgroup");
	s = config_service_for(&cfg, "", "", "/bin/sh", "bob");
	CHECK(s == NULL, "no service");

	config_defaults(&cfg);
	CHECK(config_selects(&cfg, "", "", "", "") && config_service_for(&cfg, "a", "/", "/", "u") == NULL,
	      "defaults: every process a worker, no service");

	/* What another user can meet with a process of their own. */
	CHECK(parse("[service a]\nmatch = unit:web.service\n[service b]\nmatch = exe:*/bin/q\n"
		    "[service c]\nmatch = exe:/opt/q/bin/q\n[service d]\nmatch = exe:/opt/q[12]\n"
		    "[service e]\nmatch = user:alice\n[service f]\nmatch = cgroup:/system.slice/q\n"
		    "[service g]\nmatch = exe:/opt/q\\?\n") == 0, "services for forgeability parse");
	CHECK(config_selector_forgeable(&cfg.services[0].match) &&
	      config_selector_forgeable(&cfg.services[1].match) &&
	      config_selector_forgeable(&cfg.services[3].match) &&
	      config_selector_forgeable(&cfg.services[6].match),
	      "forgeable: a unit name, exe: patterns (*, [, an escape)");
	CHECK(!config_selector_forgeable(&cfg.services[2].match) &&
	      !config_selector_forgeable(&cfg.services[4].match) &&
	      !config_selector_forgeable(&cfg.services[5].match),
	      "not forgeable: exe: one path, user:, cgroup:");
}

static void test_load(void)
{
	char path[] = "/tmp/daemon_config_test.XXXXXX";
	int fd = mkstemp(path);
	static const char text[] = "[instances]\nmax_concurrent = 4\n[actions]\ncore_file = on\n";
	FILE *f;

	CHECK(config_load(&cfg, NULL, err, sizeof(err)) == 0 && cfg.max_concurrent == 8,
	      "config_load(NULL): the defaults");
	CHECK(fd >= 0 && write(fd, text, sizeof(text) - 1) == (ssize_t)sizeof(text) - 1,
	      "a config file");
	close(fd);
	CHECK(config_load(&cfg, path, err, sizeof(err)) == 0 && cfg.max_concurrent == 4 &&
		      cfg.allow.action[ACTION_CORE_FILE] == 1 && cfg.max_connections == 256,
	      "config_load reads it over the defaults");

	f = fopen(path, "w");
	fputs("[instances]\nmax_concurrent = 999\n", f);
	fclose(f);
	config_defaults(&cfg);
	cfg.max_connections = 7;
	CHECK(config_load(&cfg, path, err, sizeof(err)) == -EINVAL && cfg.max_connections == 7,
	      "a bad file leaves the configuration as it was");
	CHECK(!strncmp(err, path, strlen(path)) &&
		      !strcmp(err + strlen(path), ":2: max_concurrent = 999 is above the limit of 256; "
						  "set at most 256"),
	      "its message names the file and line: %s", err);

	f = fopen(path, "w");
	for (int i = 0; i < (1 << 20) / 8 + 1; i++)
		fputs("# 45678\n", f);
	fclose(f);
	CHECK(config_load(&cfg, path, err, sizeof(err)) == -EFBIG && strstr(err, "1 MiB"),
	      "a file over 1 MiB: %s", err);
	f = fopen(path, "w");
	for (int i = 0; i < (1 << 20) / 8; i++)
		fputs("# 45678\n", f);
	fclose(f);
	CHECK(config_load(&cfg, path, err, sizeof(err)) == 0, "a file of exactly 1 MiB");
	unlink(path);
	CHECK(config_load(&cfg, path, err, sizeof(err)) == -ENOENT && strstr(err, "cannot open") &&
		      strstr(err, "--config"),
	      "a missing file: %s", err);
	CHECK(config_load(&cfg, "/", err, sizeof(err)) == -EISDIR, "a directory: %s", err);
}

/* [cluster]: etcd's URLs, the key it needs, the limits. */
static void test_cluster(void)
{
	CHECK_INT(parse(""), ==, 0, "no [cluster]: one host alone");
	CHECK(!cfg.etcd[0] && cfg.lease_ttl_ns == 10000000000ull && cfg.fanout == 16 &&
	      cfg.host_timeout_ns == 5000000000ull && cfg.signature_window_ns == 30000000000ull &&
	      cfg.etcd_timeout_ns == 3000000000ull && cfg.hosts_cache_ns == 1000000000ull,
	      "[cluster] defaults: no etcd, lease 10 s, fanout 16, host timeout 5 s, window 30 s, "
	      "etcd timeout 3 s, hosts kept 1 s");
	CHECK_INT(parse("[cluster]\netcd = http://127.0.0.1:2379,https://10.0.0.2:2379\n"
			"key_file = /etc/nprof/cluster.key\nname = db-1.east\nlease_ttl = 3s\n"
			"etcd_timeout = 900ms\nurl = https://db1:9443/\nhosts_cache = 0\n"), ==, 0,
		  "a full [cluster] is taken: %s", err);
	CHECK(cfg.hosts_cache_ns == 0, "hosts_cache = 0: the registry read on every request");
	CHECK_STR(cfg.etcd, "http://127.0.0.1:2379,https://10.0.0.2:2379", "etcd as written");
	CHECK_STR(cfg.cluster_name, "db-1.east", "name");
	CHECK(cfg.lease_ttl_ns == 3000000000ull, "lease_ttl = 3s");
	refused("[cluster]\netcd = http://127.0.0.1:2379\n", "nprofd.conf:2: [cluster] etcd is set "
		"but key_file is not", "head -c 32 /dev/urandom", "etcd without key_file");
	refused("[cluster]\netcd = 127.0.0.1:2379\nkey_file = /k\n", "nprofd.conf:2: etcd = ",
		"http://10.0.0.2:2379", "an etcd URL without its scheme");
	refused("[cluster]\netcd = http://a:1,,http://b:2\nkey_file = /k\n", "nprofd.conf:2: etcd",
		"write for example", "an empty URL in the list");
	refused("[cluster]\nname = a/b\n", "nprofd.conf:2: name = a/b is not a host name",
		"A-Z a-z 0-9", "a host name with a slash (it is part of the key in etcd)");
	refused("[cluster]\nlease_ttl = 1s\n", "nprofd.conf:2: lease_ttl = 1s is below the minimum",
		"set at least 2s", "a lease shorter than 2 s");
	refused("[cluster]\nfanout = 0\n", "nprofd.conf:2: fanout = 0 is below", "at least 1",
		"fanout 0");
	refused("[cluster]\netcd_user = nprof\n", "nprofd.conf:2: [cluster] etcd_user is set but "
		"etcd_password_file is not", "set both", "an etcd user without a password file");
	refused("[cluster]\netcd_cert = /c.pem\n", "nprofd.conf:2: [cluster] etcd_cert is set but "
		"etcd_key is not", "set both", "a client certificate without its key");
	refused("[cluster]\nhosts_cache = 2m\n", "nprofd.conf:2: hosts_cache = 2m is above",
		"1m", "the hosts kept longer than a minute");

	/* settings that cannot work together: the keepalive every lease_ttl / 3 */
	refused("[cluster]\nlease_ttl = 3s\n", "nprofd.conf:2: [cluster] etcd_timeout = 3s is "
		"not below a third of lease_ttl = 3s", "set etcd_timeout to at most 999ms, or "
		"lease_ttl to at least 10s", "lease_ttl 3 s with the default etcd_timeout (3 s)");
	refused("[cluster]\nlease_ttl = 12s\netcd_timeout = 4s\n", "nprofd.conf:3: [cluster] "
		"etcd_timeout = 4s is not below a third of lease_ttl = 12s", "at most 3999ms, or "
		"lease_ttl to at least 13s", "etcd_timeout exactly a third of lease_ttl");
	refused("[cluster]\netcd_timeout = 3334ms\n", "nprofd.conf:2: [cluster] etcd_timeout = "
		"3334ms is not below", "at most 3333ms", "etcd_timeout just above a third of 10 s");
	CHECK_INT(parse("[cluster]\netcd_timeout = 3333ms\n"), ==, 0,
		  "etcd_timeout 3333ms, just below a third of 10 s, is taken: %s", err);
	refused("[cluster]\nlease_ttl = 2500ms\netcd_timeout = 100ms\n", "nprofd.conf:2: "
		"[cluster] lease_ttl = 2500ms: etcd's leases are whole seconds", "write 2s",
		"a lease_ttl that is not whole seconds");
}


/* [schedule NAME]: the API's fields, each bad value refused at its own
 * line by the API's own check (schedule_spec_check). */
static void test_schedules(void)
{
	const struct schedule_config *sc;

	CHECK_INT(parse("[schedule web-cpu]\nservice = nginx*\nmodes = cpu, alloc\nduration = 10s\n"
			"every = 60s\nkeep = 2d\nbudget = 0.5%\n\n[schedule db]\n"
			"cgroup = /system.slice/db.service/\nmodes = wall\nevery = 5m\n"
			"[instances]\nduration_default = 20s\n[continuous]\ncpu_budget = 2%\n"),
		  ==, 0, "two schedules are taken: %s", err);
	CHECK_INT(cfg.n_schedules, ==, 2, "both kept, in file order");
	sc = &cfg.schedules[0];
	CHECK(!strcmp(sc->name, "web-cpu") && sc->spec.selector.kind == BY_SERVICE &&
	      !strcmp(sc->spec.selector.service, "nginx*") && !strcmp(sc->spec.modes, "cpu,alloc") &&
	      sc->spec.duration_ns == 10 * SEC && sc->spec.every_ns == 60 * SEC &&
	      sc->spec.keep_ns == 2 * 86400 * SEC && sc->spec.budget > 0.00499 &&
	      sc->spec.budget < 0.00501, "[schedule web-cpu]: each field as written");
	sc = &cfg.schedules[1];
	CHECK(sc->spec.selector.kind == BY_CONFIG && sc->spec.selector.config.kind == SELECT_CGROUP &&
	      !strcmp(sc->spec.selector.config.value, "/system.slice/db.service/") &&
	      sc->spec.duration_ns == 20 * SEC && sc->spec.keep_ns == 86400 * SEC &&
	      sc->spec.budget > 0.0199 && sc->spec.budget < 0.0201,
	      "[schedule db]: unset duration and budget follow duration_default and cpu_budget, "
	      "even when those come later in the file; keep 1d");
	CHECK_INT(parse("[schedule w]\nworkers = 12-345, 13-346\nmodes = cpu\nevery = 1m\n"), ==, 0,
		  "a workers list: %s", err);
	CHECK(cfg.schedules[0].spec.selector.kind == BY_WORKERS &&
	      cfg.schedules[0].spec.selector.n_workers == 2 &&
	      !strcmp(cfg.schedules[0].spec.selector.workers[1], "13-346"), "both workers, trimmed");

	/* each bad value names its own line, the section and the fix */
	refused("[schedule a]\nmodes = cpu\nevery = 1m\n", "nprofd.conf:1: [schedule a] a schedule "
		"needs a selector", "service, workers, container", "no selector: the header's line");
	refused("[schedule a]\nservice = x\nunit = y\nmodes = cpu\nevery = 1m\n", "nprofd.conf:3: "
		"unit: [schedule a] already has a selector (service)", "keep one", "two selectors");
	refused("[schedule a]\nservice = x\nevery = 1m\n", "nprofd.conf:1: [schedule a] modes must "
		"list", "cpu, alloc", "no modes: the header's line");
	refused("[schedule a]\nservice = x\nmodes = cpu, cpux\nevery = 1m\n", "nprofd.conf:3: modes: "
		"mode 'cpux' is not one nprof has", "use one of", "an unknown mode");
	refused("[schedule a]\nservice = x\nmodes = cpu,cpu\nevery = 1m\n", "nprofd.conf:3: modes: "
		"mode cpu is listed twice", "once", "a mode twice");
	refused("[instances]\nmodes = cpu\n[schedule a]\nservice = x\nmodes = wall\nevery = 1m\n",
		"nprofd.conf:5: [schedule a] mode wall is switched off by the operator",
		"[instances] modes", "a mode [instances] does not allow");
	refused("[schedule a]\nservice = x\nmodes = cpu\nduration = 10m\nevery = 1h\n",
		"nprofd.conf:4: [schedule a] duration must be a duration from 1s to 5m",
		"[instances] duration_max", "a duration above duration_max");
	refused("[schedule a]\nservice = x\nmodes = cpu\nduration = 20s\nevery = 10s\n",
		"nprofd.conf:5: [schedule a] every (the period) must be at least duration", "",
		"a period shorter than the recording");
	refused("[schedule a]\nservice = x\nmodes = cpu\n", "nprofd.conf:1: [schedule a] every is "
		"required", "60s", "no period: the header's line");
	refused("[schedule a]\nservice = x\nmodes = cpu\nevery = 2d\n", "nprofd.conf:4: every = 2d "
		"is above the limit of 24h", "set at most 24h", "a period above a day");
	refused("[schedule a]\nservice = x\nmodes = cpu\nevery = 1m\nkeep = 400d\n", "nprofd.conf:5: "
		"keep = 400d is above the limit of 366d", "set at most 366d", "keep above 366 days");
	refused("[schedule a]\nservice = x\nmodes = cpu\nevery = 1m\nbudget = 0%\n", "nprofd.conf:5: "
		"[schedule a] budget must be a share of one CPU above 0%", "0.5%", "budget 0%");
	refused("[schedule a]\nservice = x\nmodes = cpu\nevery = 1m\nbudget = 101%\n",
		"nprofd.conf:5: budget = 101% is not a share", "1%", "budget 101%");
	refused("[schedule a]\ncgroup = system.slice\nmodes = cpu\nevery = 1m\n", "nprofd.conf:2: "
		"selector: cgroup must be an absolute cgroup path", "/system.slice/",
		"a relative cgroup");
	refused("[schedule a]\nworkers = 1-2,,3-4\nmodes = cpu\nevery = 1m\n", "nprofd.conf:2: "
		"workers has an empty item", "remove the extra comma", "an empty worker id");
	refused("[schedule a]\nservice = x\nmodes = cpu\nevery = 1m\n[schedule a]\n",
		"nprofd.conf:5: [schedule a] appears twice", "rename one", "a schedule name twice");
	refused("[schedule a b]\n", "nprofd.conf:1: [schedule a b]: the name may hold only",
		"rename", "a schedule name with a blank");
	refused("[schedule a]\nmatch = all\n", "nprofd.conf:2: key 'match' is not one of "
		"[schedule a]'s; move it under [service NAME]", "", "a service's key in a schedule");
	refused("every = 1m\n", "nprofd.conf:1: key 'every' is not one of [top]'s; move it under "
		"[schedule NAME]", "", "a schedule's key at the top");
}

/* --- docs/nprofd.conf.5.md holds the table ----------------------------- */

#define MAX_KEYS 128

static struct config_key_doc rows[MAX_KEYS];
static size_t n_rows;
/* where each row was found: its section's table; a service's own (the
 * [actions] keys and modes); the synopsis */
static bool in_table[MAX_KEYS], in_service[MAX_KEYS], in_synopsis[MAX_KEYS];

/* The section a "## " heading of the page is about, or NULL: "Top",
 * "[workers]", "[service NAME]". */
static const char *section_of(const char *heading)
{
	static char name[64];

	if (!strcmp(heading, "Top"))
		return "top";
	if (heading[0] != '[' || sscanf(heading + 1, "%63[a-z]", name) != 1)
		return NULL;
	return name;
}

/* The row named name that section takes, or -1. */
static int row_in(const char *section, const char *name)
{
	for (size_t i = 0; i < n_rows; i++)
		if (!strcmp(rows[i].name, name) &&
		    (!strcmp(rows[i].section, section) ||
		     (rows[i].per_service && !strcmp(section, "service"))))
			return (int)i;
	return -1;
}

/* s without its backticks, in buf. */
static const char *unticked(const char *s, char *buf, size_t len)
{
	size_t n = 0;

	for (; *s && n + 1 < len; s++)
		if (*s != '`')
			buf[n++] = *s;
	buf[n] = '\0';
	return buf;
}

/* The limit cell of a number says "MIN to MAX", or "MIN to KEY" where
 * another key of the section bounds it (check_all holds it there); a
 * note in parentheses may follow MIN: "`0` (no limit) to `3650d`". */
static void check_bounds(const struct config_key_doc *r, const char *cell)
{
	char plain[1024], upper[64];
	const char *rest;
	bool ok;

	unticked(cell, plain, sizeof(plain));
	ok = !strncmp(plain, r->min, strlen(r->min));
	rest = plain + strlen(r->min);
	if (ok && !strncmp(rest, " (", 2))
		rest = strchr(rest, ')') ? strchr(rest, ')') + 1 : "";
	ok = ok && !strncmp(rest, " to ", 4);
	if (ok) {
		snprintf(upper, sizeof(upper), "%s", rest + 4);
		upper[strcspn(upper, " ,")] = '\0';
		ok = !strcmp(upper, r->max) ||
		     (strcmp(upper, r->name) && row_in(r->section, upper) >= 0);
	}
	CHECK(ok, "[%s] %s: the docs give its bounds, %s to %s", r->section, r->name, r->min,
	      r->max);
	if (!ok)
		printf("#   the docs say \"%s\"\n", cell);
}

/* One row of a section's table: its cells by the table's header. */
static void check_doc_row(const char *section, char **cells, size_t n_cells, int c_default,
			  int c_limit, int c_meaning)
{
	char all[EVENT_COUNT * 20], want[EVENT_COUNT * 20 + 2];

	for (const char *tick = strchr(cells[0], '`'); tick; tick = strchr(tick + 1, '`')) {
		const char *close = strchr(tick + 1, '`');
		char name[64];
		const struct config_key_doc *r;
		int i;

		if (!close || close - tick - 1 >= (long)sizeof(name))
			break;
		snprintf(name, sizeof(name), "%.*s", (int)(close - tick - 1), tick + 1);
		tick = close;
		i = row_in(section, name);
		CHECK(i >= 0, "[%s] %s, in the docs, is a key of the table", section, name);
		if (i < 0)
			continue;
		r = &rows[i];
		if (strcmp(r->section, section) != 0) {
			in_service[i] = true;	/* "as [actions]": its own section says the rest */
			continue;
		}
		in_table[i] = true;
		if (c_default < 0 || (size_t)c_default >= n_cells) {
			CHECK(0, "[%s]'s table has a default column", section);
			continue;
		}
		if (r->def && r->def[0]) {
			snprintf(want, sizeof(want), "`%s`", r->def);
			CHECK(!strncmp(cells[c_default], want, strlen(want)),
			      "[%s] %s: the docs give its default, %s", section, name, want);
		} else if (r->def) {
			CHECK(cells[c_default][0] != '`',
			      "[%s] %s: the docs say what no value means (\"%s\")", section, name,
			      cells[c_default]);
		} else if (!strcmp(name, "modes") && strcmp(section, "schedule")) {
			snprintf(want, sizeof(want), "`%s`",
				 event_names(EVENT_IN_ENGINE | EVENT_IN_AGENT, all, sizeof(all)));
			CHECK(strstr(cells[c_default], want) != NULL,
			      "[%s] modes: the docs list every event as its default, %s", section,
			      want);
		}
		if (r->min[0]) {
			if (c_limit >= 0 && (size_t)c_limit < n_cells)
				check_bounds(r, cells[c_limit]);
			else
				CHECK(0, "[%s]'s table has a limit column for %s", section, name);
		}
		CHECK(c_meaning >= 0 && (size_t)c_meaning < n_cells &&
			      !strncmp(cells[c_meaning], r->doc, strlen(r->doc)),
		      "[%s] %s: the docs' meaning starts \"%s\"", section, name, r->doc);
	}
}

/* A line of the synopsis, "key = value   # note", in section: a key of
 * a fixed section shows its default there. */
static void check_synopsis_line(const char *section, const char *line)
{
	char name[64], value[256];
	int i, n = 0;

	if (sscanf(line, "%63[a-z_] =%n", name, &n) != 1 || !n)
		return;
	i = row_in(section, name);
	CHECK(i >= 0, "synopsis: [%s] %s is a key of the table", section, name);
	if (i < 0 || strcmp(rows[i].section, section) != 0)
		return;
	in_synopsis[i] = true;
	if (!rows[i].def || !strcmp(section, "service") || !strcmp(section, "command"))
		return;
	snprintf(value, sizeof(value), "%s", line + n);
	value[strcspn(value, "#")] = '\0';
	for (size_t e = strlen(value); e > 0 && (value[e - 1] == ' ' || value[e - 1] == '\n'); e--)
		value[e - 1] = '\0';
	CHECK_STR(value + strspn(value, " "), rows[i].def, "synopsis: [%s] %s = its default",
		  section, name);
}

static void test_docs(void)
{
	const char *src = getenv("NPROF_SRC");
	char path[4096], line[4096], heading[256] = "";
	const char *section = NULL, *synopsis_section = "top";
	int c_default = -1, c_limit = -1, c_meaning = -1;
	bool in_code = false;
	FILE *f;

	while (n_rows < MAX_KEYS && config_key_doc(n_rows, &rows[n_rows]))
		n_rows++;
	CHECK(n_rows > 60 && n_rows < MAX_KEYS, "the table has its %zu keys", n_rows);
	for (size_t i = 0; i < n_rows; i++) {
		const struct config_key_doc *r = &rows[i];

		CHECK(r->name && r->section && r->doc && r->doc[0], "row %zu is filled", i);
		CHECK(row_in(r->section, r->name) == (int)i, "[%s] %s: once", r->section, r->name);
		/* a default is taken by its own key's parser */
		if (r->def && r->def[0] && strcmp(r->section, "service") && strcmp(r->section, "command") &&
		    strcmp(r->section, "schedule")) {
			char text[512];

			snprintf(text, sizeof(text), "[%s]\n%s = %s\n", r->section, r->name, r->def);
			CHECK(parse(text) == 0, "[%s] %s = %s, its default, parses: %s", r->section,
			      r->name, r->def, err);
			config_defaults(&before);
			CHECK(!memcmp(&cfg, &before, sizeof(cfg)),
			      "[%s] %s = %s is what config_defaults sets", r->section, r->name, r->def);
		}
	}

	snprintf(path, sizeof(path), "%s/docs/nprofd.conf.5.md", src ? src : ".");
	f = fopen(path, "r");
	CHECK(f != NULL, "reads %s", path);
	while (f && fgets(line, sizeof(line), f)) {
		char *cells[8], *save = NULL, *c;
		size_t n = 0;

		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "```", 3)) {
			in_code = !in_code;
			continue;
		}
		if (in_code && !strcmp(heading, "Synopsis")) {
			char name[64];

			if (sscanf(line, "[%63[a-z]", name) == 1)
				synopsis_section = section_of(line);
			else
				check_synopsis_line(synopsis_section, line);
			continue;
		}
		if (!strncmp(line, "## ", 3)) {
			snprintf(heading, sizeof(heading), "%.255s", line + 3);
			section = section_of(heading);
			continue;
		}
		if (!section || line[0] != '|')
			continue;
		for (c = strtok_r(line, "|", &save); c && n < 8; c = strtok_r(NULL, "|", &save)) {
			c += strspn(c, " ");
			for (char *e = c + strlen(c); e > c && e[-1] == ' '; e--)
				e[-1] = '\0';
			cells[n++] = c;
		}
		if (n && !strcmp(cells[0], "key")) {
			c_default = c_limit = c_meaning = -1;
			for (size_t i = 1; i < n; i++) {
				if (!strcmp(cells[i], "default"))
					c_default = (int)i;
				else if (!strcmp(cells[i], "limit"))
					c_limit = (int)i;
				else if (!strcmp(cells[i], "meaning"))
					c_meaning = (int)i;
			}
		} else if (n && cells[0][0] == '`') {
			check_doc_row(section, cells, n, c_default, c_limit, c_meaning);
		}
	}
	if (f)
		fclose(f);
	for (size_t i = 0; i < n_rows; i++) {
		CHECK(in_table[i], "[%s] %s has its row in the docs' [%s] table", rows[i].section,
		      rows[i].name, rows[i].section);
		CHECK(!rows[i].per_service || in_service[i],
		      "[%s] %s is in the docs' [service NAME] table too", rows[i].section,
		      rows[i].name);
		CHECK(in_synopsis[i], "[%s] %s is in the synopsis", rows[i].section, rows[i].name);
	}
}

int main(void)
{
	test_defaults();
	test_cluster();
	test_full();
	test_syntax();
	test_errors();
	test_selectors();
	test_schedules();
	test_load();
	test_docs();
	return test_done();
}
