/* daemon_config_fuzz: nprofd.conf, the file an operator writes and the
 * daemon reads as root at start-up. The input is the file's bytes.
 *
 * A refusal is one printable line "fuzz.conf:LINE: cause; fix" and
 * leaves the configuration as it was; an accepted file stays within
 * every documented limit, with every string terminated; the questions
 * the daemon asks of it (which service, which worker, what is allowed)
 * answer for any worker. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEC 1000000000ull

/* ~300 KiB: off the stack, set up again on every input. */
static struct daemon_config cfg, before;

static void terminated(const char *s, size_t size)
{
	if (strnlen(s, size) == size)
		abort();
}

static void one_line(const char *err, size_t size)
{
	size_t n = strnlen(err, size);
	const char *semi;

	if (n == 0 || n == size || strncmp(err, "fuzz.conf:", 10) != 0)
		abort();
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)err[i] < 0x20 && err[i] != '\t') || err[i] == 0x7f)
			abort(); /* a message echoing a control character */
	semi = strstr(err, "; ");
	if (!semi && n < size - 1)
		abort(); /* no fix, and not cut by the buffer */
}

static void sane(const struct daemon_config *c)
{
	terminated(c->listen, sizeof(c->listen));
	terminated(c->socket_path, sizeof(c->socket_path));
	terminated(c->state_dir, sizeof(c->state_dir));
	terminated(c->tls_cert, sizeof(c->tls_cert));
	terminated(c->tls_key, sizeof(c->tls_key));
	terminated(c->admin_group, sizeof(c->admin_group));
	terminated(c->nprof_path, sizeof(c->nprof_path));
	terminated(c->proxy_user_header, sizeof(c->proxy_user_header));
	if (c->socket_path[0] != '/' || c->state_dir[0] != '/' || strlen(c->socket_path) > 107)
		abort();
	if (!c->tls_cert[0] != !c->tls_key[0])
		abort();
	if (c->n_admin_users > CONFIG_MAX_NAMES || c->n_trusted_proxies > CONFIG_MAX_NAMES ||
	    c->n_select < 1 || c->n_select > CONFIG_MAX_NAMES ||
	    c->n_services > CONFIG_MAX_SERVICES || c->n_commands > CONFIG_MAX_COMMANDS)
		abort();
	for (size_t i = 0; i < c->n_admin_users; i++)
		terminated(c->admin_users[i], CONFIG_NAME_MAX);
	for (size_t i = 0; i < c->n_trusted_proxies; i++)
		terminated(c->trusted_proxies[i], CONFIG_NAME_MAX);
	for (size_t i = 0; i < c->n_select; i++)
		terminated(c->select[i].value, sizeof(c->select[i].value));
	if (c->max_body < 1024 || c->max_body > 16 << 20 || c->max_connections < 1 ||
	    c->max_connections > 10000 || c->request_timeout_ns < SEC ||
	    c->request_timeout_ns > 600 * SEC)
		abort();
	if (c->duration_max_ns < SEC || c->duration_max_ns > 24 * 3600 * SEC ||
	    c->duration_default_ns < SEC || c->duration_default_ns > c->duration_max_ns ||
	    c->max_concurrent < 1 || c->max_concurrent > 256 || c->history_per_worker < 1 ||
	    c->history_per_worker > 10000 || c->grace_ns < SEC || c->grace_ns > 600 * SEC)
		abort();
	if (c->max_count < 1 || c->max_count > 1000000 ||
	    c->max_age_ns > 3650ull * 24 * 3600 * SEC || c->max_bytes < (1 << 20) ||
	    c->max_bytes > 1024ull << 40)
		abort();
	terminated(c->etcd, sizeof(c->etcd));
	terminated(c->cluster_name, sizeof(c->cluster_name));
	terminated(c->cluster_url, sizeof(c->cluster_url));
	terminated(c->cluster_key_file, sizeof(c->cluster_key_file));
	if ((c->etcd[0] && !c->cluster_key_file[0]) || *config_check_urls(c->etcd, true) ||
	    *config_check_urls(c->cluster_url, false) || strchr(c->cluster_name, '/') ||
	    c->lease_ttl_ns < 2 * SEC || c->lease_ttl_ns > 300 * SEC || c->fanout < 1 ||
	    c->fanout > 256 || c->max_hosts < 1 || c->max_hosts > 100000 ||
	    c->max_reply < 1024 || c->max_reply > 1ull << 30)
		abort();
	for (size_t i = 0; i < c->n_services; i++) {
		const struct service_config *s = &c->services[i];

		terminated(s->name, sizeof(s->name));
		terminated(s->restart, sizeof(s->restart));
		terminated(s->match.value, sizeof(s->match.value));
		if (!s->name[0])
			abort();
	}
	for (size_t i = 0; i < c->n_commands; i++) {
		const struct command_config *m = &c->commands[i];

		terminated(m->name, sizeof(m->name));
		terminated(m->run, sizeof(m->run));
		terminated(m->description, sizeof(m->description));
		if (!m->name[0] || !m->run[0] || m->timeout_ns < SEC || m->timeout_ns > 3600 * SEC ||
		    (m->keep_output && m->keep_stdout))
			abort();
	}
}

/* What the daemon asks for each worker, on a few workers. */
static void ask(const struct daemon_config *c)
{
	static const char *const workers[][4] = {
		{ "nginx.service", "/system.slice/nginx.service", "/usr/sbin/nginx", "www-data" },
		{ "", "/user.slice/user-1000.slice", "/home/a/bin/x", "a" },
		{ "", "", "", "" },
	};
	char key[CONFIG_NAME_MAX + 48];

	for (size_t w = 0; w < sizeof(workers) / sizeof(workers[0]); w++) {
		const char *const *p = workers[w];
		const struct service_config *s = config_service_for(c, p[0], p[1], p[2], p[3]);

		(void)config_selects(c, p[0], p[1], p[2], p[3]);
		for (int a = 0; a < ACTION_COUNT; a++) {
			key[0] = '\0';
			if (!config_action_allowed(c, s, a, key, sizeof(key)) && key[0] != '[')
				abort(); /* refused without naming the key */
		}
		for (int m = 0; m < EVENT_COUNT; m++) {
			key[0] = '\0';
			if (!config_mode_allowed(c, s, m, key, sizeof(key)) && key[0] != '[')
				abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	char *text;

	if (size > (1 << 20))
		return 0;
	/* an exact-size copy, so that ASan sees any read past len */
	text = malloc(size ? size : 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	config_defaults(&cfg);
	before = cfg;
	if (config_parse(&cfg, "fuzz.conf", text, size, err, sizeof(err)) < 0) {
		one_line(err, sizeof(err));
		if (memcmp(&cfg, &before, sizeof(cfg)) != 0)
			abort(); /* a refused file changed the configuration */
	} else {
		sane(&cfg);
		ask(&cfg);
	}
	free(text);
	return 0;
}
