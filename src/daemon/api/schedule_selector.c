/* schedule_selector: a schedule's selector (schedule_selector.h). */
#include "daemon/api/schedule_selector.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "daemon/api/api.h"

#define KEYS_TEXT SCHEDULE_SELECTOR_KEYS

static int fail(char *why, size_t len, const char *text)
{
	snprintf(why, len, "%s", text);
	return -EINVAL;
}

static int parse_workers(json_t *v, struct schedule_selector *ret, char *why, size_t len)
{
	size_t i;
	json_t *id;

	if (!json_is_array(v) || !json_array_size(v) ||
	    json_array_size(v) > SELECTOR_WORKERS_MAX)
		return fail(why, len, "selector: workers must be a list of 1 to 64 worker ids "
			    "(GET /api/v1/workers)");
	json_array_foreach(v, i, id)
		if (schedule_selector_add_worker(ret, json_is_string(id) ? json_string_value(id) : "",
						 why, len) < 0)
			return -EINVAL;
	return 0;
}

int schedule_selector_parse(json_t *j, struct schedule_selector *ret, char *why, size_t len)
{
	const char *key;
	json_t *v;

	memset(ret, 0, sizeof(*ret));
	if (!json_is_object(j) || json_object_size(j) != 1)
		return fail(why, len, "selector must be an object with one of " KEYS_TEXT
			    ", such as {\"service\": \"nginx.service\"}");
	json_object_foreach(j, key, v) {
		if (!strcmp(key, "workers"))
			return parse_workers(v, ret, why, len);
		return schedule_selector_set(ret, key, json_is_string(v) ? json_string_value(v) : "",
					     why, len);
	}
	return -EINVAL;
}

json_t *schedule_selector_json(const struct schedule_selector *s)
{
	json_t *ids;

	if (s->kind == BY_NONE)
		return json_object();
	if (s->kind != BY_WORKERS)
		return json_pack("{ss}", schedule_selector_kind_key(s),
				 s->kind == BY_CONFIG ? s->config.value : s->service);
	ids = json_array();
	for (size_t i = 0; i < s->n_workers; i++)
		json_array_append_new(ids, json_string(s->workers[i]));
	return json_pack("{so}", "workers", ids);
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
	case BY_NONE:
		break;
	}
	return false;
}
