/* workers: the processes on this host that nprofd may act on, read from
 * /proc. A worker is named by an id that a recycled pid cannot take:
 * "PID-STARTTIME" (STARTTIME: /proc/PID/stat's starttime, clock ticks
 * since boot). Kernel threads are never workers. */
#ifndef NPROF_DAEMON_WORKERS_H
#define NPROF_DAEMON_WORKERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/core/identity.h"
#include "profile/events.h"

#define WORKER_ID_MAX 48
#define WORKER_CMDLINE_MAX 1024

struct worker {
	pid_t pid;
	uint64_t start_ticks;		/* /proc/PID/stat field 22 */
	char id[WORKER_ID_MAX];		/* "PID-STARTTIME" */
	char name[32];			/* comm */
	/* argv joined by spaces, cut at the limit. Here and in every string
	 * the process controls, control bytes and bytes that are not UTF-8
	 * read as '?'. */
	char cmdline[WORKER_CMDLINE_MAX];
	char exe[512];				/* /proc/PID/exe's target, "" when unreadable */
	uid_t uid;			/* real uid: the owner */
	char user[64];			/* its name, or the number */
	/* What the cgroup says the process is (identity.h; "" for what it
	 * does not say): only labels, which a process's owner may arrange
	 * within the cgroups delegated to them. */
	char unit[IDENTITY_UNIT_MAX];	/* innermost systemd unit */
	char slice[IDENTITY_UNIT_MAX];	/* innermost systemd slice */
	char cgroup[512];		/* the unified (v2) cgroup path, or v1's name=systemd/cpu one */
	char container[80];		/* the container id's first 12 digits */
	char container_id[IDENTITY_ID_LEN + 1];
	char runtime[16];		/* docker, containerd, cri-o, podman */
	char pod_uid[40];		/* a Kubernetes pod's */
	char qos[16];			/* its QoS class: guaranteed, burstable, besteffort */
	unsigned threads;
	/* Percent of one CPU (a busy 4-thread process: up to 400) since the
	 * scanner's previous look at it, a scan or a worker_read; else over
	 * its life. A look under 200 ms after that one repeats the last
	 * share and keeps the older baseline: a window of a few clock ticks
	 * would be noise. */
	double cpu_percent;
	uint64_t rss_bytes;
	uint64_t uptime_ns;		/* since it started */
	bool agent;			/* libnprof.so mapped into it */
	bool agent_http;		/* reserved: its HTTP endpoint is on */
};

/* Modes (events) a worker can be profiled in, and for each the reason
 * it cannot when it cannot, one line naming cause and fix ("needs
 * nprof's agent in the process: start it with NPROF_START=1
 * LD_PRELOAD=libnprof.so", "perf_events denied; load nprof's agent for
 * itimer", "no hardware counters on this machine (no PMU); use cpu
 * instead"). */
struct worker_mode {
	enum event_id event;
	bool available;
	bool needs_agent; /* unavailable only for want of the agent */
	char why_not[160];
};

/* A scanner keeps the previous scan's CPU times, for cpu_percent, of
 * the processes that scan saw (no more), and a scan's uid-to-name
 * lookups. One thread at a time. */
struct worker_scanner;

struct worker_scanner *worker_scanner_new(void);
void worker_scanner_free(struct worker_scanner *s);

/* Every process of /proc (proc_root: "/proc", a test may pass another
 * tree) that is not a kernel thread, at most max (the lowest pids), into
 * a malloc'd array *ret (free it) of *ret_n workers, sorted by pid.
 * Processes that vanish while being read, or that /proc will not show
 * (hidepid), are left out. s may be NULL: every cpu_percent is then a
 * lifetime share. 0 or -errno. */
int worker_scan(struct worker_scanner *s, const char *proc_root, size_t max,
		struct worker **ret, size_t *ret_n);

/* One process, by pid (s may be NULL, as for worker_scan): 0, -ESRCH
 * when it is gone or is a kernel thread, -EINVAL for pid <= 0, -EACCES
 * when /proc hides it, -EBADMSG when its stat or status is malformed. */
int worker_read(struct worker_scanner *s, const char *proc_root, pid_t pid,
		struct worker *ret);

/* Parses "PID-STARTTIME", strictly: decimal digits only, without
 * leading zeros (so that one process has one id), pid > 0 and fitting
 * pid_t, starttime fitting 64 bits. 0 or -EINVAL. */
int worker_id_parse(const char *id, pid_t *ret_pid, uint64_t *ret_start_ticks);

/* Whether the worker named id is still the same process: opens a pidfd
 * for its pid, then reads its start time (a pidfd names one process for
 * good, so when the start time read after the open matches, the pidfd
 * is the worker's however the pid is recycled later). Returns the pidfd
 * (close it), or -ESRCH when it has gone (or its pid now names another
 * process), -EINVAL for a malformed id, another -errno when pidfds are
 * missing (-ENOSYS before Linux 5.3). */
int worker_pin(const char *proc_root, const char *id);

/* Every event of the events table with whether w can be recorded in it
 * here, into modes[EVENT_COUNT]. perf_ok: whether perf_event_open works
 * for the one asking (worker_perf_probe); sched_ok: whether the one
 * asking may open the scheduler's tracepoint (wall without the agent,
 * offcpu: an admin, whose instances run as root, on a host that has it). */
void worker_modes(const struct worker *w, bool perf_ok, bool sched_ok, bool hw_ok,
		  struct worker_mode modes[EVENT_COUNT]);

/* Whether software and hardware perf events can be opened here by
 * this process, probed once (perf_event_open on itself). */
void worker_perf_probe(bool *ret_sw_ok, bool *ret_hw_ok);

#endif
