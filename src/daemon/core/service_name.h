/* service_name: the one place that decides a worker's service, the name
 * its profiles, lists and selections go by. In order (docs/identity.md):
 *   config     the [service] section of nprofd.conf that selects it;
 *   otel       the OpenTelemetry process context it publishes —
 *              reserved, skipped: the format is still in development
 *              (docs/identity.md says why);
 *   unit       its systemd unit, unless that is its container's own
 *              scope or a login session's (session-N.scope);
 *   container  its container: the short id (12 digits), since a
 *              container's or pod's name is the runtime's or the API
 *              server's to know, not the cgroup's;
 *   exe        its executable's basename, else its name (comm).
 * Each is a label a process's owner can influence: nothing privileged
 * is decided on it (config's sections are, by their own matches). */
#ifndef NPROF_DAEMON_SERVICE_NAME_H
#define NPROF_DAEMON_SERVICE_NAME_H

#include "daemon/core/config.h"
#include "daemon/core/workers.h"

enum service_source {
	SERVICE_FROM_CONFIG,
	SERVICE_FROM_OTEL,	/* reserved: never given yet */
	SERVICE_FROM_UNIT,
	SERVICE_FROM_CONTAINER,
	SERVICE_FROM_EXE,
};

/* w's service (svc: the section selecting w, or NULL), pointing into w
 * or svc; where it came from into *ret_source when not NULL. */
const char *service_name(const struct worker *w, const struct service_config *svc,
			 enum service_source *ret_source);

/* "config", "otel", "unit", "container", "exe": service_source in the API. */
const char *service_source_name(enum service_source s);

#endif
