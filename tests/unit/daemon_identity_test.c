/* identity: what cgroup paths say a process is, on the paths of docker,
 * containerd, CRI-O and podman, Kubernetes pods under both cgroup
 * drivers, systemd units, slices and user sessions; which line of
 * /proc/PID/cgroup is read on v1, v2 and hybrid hosts; and hostile text
 * (long, cut, NUL bytes, look-alikes), which must never overflow. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/identity.h"
#include "test.h"

#define ID "3f4b1c2d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f809"
#define UID "7c8d2f1e-3a4b-4c5d-9e6f-0a1b2c3d4e5f"
#define UID_ "7c8d2f1e_3a4b_4c5d_9e6f_0a1b2c3d4e5f"

struct want {
	const char *path, *id, *runtime, *pod, *qos, *unit, *slice;
};

static void check_path(const struct want *t)
{
	struct identity id;

	identity_from_path(t->path, &id);
	CHECK(!strcmp(id.container_id, t->id) && !strcmp(id.runtime, t->runtime) &&
	      !strcmp(id.pod_uid, t->pod) && !strcmp(id.qos, t->qos) &&
	      !strcmp(id.unit, t->unit) && !strcmp(id.slice, t->slice), "%s", t->path);
	if (strcmp(id.container_id, t->id) || strcmp(id.runtime, t->runtime) ||
	    strcmp(id.pod_uid, t->pod) || strcmp(id.qos, t->qos) || strcmp(id.unit, t->unit) ||
	    strcmp(id.slice, t->slice))
		printf("#   got id '%s' runtime '%s' pod '%s' qos '%s' unit '%s' slice '%s'\n",
		       id.container_id, id.runtime, id.pod_uid, id.qos, id.unit, id.slice);
}

static void test_paths(void)
{
	static const struct want t[] = {
		/* Kubernetes, cgroupfs driver: the runtime is not in the path. */
		{ "/kubepods/burstable/pod" UID "/" ID, ID, "", UID, "burstable", "", "" },
		{ "/kubepods/besteffort/pod" UID "/" ID, ID, "", UID, "besteffort", "", "" },
		{ "/kubepods/pod" UID "/" ID, ID, "", UID, "guaranteed", "", "" },
		{ "/kubepods/burstable/pod" UID, "", "", UID, "burstable", "", "" },
		/* a static pod: the uid is its manifest's hash */
		{ "/kubepods/burstable/pod0123456789abcdef0123456789abcdef/" ID, ID, "",
		  "0123456789abcdef0123456789abcdef", "burstable", "", "" },
		/* Kubernetes, systemd driver. */
		{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
		  ".slice/cri-containerd-" ID ".scope", ID, "containerd", UID, "burstable",
		  "cri-containerd-" ID ".scope", "kubepods-burstable-pod" UID_ ".slice" },
		{ "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
		  ".slice/crio-" ID ".scope", ID, "cri-o", UID, "besteffort", "crio-" ID ".scope",
		  "kubepods-besteffort-pod" UID_ ".slice" },
		{ "/kubepods.slice/kubepods-pod" UID_ ".slice/docker-" ID ".scope", ID, "docker",
		  UID, "guaranteed", "docker-" ID ".scope", "kubepods-pod" UID_ ".slice" },
		{ "/kubepods.slice/kubepods-pod" UID_ ".slice/crio-conmon-" ID ".scope", ID, "cri-o",
		  UID, "guaranteed", "crio-conmon-" ID ".scope", "kubepods-pod" UID_ ".slice" },
		/* kind: kubelet's own slice above the pods */
		{ "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/"
		  "kubelet-kubepods-burstable-pod" UID_ ".slice/cri-containerd-" ID ".scope", ID,
		  "containerd", UID, "burstable", "cri-containerd-" ID ".scope",
		  "kubelet-kubepods-burstable-pod" UID_ ".slice" },
		/* containerd under a v1 systemd driver: slice:runtime:id */
		{ "/system.slice/containerd.service/kubepods-besteffort-pod" UID_
		  ".slice:cri-containerd:" ID, ID, "containerd", UID, "besteffort",
		  "containerd.service", "system.slice" },
		/* Docker, podman, plain containerd. */
		{ "/docker/" ID, ID, "docker", "", "", "", "" },
		{ "/system.slice/docker-" ID ".scope", ID, "docker", "", "", "docker-" ID ".scope",
		  "system.slice" },
		{ "/machine.slice/libpod-" ID ".scope", ID, "podman", "", "", "libpod-" ID ".scope",
		  "machine.slice" },
		{ "/machine.slice/libpod-" ID ".scope/container", ID, "podman", "", "",
		  "libpod-" ID ".scope", "machine.slice" },
		{ "/machine.slice/libpod-conmon-" ID ".scope", ID, "podman", "", "",
		  "libpod-conmon-" ID ".scope", "machine.slice" },
		{ "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope",
		  ID, "podman", "", "", "libpod-" ID ".scope", "user.slice" },
		{ "/libpod_parent/libpod-" ID, ID, "podman", "", "", "", "" },
		{ "/libpod_parent/" ID, ID, "podman", "", "", "", "" },
		{ "/default/" ID, ID, "", "", "", "", "" },
		{ "/ecs/0123456789abcdef0123456789abcdef/" ID, ID, "", "", "", "", "" },
		/* systemd units and sessions */
		{ "/system.slice/nginx.service", "", "", "", "", "nginx.service", "system.slice" },
		{ "/system.slice/system-getty.slice/getty@tty1.service", "", "", "", "",
		  "getty@tty1.service", "system-getty.slice" },
		{ "/user.slice/user-1000.slice/session-3.scope", "", "", "", "", "session-3.scope",
		  "user-1000.slice" },
		{ "/user.slice/user-1000.slice/user@1000.service/app.slice/app-foo.scope", "", "",
		  "", "", "app-foo.scope", "app.slice" },
		{ "/init.scope", "", "", "", "", "init.scope", "" },
		{ "/system.slice/dbus.socket", "", "", "", "", "dbus.socket", "system.slice" },
		{ "/", "", "", "", "", "", "" },
		{ "", "", "", "", "", "", "" },
		/* look-alikes: none is a container or a pod */
		{ "/docker/" ID "0", "", "", "", "", "", "" },
		{ "/docker/x" ID, "", "", "", "", "", "" },
		{ "/docker/3F4B1C2D5E6F708192A3B4C5D6E7F8091A2B3C4D5E6F708192A3B4C5D6E7F809", "",
		  "", "", "", "", "" },
		{ "/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde", "", "",
		  "", "", "", "" },
		{ "/pod" UID "/" ID, ID, "", "", "", "", "" },
		{ "/kubepods/other/pod" UID "/" ID, ID, "", "", "", "", "" },
		{ "/kubepods/burstable/pod" UID "x/" ID, ID, "", "", "", "", "" },
		{ "/kubepods/burstable/pod7c8d2f1e-3a4b-4c5d-9e6f_0a1b2c3d4e5g", "", "", "", "", "",
		  "" },
		{ "/kubepods.slice/other-pod" UID_ ".slice", "", "", "", "", "",
		  "other-pod" UID_ ".slice" },
		{ "/kubepods.slice/kubepods-pod.slice", "", "", "", "", "", "kubepods-pod.slice" },
		{ "/kubepods.slice/-pod" UID_ ".slice", "", "", "", "", "", "-pod" UID_ ".slice" },
		{ "/x/.scope/.service/.slice", "", "", "", "", "", "" },
		{ "/system.slice/fake-docker-" ID ".scope", ID, "", "", "", "fake-docker-" ID ".scope",
		  "system.slice" },
		{ "//system.slice///a.service//", "", "", "", "", "a.service", "system.slice" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		check_path(&t[i]);
}

static void check_text(const char *text, const char *cgroup, const char *id, const char *unit,
		       const char *pod, const char *what)
{
	struct identity r;
	char cg[512];

	identity_from_cgroup(text, strlen(text), cg, sizeof(cg), &r);
	CHECK(!strcmp(cg, cgroup) && !strcmp(r.container_id, id) && !strcmp(r.unit, unit) &&
	      !strcmp(r.pod_uid, pod), "%s", what);
	if (strcmp(cg, cgroup) || strcmp(r.container_id, id) || strcmp(r.unit, unit) ||
	    strcmp(r.pod_uid, pod))
		printf("#   got cgroup '%s' id '%s' unit '%s' pod '%s'\n", cg, r.container_id, r.unit,
		       r.pod_uid);
}

static void test_lines(void)
{
	check_text("0::/system.slice/nginx.service\n", "/system.slice/nginx.service", "",
		   "nginx.service", "", "v2 alone");
	check_text("12:cpu,cpuacct:/cpu-differs\n1:name=systemd:/system.slice/redis.service\n",
		   "/system.slice/redis.service", "", "redis.service", "",
		   "v1: name=systemd before cpu");
	check_text("4:cpu,cpuacct:/docker/" ID "\n3:memory:/docker/" ID "\n", "/docker/" ID, ID, "",
		   "", "v1 cpu only");
	check_text("11:memory:/kubepods/pod" UID "/" ID "\n", "", ID, "", UID,
		   "memory alone: shown cgroup empty, identity read");
	/* A hybrid host: v2 at "/", v1 says it all (docker's cgroupfs driver). */
	check_text("9:name=systemd:/\n4:memory:/docker/" ID "\n1:cpu:/docker/" ID "\n0::/\n", "/",
		   ID, "", "", "hybrid: v2 is '/', the container from v1");
	check_text("9:name=systemd:/system.slice/a.service\n1:cpu:/\n0::/\n", "/", "", "a.service",
		   "", "hybrid: v2 is '/', the unit from name=systemd");
	/* the sandbox this was written in: memory's id is 32 digits, no container */
	check_text("9:name=systemd:/\n4:memory:/process_api/e19540564f3b2458d02fd32e25454f93\n"
		   "1:cpu:/\n0::/\n", "/", "", "", "", "32 hex digits are no container");
	check_text("1:name=systemd:/system.slice/containerd.service\n0::/kubepods/besteffort/pod"
		   UID "/" ID "\n", "/kubepods/besteffort/pod" UID "/" ID, ID, "", UID,
		   "a container anywhere beats a unit");
	check_text("0::/system.slice/x.service\n3:cpu:/kubepods/pod" UID "/" ID "\n",
		   "/system.slice/x.service", ID, "", UID, "a pod in v1 over a unit in v2");
	check_text("0::/a.service", "/a.service", "", "a.service", "", "no final newline");
	check_text("", "", "", "", "", "empty");
	check_text("garbage\n::\n:::\n0:\n", "", "", "", "", "malformed lines");
	check_text("5::/x.service\n", "", "", "x.service", "",
		   "hierarchy 5 with no controller is not v2");
	check_text("0::/a.service\n0::/b.service\n", "/a.service", "", "a.service", "",
		   "two v2 lines: the first");
}

static void test_hostile(void)
{
	struct identity r;
	char *big, cg[512], small[8];
	size_t n = 1 << 20;

	/* a megabyte of slashes and segments: bounded, no overflow */
	big = malloc(n + 1);
	for (size_t i = 0; i < n; i++)
		big[i] = i % 7 == 0 ? '/' : 'a' + (char)(i % 26);
	big[n] = '\0';
	identity_from_path(big, &r);
	CHECK(!r.unit[0] && !r.container_id[0], "a megabyte path");
	/* one segment too long for the unit field: not cut to a name */
	memset(big, 'a', 600);
	memcpy(big + 600, ".service", 9);
	identity_from_path(big, &r);
	CHECK(!r.unit[0], "a unit longer than its field is left out, not cut");
	memcpy(big, "0::/", 4);
	identity_from_cgroup(big, strlen(big), cg, sizeof(cg), &r);
	CHECK(strlen(cg) == sizeof(cg) - 1, "a long cgroup path is cut to its field");
	identity_from_cgroup("0::/a.service\n", 14, small, sizeof(small), &r);
	CHECK_STR(small, "/a.serv", "a small cgroup buffer gets what fits");
	/* more than IDENTITY_TEXT_MAX: the lines past it are not seen */
	for (size_t i = 0; i < n; i++)
		big[i] = i % 16 == 15 ? '\n' : 'x';
	memcpy(big + n - 100, "\n0::/docker/" ID "\n", strlen("\n0::/docker/" ID "\n"));
	identity_from_cgroup(big, n, cg, sizeof(cg), &r);
	CHECK(!r.container_id[0], "lines past the first %d bytes are not read", IDENTITY_TEXT_MAX);
	/* a NUL ends the text; len ends it without one */
	identity_from_cgroup("0::/a.service\0\n0::/docker/" ID "\n", 90, cg, sizeof(cg), &r);
	CHECK(!strcmp(cg, "/a.service") && !r.container_id[0], "a NUL ends the text");
	identity_from_cgroup("0::/b.service0::/x", 13, cg, sizeof(cg), &r);
	CHECK_STR(cg, "/b.service", "len ends the text");
	/* control and non-UTF-8 bytes in names read as '?' */
	identity_from_path("/system.slice/a\x01\xff.service", &r);
	CHECK_STR(r.unit, "a??.service", "control and invalid bytes cleaned");
	/* many lines: no more than LINES_MAX looked at, and nothing breaks */
	{
		char *t = big;

		for (int i = 0; i < 500; i++)
			t += sprintf(t, "%d:c%d:/\n", i + 1, i);
		sprintf(t, "0::/docker/" ID "\n");
		identity_from_cgroup(big, strlen(big), cg, sizeof(cg), &r);
		CHECK(strcmp(cg, "/docker/" ID) != 0, "only the first lines are read");
	}
	free(big);
	CHECK(identity_unit_is_session("session-3.scope") && identity_unit_is_session("session-c12.scope") &&
	      !identity_unit_is_session("session-.scope") && !identity_unit_is_session("session-3x.scope") &&
	      !identity_unit_is_session("session-3.service") && !identity_unit_is_session("a.scope"),
	      "session scopes");
}

int main(void)
{
	test_paths();
	test_lines();
	test_hostile();
	return test_done();
}
