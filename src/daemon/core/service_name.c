#include "daemon/core/service_name.h"

#include <string.h>

#include "daemon/core/identity.h"

const char *service_name(const struct worker *w, const struct service_config *svc,
			 enum service_source *ret_source)
{
	enum service_source src;
	const char *name, *slash;

	if (svc) {
		src = SERVICE_FROM_CONFIG;
		name = svc->name;
	} else if (w->unit[0] && !identity_unit_is_session(w->unit) &&
		   !(w->container_id[0] && strstr(w->unit, w->container_id))) {
		/* docker-ID.scope is the container's; nginx.service inside a
		 * container that runs systemd is a service of its own. */
		src = SERVICE_FROM_UNIT;
		name = w->unit;
	} else if (w->container[0]) {
		src = SERVICE_FROM_CONTAINER;
		name = w->container;
	} else {
		src = SERVICE_FROM_EXE;
		slash = strrchr(w->exe, '/');
		name = slash && slash[1] ? slash + 1 : w->name;
	}
	if (ret_source)
		*ret_source = src;
	return name;
}

const char *service_source_name(enum service_source s)
{
	static const char *const names[] = {
		[SERVICE_FROM_CONFIG] = "config",
		[SERVICE_FROM_OTEL] = "otel",
		[SERVICE_FROM_UNIT] = "unit",
		[SERVICE_FROM_CONTAINER] = "container",
		[SERVICE_FROM_EXE] = "exe",
	};

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "exe";
}
