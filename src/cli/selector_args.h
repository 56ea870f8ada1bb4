/* selector_args: the options that name the workers nprofd is to act on
 * at once — --service, --worker (again for each), --container, --pod,
 * --unit, --cgroup, --exe or --user, one kind at a time — and the API's
 * "selector" they make; for nprof schedule create and nprof start alike. */
#ifndef NPROF_CLI_SELECTOR_ARGS_H
#define NPROF_CLI_SELECTOR_ARGS_H

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Their getopt values: above every command's own long-only options. */
enum selector_opt {
	SELECTOR_OPT_SERVICE = 2000, SELECTOR_OPT_WORKER, SELECTOR_OPT_CONTAINER,
	SELECTOR_OPT_POD, SELECTOR_OPT_UNIT, SELECTOR_OPT_CGROUP, SELECTOR_OPT_EXE,
	SELECTOR_OPT_USER, SELECTOR_OPT_END
};

#define SELECTOR_ARGS_LONGOPTS                                                       \
	{ "service", required_argument, NULL, SELECTOR_OPT_SERVICE },                \
	{ "worker", required_argument, NULL, SELECTOR_OPT_WORKER },                  \
	{ "container", required_argument, NULL, SELECTOR_OPT_CONTAINER },            \
	{ "pod", required_argument, NULL, SELECTOR_OPT_POD },                        \
	{ "unit", required_argument, NULL, SELECTOR_OPT_UNIT },                      \
	{ "cgroup", required_argument, NULL, SELECTOR_OPT_CGROUP },                  \
	{ "exe", required_argument, NULL, SELECTOR_OPT_EXE },                        \
	{ "user", required_argument, NULL, SELECTOR_OPT_USER }

#define SELECTOR_WORKERS_MAX 64

struct selector_args {
	const char *key;		/* "service", "workers", "unit", ...; NULL: none given */
	const char *value;		/* its value (not for workers) */
	const char *workers[SELECTOR_WORKERS_MAX]; /* PIDs or worker ids */
	size_t n_workers;
};

/* Option c (one of enum selector_opt) with its value, for cmd:
 * EXIT_OK, or EXIT_USAGE after one line (two kinds, one twice). */
int selector_args_take(const char *cmd, struct selector_args *s, int c, const char *value);

/* "--service, --worker, --container, --pod, --unit, --cgroup, --exe or
 * --user", for a usage line. */
extern const char selector_args_names[];

/* The selector as the API takes it ({"service": GLOB}, {"workers": [ID,
 * ...]}: each PID looked up as its worker's id): EXIT_OK and *ret, or
 * EXIT_FAILED after one line. */
int selector_args_json(const char *cmd, const struct selector_args *s, json_t **ret);

#endif
