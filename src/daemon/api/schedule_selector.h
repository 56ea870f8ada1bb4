/* schedule_selector: which workers a schedule records — one of a
 * service (glob, as GET /api/v1/workers?service= matches), a list of
 * worker ids, a container or a Kubernetes pod (the start of its id, as
 * ?container= and ?pod= match), or one of nprofd.conf's selectors (a
 * unit, a cgroup, an executable, a user). It decides nothing about who may be recorded: a
 * schedule acts as its user, who sees only their own workers (an admin,
 * every worker). */
#ifndef NPROF_DAEMON_SCHEDULE_SELECTOR_H
#define NPROF_DAEMON_SCHEDULE_SELECTOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "daemon/core/daemon.h"
#include "daemon/core/schedule_spec.h"

/* j as a selector (struct schedule_selector: core/schedule_spec.h, whose
 * setters check each value): 0, or -EINVAL with one line in why naming
 * what is wrong and what to write instead. */
int schedule_selector_parse(json_t *j, struct schedule_selector *ret, char *why, size_t len);

/* The selector as the API shows it and the index keeps it. */
json_t *schedule_selector_json(const struct schedule_selector *s);

/* Whether it selects w. */
bool schedule_selector_takes(const struct daemon *d, const struct schedule_selector *s,
			     const struct worker *w);

#endif
