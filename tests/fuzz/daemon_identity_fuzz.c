/* daemon_identity_fuzz: any bytes as /proc/PID/cgroup (a process's
 * owner names the cgroups delegated to them): the parse ends, writes
 * nothing past its fields, and what it returns holds its promises — a
 * container id of 64 hex digits or none, a pod uid with a QoS class. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/identity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void holds(const struct identity *id)
{
	size_t n = strlen(id->container_id);

	if ((n && n != IDENTITY_ID_LEN) || strspn(id->container_id, "0123456789abcdef") != n)
		abort();
	if (!id->pod_uid[0] != !id->qos[0])
		abort();
	if (id->runtime[0] && !n)
		abort();
	if (strlen(id->unit) >= sizeof(id->unit) || strlen(id->slice) >= sizeof(id->slice))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct identity id;
	char cgroup[64], *path;

	/* exactly size bytes, no NUL after them: a read past is ASan's */
	identity_from_cgroup((const char *)data, size, cgroup, sizeof(cgroup), &id);
	if (strlen(cgroup) >= sizeof(cgroup))
		abort();
	holds(&id);
	path = malloc(size + 1);
	if (!path)
		return 0;
	memcpy(path, data, size);
	path[size] = '\0';
	identity_from_path(path, &id);
	holds(&id);
	free(path);
	return 0;
}
