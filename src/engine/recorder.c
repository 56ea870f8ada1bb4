/* The raw recorder: perf events on every thread of one process, read
 * into a table of distinct (thread, address chain). See recorder.h and
 * docs/engine.md for why it is shaped this way. */
#include "engine/recorder_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/hash.h"
#include "base/id_index.h"
#include "base/proc.h"
#include "engine/perf_ring.h"

int recorder_read_small_file(const char *path, char *buf, size_t len)
{
	ssize_t n = proc_read_small(path, buf, len);

	if (n < 0)
		return (int)n;
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return 0;
}

uint64_t recorder_sysctl(const char *path, uint64_t dflt)
{
	char buf[64];
	char *end;
	long long v;

	if (recorder_read_small_file(path, buf, sizeof(buf)) < 0)
		return dflt;
	v = strtoll(buf, &end, 10);
	return end == buf ? dflt : (uint64_t)v;
}

int recorder_new(const struct recorder_config *c, struct recorder **ret,
		 struct diag *d)
{
	struct recorder *r = NULL;
	struct recorder_private *p;
	unsigned depth = c->max_depth ? c->max_depth : RECORDER_DEFAULT_DEPTH;
	uint64_t sysmax;
	int err;

	if (c->pid <= 0 || !c->event) {
		err = diag_set(d, -EINVAL, "invalid PID %d", (int)c->pid);
		goto out;
	}
	err = -ENOMEM;
	r = calloc(1, sizeof(*r));
	if (!r || !(r->priv = calloc(1, sizeof(*r->priv))))
		goto out;
	p = r->priv;
	p->c = *c;
	p->pid = c->pid;
	r->pid = c->pid;
	p->pidfd = -1;
	p->unwinder = c->unwinder ? c->unwinder : &unwinder_fp;
	id_index_init(&p->event_index);
	id_index_init(&p->opened_index);
	id_index_init(&p->thread_index);
	chain_table_init(&r->chains, RECORDER_MAX_STACKS, RECORDER_MAX_IPS);
	chain_timeline_init(&r->timeline, RECORDER_MAX_EVENTS);
	offcpu_init(&p->off, 0, recorder_on_span, r);
	recorder_raise_nofile();

	/* The pidfd pins the process identity from here on and tells us
	 * when it exits. */
	p->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
	if (p->pidfd < 0 && errno == ESRCH) {
		err = diag_set(d, -ESRCH, "no process with PID %d", (int)c->pid);
		goto out;
	}
	proc_comm(c->pid, 0, r->comm, sizeof(r->comm));

	sysmax = recorder_sysctl("/proc/sys/kernel/perf_event_max_stack", 127);
	r->kernel_max_stack = depth < sysmax ? depth : (unsigned)sysmax;
	if (r->kernel_max_stack > UINT16_MAX) /* attr.sample_max_stack is 16 bits */
		r->kernel_max_stack = UINT16_MAX;
	if (!r->kernel_max_stack)
		r->kernel_max_stack = 1;
	/* The kernel's callchain obeys the sysctl; our own walk only -j. */
	r->max_stack = p->unwinder->own_user_walk ? depth : r->kernel_max_stack;
	p->scratch = calloc(r->max_stack, sizeof(*p->scratch));
	if (!p->scratch)
		goto out;

	err = recorder_online_cpus(p);
	if (err < 0) {
		diag_set(d, err, "cannot list the online CPUs");
		goto out;
	}
	err = -ENOMEM;
	p->rings = calloc(p->ncpus, sizeof(*p->rings));
	if (!p->rings)
		goto out;

	err = recorder_probe(r, d);
	if (err < 0)
		goto out;
	recorder_make_attr(r, r->kernel, &p->attr);
	r->interval = p->attr.sample_period;
	/* Every-event sampling (page faults, switches) and hardware counts
	 * come fast; switch records are small. */
	p->ring_want = p->unwinder->ring_bytes ? p->unwinder->ring_bytes
					       : RING_BYTES;
	if (!r->switch_records &&
	    (r->offcpu || p->c.event->type != PERF_TYPE_SOFTWARE ||
	     p->c.event->config != PERF_COUNT_SW_CPU_CLOCK ||
	     r->interval < 1000000))
		p->ring_want *= RING_BYTES_FAST / RING_BYTES;
	r->stats.ring_wanted = p->ring_want;
	p->ring_want = recorder_ring_fit(p->ring_want, p->ncpus);
	p->attr.wakeup_watermark = (uint32_t)(p->ring_want / 4);
	recorder_make_sched_beside(r);
	if (p->unwinder->state_new) {
		err = p->unwinder->state_new(c->pid, &p->unwind_state, d);
		if (err < 0) {
			diag_set(d, err, "%s unwinding of PID %d: %s",
				 p->unwinder->name, (int)c->pid, strerror(-err));
			goto out;
		}
	}
	*ret = r;
	r = NULL;
	err = 0;
out:
	recorder_free(r);
	return err;
}

int recorder_start(struct recorder *r, struct diag *d)
{
	struct recorder_private *p = r->priv;
	unsigned fresh = 0;
	bool gone;
	int err;

	/* The main thread first, so it owns the rings: it usually lives as
	 * long as the process. */
	err = recorder_open_thread(r, p->pid, &gone, d);
	if (err < 0)
		goto out;
	/* Threads created by an opened thread inherit its events; threads
	 * created by one not yet opened do not, so scan again until a pass
	 * finds nothing new. */
	do {
		err = recorder_scan_threads(r, &fresh, d);
		if (err < 0)
			goto out;
		r->stats.rescans++;
	} while (fresh && r->stats.rescans < MAX_RESCANS);
	if (!p->nevents) {
		err = diag_set(d, -ESRCH, "no process with PID %d (it exited)",
			       (int)p->pid);
		goto out;
	}
	r->stats.cpus = p->ncpus;
	r->start_ns = clock_ns(CLOCK_REALTIME);
	p->start_mono = clock_ns(CLOCK_MONOTONIC);
	r->start_mono_ns = p->start_mono;
	p->off.start_ns = p->start_mono;
out:
	return err;
}

/* Whether there is time for an idle step at now: enough of the duration
 * left that the step cannot make the recording end late. */
static bool idle_time(const struct recorder_private *p, uint64_t duration_ns, uint64_t now)
{
	return !duration_ns || now - p->start_mono + RECORDER_IDLE_MIN_NS < duration_ns;
}

int recorder_run(struct recorder *r, uint64_t duration_ns,
		 volatile sig_atomic_t *stop, struct diag *d)
{
	struct recorder_private *p = r->priv;
	struct pollfd *fds;
	unsigned nfds = 0;
	uint64_t end_mono = 0;
	bool idle_more = false;
	int err = 0;

	fds = calloc(p->ncpus + 1, sizeof(*fds));
	if (!fds)
		return -ENOMEM;
	/* The events run: what the unwinder left for now is built before
	 * the first read, while the rings fill. */
	if (p->unwind_state && p->unwinder->state_load)
		p->unwinder->state_load(p->unwind_state);
	for (unsigned ci = 0; ci < p->ncpus; ci++)
		if (p->rings[ci])
			fds[nfds++] = (struct pollfd){ p->rings[ci]->fd, POLLIN, 0 };
	if (p->pidfd >= 0)
		fds[nfds++] = (struct pollfd){ p->pidfd, POLLIN, 0 };

	for (;;) {
		uint64_t now = clock_ns(CLOCK_MONOTONIC);
		int timeout = POLL_MS;

		if (stop && *stop)
			break;
		if (duration_ns) {
			uint64_t left;

			if (now - p->start_mono >= duration_ns)
				break;
			left = duration_ns - (now - p->start_mono);
			if (left < (uint64_t)POLL_MS * 1000000)
				timeout = (int)((left + 999999) / 1000000);
		}
		/* Idle work left: read what is there and go on with it. */
		if (idle_more && idle_time(p, duration_ns, now))
			timeout = 0;
		if (poll(fds, nfds, timeout) < 0 && errno != EINTR) {
			err = diag_set(d, -errno, "poll: %s", strerror(errno));
			break;
		}
		now = clock_ns(CLOCK_MONOTONIC);
		recorder_drain_all(r);
		idle_more = p->c.between_reads &&
			    p->c.between_reads(p->c.ctx, idle_time(p, duration_ns, now));
		/* Every ring has now been read past what was written before
		 * the drain began: the switches older than that (less a
		 * margin for records being written) are all here. */
		if (r->offcpu && now > OFFCPU_MARGIN_NS)
			offcpu_flush(&p->off, now - OFFCPU_MARGIN_NS);
		for (unsigned i = 0; i < nfds; i++) {
			if (fds[i].fd == p->pidfd && (fds[i].revents & (POLLIN | POLLHUP)))
				r->target_exited = true;
			/* A ring owner's thread exited: its fd reports POLLHUP
			 * for ever. Stop polling it; the timeout still drains
			 * the ring for the threads that remain. */
			else if (fds[i].revents & (POLLHUP | POLLERR))
				fds[i].fd = -1;
		}
		/* No pidfd (kernel < 5.3): poll for the exit. */
		if (p->pidfd < 0 &&
		    kill(p->pid, 0) < 0 && errno == ESRCH)
			r->target_exited = true;
		if (r->target_exited)
			break;
	}
	end_mono = clock_ns(CLOCK_MONOTONIC);
	/* Stop the events so the recording ends where the duration says,
	 * then take what is left in the rings. */
	for (size_t i = 0; i < p->nevents; i++)
		ioctl(p->events[i].fd, PERF_EVENT_IOC_DISABLE, 0);
	recorder_drain_all(r);
	if (r->offcpu) {
		offcpu_finish(&p->off, end_mono);
		r->stats.offcpu_unpaired = p->off.unpaired;
		r->stats.offcpu_early = p->off.early;
	}
	r->duration_ns = end_mono - p->start_mono;
	free(fds);
	return err;
}

int recorder_begin_thread(struct recorder *r, pid_t tid, bool on_cpu, char state,
			  const uint64_t *ips, unsigned n, bool truncated)
{
	uint32_t stack = ID_NONE;

	if (!r->offcpu)
		return 0;
	if (!on_cpu) {
		if (n > r->max_stack)
			n = r->max_stack;
		stack = recorder_offcpu_stack(r, tid, state, !n, ips, n, 0, truncated);
		if (stack == ID_NONE)
			return -ENOMEM;
		r->stats.begun_unknown += !n;
	}
	return offcpu_thread_begin(&r->priv->off, tid, on_cpu, state, stack);
}

void recorder_free(struct recorder *r)
{
	struct recorder_private *p;

	if (!r)
		return;
	p = r->priv;
	if (p) {
		for (unsigned ci = 0; p->rings && ci < p->ncpus; ci++) {
			perf_ring_unmap(p->rings[ci]);
			free(p->rings[ci]);
		}
		for (size_t i = 0; i < p->nevents; i++)
			close(p->events[i].fd);
		if (p->pidfd >= 0)
			close(p->pidfd);
		if (p->unwind_state && p->unwinder->state_free)
			p->unwinder->state_free(p->unwind_state);
		id_index_release(&p->event_index);
		id_index_release(&p->opened_index);
		id_index_release(&p->thread_index);
		offcpu_release(&p->off);
		free(p->events);
		free(p->opened);
		free(p->rings);
		free(p->cpus);
		free(p->scratch);
		free(p);
	}
	chain_table_release(&r->chains);
	chain_timeline_release(&r->timeline);
	free(r->threads);
	free(r);
}
