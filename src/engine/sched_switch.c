/* sched_switch: see sched_switch.h. */
#include "engine/sched_switch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <stdatomic.h>

#include "base/proc.h"

static const char *const tracefs_dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

/* This process mounted tracefs (every later load says so too). */
static atomic_bool mounted_here;

#define FORMAT_MAX (16u << 10)

/* The unsigned number after key inside [s, end), or -1. */
static long long field_number(const char *s, const char *end, const char *key)
{
	size_t klen = strlen(key);
	long long v = 0;
	const char *p;

	for (p = s; p + klen <= end; p++)
		if (!memcmp(p, key, klen))
			break;
	if (p + klen > end)
		return -1;
	p += klen;
	if (p >= end || *p < '0' || *p > '9')
		return -1;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (*p - '0');
		if (v > 1 << 20)
			return -1;
	}
	return v;
}

int sched_switch_parse_format(const char *text, size_t len, struct sched_switch_format *ret)
{
	static const char key[] = " prev_state;";
	const size_t klen = sizeof(key) - 1;
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;

		/* "field:long prev_state;\toffset:32;\tsize:8;\tsigned:1;" */
		for (const char *q = p; q + klen <= eol; q++) {
			long long off, size;

			if (memcmp(q, key, klen))
				continue;
			off = field_number(q, eol, "offset:");
			size = field_number(q, eol, "size:");
			if (off < 0 || (size != 4 && size != 8))
				return -EPROTO;
			ret->state_offset = (unsigned)off;
			ret->state_size = (unsigned)size;
			return 0;
		}
		p = eol + 1;
	}
	return -EPROTO;
}

static int read_file(const char *dir, const char *name, char **ret, size_t *ret_len)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/events/sched/sched_switch/%s", dir, name);
	return proc_read_file(path, FORMAT_MAX, ret, ret_len);
}

/* Whether tracefs is mounted at /sys/kernel/tracing (its magic number). */
static bool tracefs_mounted(void)
{
	struct statfs sf;

	return statfs(tracefs_dirs[0], &sf) == 0 && sf.f_type == TRACEFS_MAGIC;
}

/* Finds the tracepoint's directory: dir, with its id read into *buf. */
static int find_tracepoint(const char **ret_dir, char **buf, size_t *len)
{
	int err = -ENOENT;

	for (size_t i = 0; i < sizeof(tracefs_dirs) / sizeof(tracefs_dirs[0]); i++) {
		int r = read_file(tracefs_dirs[i], "id", buf, len);

		if (r == 0) {
			*ret_dir = tracefs_dirs[i];
			return 0;
		}
		if (r == -EACCES || r == -EPERM)
			err = -EACCES;
	}
	return err;
}

int sched_switch_load(struct sched_switch_format *ret, struct diag *d)
{
	struct sched_switch_format f = { 0 };
	const char *dir = NULL;
	char *buf = NULL, *end;
	size_t len = 0;
	int err = find_tracepoint(&dir, &buf, &len);

	/* Not mounted: perf mounts it when it needs it, and so do we (root
	 * only: the kernel allows no one else). */
	if (err == -ENOENT && !tracefs_mounted()) {
		if (mount("nodev", tracefs_dirs[0], "tracefs", 0, NULL) == 0) {
			atomic_store(&mounted_here, true);
			err = find_tracepoint(&dir, &buf, &len);
		} else if (errno == EPERM || errno == EACCES) {
			err = diag_set(d, -EACCES,
				       "tracefs is not mounted, and only root may mount it: run "
				       "`sudo mount -t tracefs nodev /sys/kernel/tracing` once, or "
				       "nprof as root");
			goto out;
		}
	}
	if (err < 0) {
		err = diag_set(d, err, err == -EACCES
			       ? "tracefs is root's"
			       : "the kernel has no sched:sched_switch tracepoint (not in "
				 "/sys/kernel/tracing/events: a kernel without "
				 "CONFIG_SCHED_TRACER or tracepoints)");
		goto out;
	}
	f.id = strtoull(buf, &end, 10);
	if (end == buf) {
		err = diag_set(d, -EPROTO, "%s/events/sched/sched_switch/id is not a number", dir);
		goto out;
	}
	free(buf);
	buf = NULL;
	err = read_file(dir, "format", &buf, &len);
	if (err < 0 || sched_switch_parse_format(buf, len, &f) < 0) {
		err = diag_set(d, -EPROTO, "%s/events/sched/sched_switch/format has no prev_state "
			       "field of 4 or 8 bytes", dir);
		goto out;
	}
	f.mounted = atomic_load(&mounted_here);
	*ret = f;
	err = 0;
out:
	free(buf);
	return err;
}

char sched_switch_state(const struct sched_switch_format *f, const void *raw, size_t len)
{
	uint64_t v = 0;

	if (f->state_offset + f->state_size > len)
		return '?';
	if (f->state_size == 8)
		memcpy(&v, (const char *)raw + f->state_offset, 8);
	else {
		uint32_t w;

		memcpy(&w, (const char *)raw + f->state_offset, 4);
		v = w;
	}
	/* TASK_REPORT_MAX (0x100): preempted; 0: yielded, still runnable.
	 * Else one bit of TASK_REPORT: S D T t X Z P I. */
	if (!v || (v & 0x100))
		return 'R';
	if (v & 0x1) return 'S';
	if (v & 0x2) return 'D';
	if (v & 0x4) return 'T';
	if (v & 0x8) return 't';
	if (v & 0x30) return 'X';
	if (v & 0x40) return 'S'; /* parked (kernel threads) */
	return 'D';		  /* 0x80 idle: an uninterruptible sleep that does not load */
}
