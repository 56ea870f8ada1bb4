#include "daemon/core/identity.h"

#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "base/utf8.h"

/* One segment of a cgroup path, not NUL-terminated. */
struct seg {
	const char *s;
	size_t n;
};

/* Lines of /proc/PID/cgroup looked at: a process is in one hierarchy
 * per v1 mount (a dozen on a host), so this many is never short. */
#define LINES_MAX 64

static bool seg_is(struct seg g, const char *word)
{
	return g.n == strlen(word) && !memcmp(g.s, word, g.n);
}

static bool starts_with(struct seg g, const char *prefix)
{
	size_t m = strlen(prefix);

	return g.n >= m && !memcmp(g.s, prefix, m);
}

/* Longer than the suffix: ".scope" alone names no unit. */
static bool ends_with(struct seg g, const char *suffix)
{
	size_t m = strlen(suffix);

	return g.n > m && !memcmp(g.s + g.n - m, suffix, m);
}

/* Where needle last occurs in g, or -1. */
static ssize_t seg_rfind(struct seg g, const char *needle)
{
	size_t m = strlen(needle);

	for (size_t i = g.n >= m ? g.n - m + 1 : 0; i-- > 0;)
		if (!memcmp(g.s + i, needle, m))
			return (ssize_t)i;
	return -1;
}

static void seg_copy(struct seg g, char *out, size_t len)
{
	if (g.n >= len)
		return; /* a name cut short would name something else */
	memcpy(out, g.s, g.n);
	out[g.n] = '\0';
	utf8_clean(out);
}

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* A pod uid: a UUID the API server made (8-4-4-4-12; the systemd
 * driver writes '_' for '-', since '-' nests slices), or the 32 hex
 * digits of a static pod's (the hash of its manifest). Into out
 * (sizeof(identity.pod_uid)), with dashes. */
static bool pod_uid(const char *s, size_t n, char out[40])
{
	if (n == 32 && is_hex(s, n)) {
		memcpy(out, s, n);
		out[n] = '\0';
		return true;
	}
	if (n != 36)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' && s[i] != '_' : !is_hex(s + i, 1))
			return false;
	}
	for (size_t i = 0; i < n; i++)
		out[i] = s[i] == '_' ? '-' : s[i];
	out[n] = '\0';
	return true;
}

/* The QoS class a systemd driver's slice name says before "-pod":
 * kubepods (guaranteed) or kubepods-burstable, kubepods-besteffort, each
 * maybe under kubelet's own prefix (kind: kubelet-kubepods-...). */
static const char *qos_of_slice(struct seg head)
{
	static const struct { const char *name, *qos; } classes[] = {
		{ "kubepods", "guaranteed" },
		{ "kubepods-burstable", "burstable" },
		{ "kubepods-besteffort", "besteffort" },
	};

	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		size_t m = strlen(classes[i].name);

		if (seg_is(head, classes[i].name) ||
		    (head.n > m && head.s[head.n - m - 1] == '-' &&
		     !memcmp(head.s + head.n - m, classes[i].name, m)))
			return classes[i].qos;
	}
	return NULL;
}

/* The pod segment g (its parents p1, the nearer, and p2) names, into
 * ret's pod_uid and qos:
 *   cgroupfs: .../kubepods/pod<uid> (guaranteed),
 *             .../kubepods/{burstable,besteffort}/pod<uid>;
 *   systemd:  kubepods-pod<uid>.slice (guaranteed),
 *             kubepods-{burstable,besteffort}-pod<uid>.slice.
 * The systemd form may go on ":cri-containerd:ID" (containerd's paths
 * under a v1 systemd driver): only what is before the first ':' is the
 * slice. */
static void pod_from(struct seg g, struct seg p1, struct seg p2, struct identity *ret)
{
	const char *colon = memchr(g.s, ':', g.n), *q = NULL;
	struct seg slice = { g.s, colon ? (size_t)(colon - g.s) : g.n };
	char uid[40];
	ssize_t at;

	if (starts_with(g, "pod") && !colon) {
		if (seg_is(p1, "kubepods"))
			q = "guaranteed";
		else if ((seg_is(p1, "burstable") || seg_is(p1, "besteffort")) &&
			 seg_is(p2, "kubepods"))
			q = seg_is(p1, "burstable") ? "burstable" : "besteffort";
		if (q && pod_uid(g.s + 3, g.n - 3, uid))
			goto found;
		return;
	}
	if (!ends_with(slice, ".slice"))
		return;
	slice.n -= strlen(".slice");
	at = seg_rfind(slice, "-pod");
	if (at <= 0 || !pod_uid(slice.s + at + 4, slice.n - (size_t)at - 4, uid))
		return;
	q = qos_of_slice((struct seg){ slice.s, (size_t)at });
	if (!q)
		return;
found:
	memcpy(ret->pod_uid, uid, sizeof(uid));
	snprintf(ret->qos, sizeof(ret->qos), "%s", q);
}

/* The runtime a container's segment names by its prefix (what is
 * before the id, ".scope" gone), else by its parent's name. */
static const char *runtime_of(struct seg prefix, struct seg parent)
{
	static const struct { const char *prefix, *runtime; } known[] = {
		{ "docker-", "docker" },
		{ "cri-containerd-", "containerd" },
		{ ":cri-containerd:", "containerd" },
		{ "crio-conmon-", "cri-o" }, /* conmon, the container's monitor */
		{ "crio-", "cri-o" },
		{ "libpod-conmon-", "podman" },
		{ "libpod-", "podman" },
	};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		size_t m = strlen(known[i].prefix);

		/* "docker-ID" whole, or "...slice:cri-containerd:ID" at the end */
		if (prefix.n >= m && !memcmp(prefix.s + prefix.n - m, known[i].prefix, m) &&
		    (prefix.n == m || known[i].prefix[0] == ':'))
			return known[i].runtime;
	}
	if (!prefix.n && seg_is(parent, "docker"))
		return "docker"; /* docker's cgroupfs driver: /docker/ID */
	if (!prefix.n && seg_is(parent, "libpod_parent"))
		return "podman";
	return "";
}

/* The container id segment g ends with: 64 hex digits, alone or after
 * a '-' or a ':' (docker-ID.scope, cri-containerd-ID.scope, crio-ID,
 * libpod-ID, ...slice:cri-containerd:ID). */
static void container_from(struct seg g, struct seg parent, struct identity *ret)
{
	struct seg id = g, prefix;

	if (ends_with(id, ".scope"))
		id.n -= strlen(".scope");
	if (id.n < IDENTITY_ID_LEN)
		return;
	prefix = (struct seg){ id.s, id.n - IDENTITY_ID_LEN };
	id.s += prefix.n;
	id.n = IDENTITY_ID_LEN;
	if (!is_hex(id.s, id.n) ||
	    (prefix.n && prefix.s[prefix.n - 1] != '-' && prefix.s[prefix.n - 1] != ':'))
		return;
	memcpy(ret->container_id, id.s, id.n);
	ret->container_id[id.n] = '\0';
	snprintf(ret->runtime, sizeof(ret->runtime), "%s", runtime_of(prefix, parent));
}

void identity_from_path(const char *path, struct identity *ret)
{
	static const char *const unit_ends[] = { ".service", ".scope", ".socket" };
	struct seg p1 = { "", 0 }, p2 = { "", 0 };
	const char *p = path;

	memset(ret, 0, sizeof(*ret));
	while (*p) {
		struct seg g;

		while (*p == '/')
			p++;
		g.s = p;
		while (*p && *p != '/')
			p++;
		g.n = (size_t)(p - g.s);
		if (!g.n)
			continue;
		/* Innermost wins: each later segment overwrites. */
		for (size_t i = 0; i < sizeof(unit_ends) / sizeof(unit_ends[0]); i++)
			if (ends_with(g, unit_ends[i]))
				seg_copy(g, ret->unit, sizeof(ret->unit));
		if (ends_with(g, ".slice"))
			seg_copy(g, ret->slice, sizeof(ret->slice));
		pod_from(g, p1, p2, ret);
		container_from(g, p1, ret);
		p2 = p1;
		p1 = g;
	}
}

bool identity_unit_is_session(const char *unit)
{
	size_t n = strlen(unit), m = strlen(".scope");

	if (strncmp(unit, "session-", 8) || n <= 8 + m || strcmp(unit + n - m, ".scope"))
		return false;
	/* session-N.scope, and logind's session-cN.scope names too */
	for (size_t i = 8; i < n - m; i++)
		if (!((unit[i] >= '0' && unit[i] <= '9') || (i == 8 && unit[i] == 'c')))
			return false;
	return true;
}

/* Which hierarchy a line "ID:CONTROLLERS:PATH" is, in the order its
 * path is worth reading: 0 unified (v2), 1 name=systemd, 2 cpu, 3
 * memory, 4 any other v1 one. */
static int line_class(struct seg id, struct seg ctl)
{
	int best = 4;

	if (seg_is(id, "0") && !ctl.n)
		return 0;
	if (seg_is(ctl, "name=systemd"))
		return 1;
	for (size_t i = 0; i < ctl.n;) {
		size_t j = i;

		while (j < ctl.n && ctl.s[j] != ',')
			j++;
		if (seg_is((struct seg){ ctl.s + i, j - i }, "cpu") && best > 2)
			best = 2;
		else if (seg_is((struct seg){ ctl.s + i, j - i }, "memory") && best > 3)
			best = 3;
		i = j + 1;
	}
	return best;
}

void identity_from_cgroup(const char *text, size_t len, char *cgroup, size_t cgroup_len,
			  struct identity *ret)
{
	char buf[IDENTITY_TEXT_MAX + 1];
	struct {
		const char *path;
		int class;
	} lines[LINES_MAX];
	size_t n = 0, nlines = 0;
	int shown = -1; /* the line shown as the cgroup */
	char *line, *next;
	bool found = false;
	struct identity fallback;

	memset(ret, 0, sizeof(*ret));
	memset(&fallback, 0, sizeof(fallback));
	while (n < len && n < IDENTITY_TEXT_MAX && text[n])
		n++;
	memcpy(buf, text, n);
	buf[n] = '\0';
	for (line = buf; *line && nlines < LINES_MAX; line = next) {
		char *ctl, *path;

		next = line + strcspn(line, "\n");
		if (*next)
			*next++ = '\0';
		ctl = strchr(line, ':');
		path = ctl ? strchr(ctl + 1, ':') : NULL;
		if (!path)
			continue;
		lines[nlines].path = path + 1;
		lines[nlines].class = line_class((struct seg){ line, (size_t)(ctl - line) },
						 (struct seg){ ctl + 1, (size_t)(path - ctl - 1) });
		/* The cgroup shown: v2, else name=systemd, else cpu (never
		 * memory or the others, as before identity was read). */
		if (lines[nlines].class <= 2 &&
		    (shown < 0 || lines[nlines].class < lines[shown].class))
			shown = (int)nlines;
		nlines++;
	}
	if (cgroup_len) {
		snprintf(cgroup, cgroup_len, "%s", shown >= 0 ? lines[shown].path : "");
		utf8_clean(cgroup);
	}
	for (int class = 0; class <= 4 && !found; class++) {
		for (size_t i = 0; i < nlines && !found; i++) {
			struct identity id;

			if (lines[i].class != class)
				continue;
			identity_from_path(lines[i].path, &id);
			if (id.container_id[0] || id.pod_uid[0]) {
				*ret = id;
				found = true;
			} else if ((id.unit[0] || id.slice[0]) && !fallback.unit[0] &&
				   !fallback.slice[0]) {
				fallback = id;
			}
		}
	}
	if (!found)
		*ret = fallback;
}
