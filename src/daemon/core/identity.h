/* identity: what a process's cgroup says it is, without asking a
 * cluster API — the container (its full id and, where the path names
 * it, the runtime), the Kubernetes pod (its uid and QoS class), the
 * innermost systemd unit and slice. Pure: text in, names out, no I/O
 * (workers.c reads /proc/PID/cgroup; tests/fuzz/daemon_identity_fuzz.c
 * feeds it anything). The paths it knows, and why each rule, are in
 * docs/identity.md. Every name it returns is cut from the path itself,
 * so it is only a label: nothing privileged may be decided on it. */
#ifndef NPROF_DAEMON_IDENTITY_H
#define NPROF_DAEMON_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>

#define IDENTITY_ID_LEN 64	/* a container id: 64 lowercase hex digits */
#define IDENTITY_SHORT_ID 12	/* as docker and podman print it */
#define IDENTITY_UNIT_MAX 256
/* /proc/PID/cgroup is read up to this many bytes: a process in
 * hundreds of v1 hierarchies still fits; past it, lines are not seen. */
#define IDENTITY_TEXT_MAX 8192

struct identity {
	char container_id[IDENTITY_ID_LEN + 1];	/* "" when no container */
	char runtime[16];	/* docker, containerd, cri-o, podman; "" when the path does not say */
	/* The pod's uid as the API server writes it (8-4-4-4-12 with
	 * dashes; the systemd driver's underscores put back), or the 32
	 * hex digits of a static pod; "" outside a pod. */
	char pod_uid[40];
	char qos[16];		/* guaranteed, burstable, besteffort; "" outside a pod */
	char unit[IDENTITY_UNIT_MAX];	/* innermost .service, .scope or .socket; "" if none */
	char slice[IDENTITY_UNIT_MAX];	/* innermost .slice; "" if none */
};

/* What one cgroup path ("/kubepods/burstable/pod.../ID") says, into
 * *ret (every field "" that it does not say). path is NUL-terminated;
 * any bytes, any length: a segment too long for a field is not one. */
void identity_from_path(const char *path, struct identity *ret);

/* From /proc/PID/cgroup's text (len bytes, NUL-terminated or not; past
 * a NUL or IDENTITY_TEXT_MAX nothing is read): into cgroup (cgroup_len
 * bytes, NUL-terminated, cut to fit) the path nprofd shows as the
 * process's cgroup — the unified (v2) line "0::PATH", else v1's
 * name=systemd, else v1's cpu — and into *ret the identity of the first
 * of those, then v1's memory and the other v1 lines, whose path names a
 * container or a pod, else of the first naming a unit or a slice (on a
 * hybrid host the unified path is often "/" while v1's say it all). */
void identity_from_cgroup(const char *text, size_t len, char *cgroup, size_t cgroup_len,
			  struct identity *ret);

/* Whether the unit is a login session's scope (session-N.scope):
 * a person's shell, not a service. */
bool identity_unit_is_session(const char *unit);

#endif
