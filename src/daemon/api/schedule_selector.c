/* schedule_selector: a schedule's selector (schedule_selector.h). */
#include "daemon/api/schedule_selector.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "daemon/api/api.h"

/* The keys a selector may have, one at a time; the config's kinds by
 * their nprofd.conf names. */
static const struct {
	const char *key;
	enum selector_kind kind;
} CONFIG_KEYS[] = {
	{ "unit", SELECT_UNIT }, { "cgroup", SELECT_CGROUP }, { "exe", SELECT_EXE },
	{ "user", SELECT_USER },
};
#define CONFIG_KEY_COUNT (sizeof(CONFIG_KEYS) / sizeof(CONFIG_KEYS[0]))
#define KEYS_TEXT "service, workers, container, pod, unit, cgroup, exe or user"

static int fail(char *why, size_t len, const char *text)
{
	snprintf(why, len, "%s", text);
	return -EINVAL;
}

/* A text value of at most max - 1 bytes, not empty. */
static const char *text_of(json_t *v, size_t max)
{
	const char *s = json_is_string(v) ? json_string_value(v) : NULL;

	return s && s[0] && strlen(s) < max ? s : NULL;
}

static int parse_workers(json_t *v, struct schedule_selector *ret, char *why, size_t len)
{
	size_t i;
	json_t *id;

	if (!json_is_array(v) || !json_array_size(v) ||
	    json_array_size(v) > SELECTOR_WORKERS_MAX)
		return fail(why, len, "selector: workers must be a list of 1 to 64 worker ids "
			    "(GET /api/v1/workers)");
	json_array_foreach(v, i, id) {
		const char *s = text_of(id, WORKER_ID_MAX);

		if (!s)
			return fail(why, len, "selector: each of workers must be a worker id, "
				    "\"PID-STARTTIME\" (GET /api/v1/workers)");
		snprintf(ret->workers[i], sizeof(ret->workers[i]), "%s", s);
	}
	ret->kind = BY_WORKERS;
	ret->n_workers = json_array_size(v);
	return 0;
}

int schedule_selector_parse(json_t *j, struct schedule_selector *ret, char *why, size_t len)
{
	const char *key, *s;
	json_t *v;

	memset(ret, 0, sizeof(*ret));
	if (!json_is_object(j) || json_object_size(j) != 1)
		return fail(why, len, "selector must be an object with one of " KEYS_TEXT
			    ", such as {\"service\": \"nginx.service\"}");
	json_object_foreach(j, key, v) {
		if (!strcmp(key, "workers"))
			return parse_workers(v, ret, why, len);
		if (!(s = text_of(v, CONFIG_VALUE_MAX))) {
			snprintf(why, len, "selector: %.16s must be a non-empty string", key);
			return -EINVAL;
		}
		if (!strcmp(key, "service") || !strcmp(key, "container") || !strcmp(key, "pod")) {
			ret->kind = key[0] == 's' ? BY_SERVICE : key[0] == 'c' ? BY_CONTAINER : BY_POD;
			snprintf(ret->service, sizeof(ret->service), "%s", s);
			return 0;
		}
		for (size_t i = 0; i < CONFIG_KEY_COUNT; i++)
			if (!strcmp(key, CONFIG_KEYS[i].key)) {
				if (CONFIG_KEYS[i].kind == SELECT_CGROUP && s[0] != '/')
					return fail(why, len, "selector: cgroup must be an absolute "
						    "cgroup path, such as /system.slice/nginx.service");
				ret->kind = BY_CONFIG;
				ret->config.kind = CONFIG_KEYS[i].kind;
				snprintf(ret->config.value, sizeof(ret->config.value), "%s", s);
				return 0;
			}
		snprintf(why, len, "selector: unknown key '%.32s'; use " KEYS_TEXT, key);
	}
	return -EINVAL;
}

json_t *schedule_selector_json(const struct schedule_selector *s)
{
	json_t *ids;

	switch (s->kind) {
	case BY_SERVICE:
		return json_pack("{ss}", "service", s->service);
	case BY_CONTAINER:
		return json_pack("{ss}", "container", s->service);
	case BY_POD:
		return json_pack("{ss}", "pod", s->service);
	case BY_WORKERS:
		ids = json_array();
		for (size_t i = 0; i < s->n_workers; i++)
			json_array_append_new(ids, json_string(s->workers[i]));
		return json_pack("{so}", "workers", ids);
	case BY_CONFIG:
		for (size_t i = 0; i < CONFIG_KEY_COUNT; i++)
			if (CONFIG_KEYS[i].kind == s->config.kind)
				return json_pack("{ss}", CONFIG_KEYS[i].key, s->config.value);
	}
	return json_object();
}

bool schedule_selector_takes(const struct daemon *d, const struct schedule_selector *s,
			     const struct worker *w)
{
	switch (s->kind) {
	case BY_SERVICE:
		return fnmatch(s->service, api_service_name(d, w), 0) == 0;
	case BY_CONTAINER:
		return w->container_id[0] && !strncmp(w->container_id, s->service, strlen(s->service));
	case BY_POD:
		return w->pod_uid[0] && !strncmp(w->pod_uid, s->service, strlen(s->service));
	case BY_WORKERS:
		for (size_t i = 0; i < s->n_workers; i++)
			if (!strcmp(s->workers[i], w->id))
				return true;
		return false;
	case BY_CONFIG:
		return config_selector_matches(&s->config, w->unit, w->cgroup, w->exe, w->user);
	}
	return false;
}
