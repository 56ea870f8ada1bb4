/* selector_args: nprofd's selector from the command line
 * (selector_args.h). */
#include "cli/selector_args.h"

#include <string.h>

#include "cli/cli.h"
#include "cli/daemon_cmd.h"

const char selector_args_names[] = "--service, --worker, --container, --pod, --unit, --cgroup, "
				   "--exe or --user";

/* The option c's JSON key. */
static const char *key_of(int c)
{
	switch (c) {
	case SELECTOR_OPT_SERVICE: return "service";
	case SELECTOR_OPT_WORKER: return "workers";
	case SELECTOR_OPT_CONTAINER: return "container";
	case SELECTOR_OPT_POD: return "pod";
	case SELECTOR_OPT_UNIT: return "unit";
	case SELECTOR_OPT_CGROUP: return "cgroup";
	case SELECTOR_OPT_EXE: return "exe";
	case SELECTOR_OPT_USER: return "user";
	}
	return NULL;
}

int selector_args_take(const char *cmd, struct selector_args *s, int c, const char *value)
{
	const char *key = key_of(c);

	if (s->key && strcmp(s->key, key))
		return cli_usage_error(cmd, "one selector at a time: --%s and --%s", s->key, key);
	s->key = key;
	if (c != SELECTOR_OPT_WORKER) {
		if (s->value)
			return cli_usage_error(cmd, "--%s given twice", key);
		s->value = value;
		return EXIT_OK;
	}
	if (s->n_workers == SELECTOR_WORKERS_MAX)
		return cli_usage_error(cmd, "at most %d --worker", SELECTOR_WORKERS_MAX);
	s->workers[s->n_workers++] = value;
	return EXIT_OK;
}

int selector_args_json(const char *cmd, const struct selector_args *s, json_t **ret)
{
	json_t *sel = json_object(), *ids;
	char id[256];

	if (!sel) {
		cli_error("out of memory");
		return EXIT_FAILED;
	}
	if (!s->n_workers) {
		json_object_set_new(sel, s->key, json_string(s->value));
		*ret = sel;
		return EXIT_OK;
	}
	json_object_set_new(sel, "workers", ids = json_array());
	for (size_t i = 0; i < s->n_workers; i++) {
		int r = daemon_cmd_worker(cmd, s->workers[i], id, sizeof(id));

		if (r != EXIT_OK) {
			json_decref(sel);
			return r;
		}
		json_array_append_new(ids, json_string(id));
	}
	*ret = sel;
	return EXIT_OK;
}
