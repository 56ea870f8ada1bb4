/* coredump: see coredump.h. */
#include "capture/coredump.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/procfs.h>
#include <sys/ptrace.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/proc.h"
#include "capture/tracee.h"

#define PAGE 4096ull
#define CHUNK (1u << 20)	  /* bytes copied per process_vm_readv */
#define XSTATE_MAX (64u << 10)	  /* NT_X86_XSTATE buffer (AMX needs ~11 KiB) */
#define SMAPS_MAX (512u << 20)
#define FREEZE_ROUNDS 1000	  /* task-list rescans while stopping */

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif

struct cd_map {
	uint64_t start, end, pgoff;
	unsigned prot;		/* PF_R | PF_W | PF_X */
	bool shared;
	bool anon_pages;	/* smaps: Anonymous > 0 (written-to private pages) */
	bool dontdump;		/* smaps VmFlags dd or io */
	char *path;		/* "" for anonymous */
	uint64_t dump;		/* bytes to copy from start */
};

struct cd_maps {
	struct cd_map *v;
	size_t n, cap;
};

struct cd_thread {
	pid_t tid;
	int sig;		/* to give back at release */
	bool stopped;
	bool fp_ok;
	struct user_regs_struct regs;
	struct user_fpregs_struct fp;
	uint8_t *xstate;
	size_t xstate_len;
	long utime, stime;	/* clock ticks */
};

struct cd {
	pid_t pid;
	struct cd_thread *t;
	size_t n, cap;
	uint64_t stop_start;
};

static void maps_free(struct cd_maps *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = m->cap = 0;
}

/* Parses /proc/PID/maps or smaps: header lines give the mappings, and in
 * smaps "Anonymous:" and "VmFlags:" lines refine the last one. */
static int parse_maps(const char *buf, struct cd_maps *m)
{
	for (const char *line = buf; line && *line;) {
		const char *nl = strchr(line, '\n');
		struct proc_map_line l;

		if (!proc_maps_line_parse(line, nl ? nl : line + strlen(line), &l)) {
			struct cd_map *x;

			if (m->n == m->cap) {
				size_t cap = m->cap ? m->cap * 2 : 256;
				struct cd_map *nv = realloc(m->v, cap * sizeof(*nv));

				if (!nv)
					return -ENOMEM;
				m->v = nv;
				m->cap = cap;
			}
			x = &m->v[m->n];
			memset(x, 0, sizeof(*x));
			x->start = l.start;
			x->end = l.end;
			x->pgoff = l.offset;
			x->prot = (l.perms[0] == 'r' ? PF_R : 0) | (l.perms[1] == 'w' ? PF_W : 0) |
				  (l.perms[2] == 'x' ? PF_X : 0);
			x->shared = l.perms[3] == 's';
			x->path = strndup(l.path, l.path_len);
			if (!x->path)
				return -ENOMEM;
			m->n++;
		} else if (m->n && !strncmp(line, "Anonymous:", 10)) {
			m->v[m->n - 1].anon_pages = strtoull(line + 10, NULL, 10) > 0;
		} else if (m->n && !strncmp(line, "VmFlags:", 8)) {
			size_t len = nl ? (size_t)(nl - line) : strlen(line);

			for (size_t i = 8; i + 2 <= len; i += 3)
				if ((line[i + 1] == 'd' && line[i + 2] == 'd') ||
				    (line[i + 1] == 'i' && line[i + 2] == 'o'))
					m->v[m->n - 1].dontdump = true;
		}
		line = nl ? nl + 1 : NULL;
	}
	return 0;
}

/* pid's smaps (with the detail of each mapping) or maps, parsed:
 * -errno as proc_maps_read gives it. */
static int read_maps(pid_t pid, bool smaps, struct cd_maps *m)
{
	char path[64], *buf = NULL;
	size_t len;
	int err;

	if (smaps) {
		snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
		err = proc_read_file(path, SMAPS_MAX, &buf, &len);
		if (err == -ENOENT)
			err = -ESRCH;
	} else {
		err = proc_maps_read(pid, &buf, &len);
	}
	if (err == 0)
		err = parse_maps(buf, m);
	free(buf);
	return err;
}

static bool is_anon(const struct cd_map *x)
{
	const char *p = x->path;

	return !*p || !strcmp(p, "[heap]") || !strncmp(p, "[stack", 6) ||
	       !strncmp(p, "[anon", 5) || !strncmp(p, "/memfd:", 7) ||
	       !strncmp(p, "/SYSV", 5) || !strncmp(p, "/dev/zero", 9) ||
	       !strncmp(p, "/dev/shm/", 9);
}

static bool never_dump(const struct cd_map *x)
{
	return !(x->prot & PF_R) || x->dontdump || !strcmp(x->path, "[vvar]") ||
	       !strcmp(x->path, "[vvar_vclock]") || !strcmp(x->path, "[vsyscall]");
}

/* How much of x to copy. before: the smaps view (for the Anonymous and
 * VmFlags that /proc/PID/maps lacks); a mapping made since is judged by
 * its protection alone. header_page: the first page of an ELF file mapped
 * from offset 0 (the caller checks the magic). */
static uint64_t dump_size(struct cd_map *x, const struct cd_maps *before, bool all,
			  bool *header_page)
{
	*header_page = false;
	for (size_t i = 0; before && i < before->n; i++)
		if (before->v[i].start == x->start && before->v[i].end == x->end) {
			x->anon_pages = before->v[i].anon_pages;
			x->dontdump = before->v[i].dontdump;
			break;
		}
	if (never_dump(x))
		return 0;
	if (all || is_anon(x) || (x->prot & PF_W) || !strcmp(x->path, "[vdso]") ||
	    (!x->shared && x->anon_pages))
		return x->end - x->start;
	if (x->path[0] == '/' && x->pgoff == 0) {
		*header_page = true;
		return PAGE;
	}
	return 0;
}

/* --- notes ---------------------------------------------------------------- */

struct nbuf {
	uint8_t *p;
	size_t len, cap;
	int err;
};

static void nb_put(struct nbuf *b, const void *data, size_t len)
{
	size_t pad = (len + 3) & ~(size_t)3;

	if (b->err)
		return;
	if (b->len + pad > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		uint8_t *np;

		while (cap < b->len + pad)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np) {
			b->err = -ENOMEM;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	if (len)
		memcpy(b->p + b->len, data, len);
	memset(b->p + b->len + len, 0, pad - len);
	b->len += pad;
}

static void note(struct nbuf *b, const char *name, uint32_t type, const void *desc,
		 size_t len)
{
	Elf64_Nhdr h = { (uint32_t)strlen(name) + 1, (uint32_t)len, type };

	nb_put(b, &h, sizeof(h));
	nb_put(b, name, h.n_namesz);
	nb_put(b, desc, len);
}

struct proc_facts {
	pid_t pid;
	char state;
	long ppid, pgrp, sid, flags, nice;
	long uid, gid;
	char comm[16];
	char args[ELF_PRARGSZ];
	char *auxv;
	size_t auxv_len;
};

static void read_facts(pid_t pid, struct proc_facts *f)
{
	char path[64], *buf = NULL;
	size_t len;

	f->pid = pid;

	{
		struct proc_stat st;

		if (proc_stat_read(pid, 0, &st) == 0) {
			/* the note's pr_fname: 16 bytes, as the kernel's comm */
			snprintf(f->comm, sizeof(f->comm), "%.*s", (int)sizeof(f->comm) - 1, st.comm);
			f->state = st.state;
			f->ppid = st.ppid;
			f->pgrp = st.pgrp;
			f->sid = st.session;
			f->flags = (long)st.flags;
			f->nice = st.nice;
		}
	}
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (proc_read_file(path, 65536, &buf, &len) == 0) {
		const char *u = strstr(buf, "\nUid:"), *g = strstr(buf, "\nGid:");

		if (u)
			f->uid = strtol(u + 5, NULL, 10);
		if (g)
			f->gid = strtol(g + 5, NULL, 10);
	}
	free(buf);
	buf = NULL;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if (proc_read_file(path, 65536, &buf, &len) == 0) {
		size_t n = len < sizeof(f->args) - 1 ? len : sizeof(f->args) - 1;

		for (size_t i = 0; i < n; i++)
			f->args[i] = buf[i] ? buf[i] : ' ';
		while (n && f->args[n - 1] == ' ')
			n--;
		f->args[n] = '\0';
	}
	free(buf);
	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	if (proc_read_file(path, 65536, &f->auxv, &f->auxv_len) < 0) {
		f->auxv = NULL;
		f->auxv_len = 0;
	}
}

static void thread_times(pid_t pid, struct cd_thread *t)
{
	struct proc_stat st;

	if (proc_stat_read(pid, t->tid, &st) == 0) {
		t->utime = (long)st.utime;
		t->stime = (long)st.stime;
	}
}

static void ticks_to_tv(long ticks, struct timeval *tv)
{
	long hz = sysconf(_SC_CLK_TCK);

	if (hz <= 0)
		hz = 100;
	tv->tv_sec = ticks / hz;
	tv->tv_usec = (ticks % hz) * (1000000 / hz);
}

static void prstatus(struct nbuf *b, const struct proc_facts *f, const struct cd_thread *t)
{
	struct elf_prstatus s;

	memset(&s, 0, sizeof(s));
	s.pr_pid = t->tid;
	s.pr_ppid = (pid_t)f->ppid;
	s.pr_pgrp = (pid_t)f->pgrp;
	s.pr_sid = (pid_t)f->sid;
	ticks_to_tv(t->utime, &s.pr_utime);
	ticks_to_tv(t->stime, &s.pr_stime);
	memcpy(&s.pr_reg, &t->regs, sizeof(s.pr_reg));
	s.pr_fpvalid = t->fp_ok;
	note(b, "CORE", NT_PRSTATUS, &s, sizeof(s));
}

static void prpsinfo(struct nbuf *b, const struct proc_facts *f)
{
	static const char states[] = "RSDTZW";
	struct elf_prpsinfo p;
	const char *s = strchr(states, f->state);

	memset(&p, 0, sizeof(p));
	p.pr_state = s && f->state ? (char)(s - states) : 0;
	p.pr_sname = f->state ? f->state : 'R';
	p.pr_zomb = f->state == 'Z';
	p.pr_nice = (char)f->nice;
	p.pr_flag = (unsigned long)f->flags;
	p.pr_uid = (unsigned)f->uid;
	p.pr_gid = (unsigned)f->gid;
	p.pr_pid = (pid_t)f->pid;
	p.pr_ppid = (pid_t)f->ppid;
	p.pr_pgrp = (pid_t)f->pgrp;
	p.pr_sid = (pid_t)f->sid;
	memcpy(p.pr_fname, f->comm, sizeof(p.pr_fname));
	memcpy(p.pr_psargs, f->args, sizeof(p.pr_psargs));
	note(b, "CORE", NT_PRPSINFO, &p, sizeof(p));
}

/* NT_FILE: count, page size, (start, end, offset in pages) per file
 * mapping, then their names. */
static void file_note(struct nbuf *b, const struct cd_maps *m)
{
	struct nbuf d = { 0 };
	uint64_t hdr[2] = { 0, PAGE };

	for (size_t i = 0; i < m->n; i++)
		hdr[0] += m->v[i].path[0] == '/';
	/* Built unpadded: names follow the triples directly. */
	{
		size_t names = 0, off;

		for (size_t i = 0; i < m->n; i++)
			if (m->v[i].path[0] == '/')
				names += strlen(m->v[i].path) + 1;
		d.cap = sizeof(hdr) + hdr[0] * 24 + names;
		d.p = malloc(d.cap ? d.cap : 1);
		if (!d.p) {
			b->err = -ENOMEM;
			return;
		}
		memcpy(d.p, hdr, sizeof(hdr));
		off = sizeof(hdr);
		for (size_t i = 0; i < m->n; i++)
			if (m->v[i].path[0] == '/') {
				uint64_t e[3] = { m->v[i].start, m->v[i].end, m->v[i].pgoff / PAGE };

				memcpy(d.p + off, e, sizeof(e));
				off += sizeof(e);
			}
		for (size_t i = 0; i < m->n; i++)
			if (m->v[i].path[0] == '/') {
				size_t n = strlen(m->v[i].path) + 1;

				memcpy(d.p + off, m->v[i].path, n);
				off += n;
			}
		d.len = off;
	}
	note(b, "CORE", NT_FILE, d.p, d.len);
	free(d.p);
}

/* --- stopping and releasing ------------------------------------------------ */

static bool have_tid(const struct cd *c, pid_t tid)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->t[i].tid == tid)
			return true;
	return false;
}

static void release_all(struct cd *c)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->t[i].stopped) {
			tracee_release(c->t[i].tid, c->t[i].sig);
			c->t[i].stopped = false;
		}
}

/* Stops every thread: rescans until a pass finds no new one. Returns the
 * number of threads that vanished first, or -errno. */
static int freeze(struct cd *c, unsigned *ret_gone, struct diag *d)
{
	unsigned gone = 0;

	for (unsigned round = 0; round < FREEZE_ROUNDS; round++) {
		pid_t *tids = NULL;
		size_t n = 0;
		bool added = false;
		int err = tracee_list_tids(c->pid, &tids, &n);

		if (err == -ESRCH && c->n)
			break; /* exited meanwhile: what was stopped stays */
		if (err < 0)
			return err == -ESRCH ? diag_set(d, err, "no process with PID %d", (int)c->pid) :
					       diag_set(d, err, "cannot list the threads of PID %d: %s",
							(int)c->pid, strerror(-err));
		for (size_t i = 0; i < n; i++) {
			struct cd_thread *t;

			if (have_tid(c, tids[i]))
				continue;
			if (c->n == c->cap) {
				size_t cap = c->cap ? c->cap * 2 : 64;
				struct cd_thread *nv = realloc(c->t, cap * sizeof(*nv));

				if (!nv) {
					free(tids);
					return -ENOMEM;
				}
				c->t = nv;
				c->cap = cap;
			}
			t = &c->t[c->n++];
			memset(t, 0, sizeof(*t));
			t->tid = tids[i];
			added = true;
			if (!c->stop_start)
				c->stop_start = clock_ns(CLOCK_MONOTONIC);
			err = tracee_stop(t->tid, &t->sig);
			if (err == 0) {
				t->stopped = true;
				continue;
			}
			if (err == -ESRCH) {
				gone++;
				continue;
			}
			free(tids);
			return proc_explain_access(c->pid, err == -EACCES ? -EPERM : err,
						   "ptrace (PTRACE_SEIZE)", PROC_ACCESS_ATTACH, d);
		}
		free(tids);
		if (!added)
			break;
	}
	*ret_gone = gone;
	return 0;
}

static int thread_regs(struct cd_thread *t)
{
	struct iovec iov = { &t->regs, sizeof(t->regs) };

	if (ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_PRSTATUS, &iov) < 0)
		return -errno;
	iov.iov_base = &t->fp;
	iov.iov_len = sizeof(t->fp);
	t->fp_ok = ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_PRFPREG, &iov) == 0;
	t->xstate = malloc(XSTATE_MAX);
	if (t->xstate) {
		iov.iov_base = t->xstate;
		iov.iov_len = XSTATE_MAX;
		if (ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_X86_XSTATE, &iov) == 0)
			t->xstate_len = iov.iov_len;
	}
	return 0;
}

/* --- writing ---------------------------------------------------------------- */

static int pwrite_all(int fd, const void *p, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p = (const uint8_t *)p + n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static bool all_zero(const uint8_t *p, size_t len)
{
	static const uint8_t zero[PAGE];

	return !memcmp(p, zero, len);
}

/* Writes buf (len bytes of memory, a multiple of the page) at off,
 * leaving all-zero pages as holes. */
static int write_sparse(int fd, const uint8_t *buf, size_t len, uint64_t off,
			uint64_t *data_bytes)
{
	size_t i = 0;

	while (i < len) {
		size_t j;
		int err;

		if (all_zero(buf + i, PAGE)) {
			i += PAGE;
			continue;
		}
		for (j = i + PAGE; j < len && !all_zero(buf + j, PAGE); j += PAGE)
			;
		err = pwrite_all(fd, buf + i, j - i, off + i);
		if (err < 0)
			return err;
		*data_bytes += j - i;
		i = j;
	}
	return 0;
}

/* Copies [start, start + len) of the target to the file at off. Pages
 * that cannot be read stay zero (holes) and are counted. */
static int copy_range(pid_t pid, int fd, uint8_t *buf, uint64_t start, uint64_t len,
		      uint64_t off, struct coredump_result *r)
{
	uint64_t done = 0;

	while (done < len) {
		size_t want = len - done < CHUNK ? (size_t)(len - done) : CHUNK;
		struct iovec local = { buf, want };
		struct iovec remote = { (void *)(uintptr_t)(start + done), want };
		ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
		size_t got = n > 0 ? (size_t)n & ~(size_t)(PAGE - 1) : 0;
		int err;

		if (n < 0 && errno == ESRCH)
			return -ESRCH;
		err = write_sparse(fd, buf, got, off + done, &r->data_bytes);
		if (err < 0)
			return err;
		done += got;
		if (got < want) {
			/* The page at done is unreadable: skip it. */
			r->unreadable_bytes += PAGE;
			done += PAGE;
		}
	}
	return 0;
}

static int elf_magic_at(pid_t pid, uint64_t addr)
{
	char m[4];
	struct iovec local = { m, 4 }, remote = { (void *)(uintptr_t)addr, 4 };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == 4 && !memcmp(m, ELFMAG, 4);
}

static const char *human(uint64_t b, char *buf, size_t len)
{
	if (b >= (1ull << 30))
		snprintf(buf, len, "%.1f GiB", b / 1073741824.0);
	else if (b >= (1ull << 20))
		snprintf(buf, len, "%.1f MiB", b / 1048576.0);
	else
		snprintf(buf, len, "%.0f KiB", b / 1024.0);
	return buf;
}

static int cmp_thread_main_first(const void *a, const void *b, void *arg)
{
	const struct cd_thread *x = a, *y = b;
	pid_t pid = *(const pid_t *)arg;

	if ((x->tid == pid) != (y->tid == pid))
		return x->tid == pid ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

int coredump_write(pid_t pid, const char *path, const struct coredump_options *opts,
		   struct coredump_result *ret, struct diag *d)
{
	struct coredump_options o = opts ? *opts : (struct coredump_options){ 0 };
	struct coredump_result r = { 0 };
	struct cd c = { .pid = pid };
	struct cd_maps before = { 0 }, now = { 0 };
	struct proc_facts facts = { 0 };
	struct nbuf notes = { 0 };
	struct statvfs vfs;
	Elf64_Phdr *ph = NULL;
	uint8_t *buf = NULL;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC), off, data_off, estimate = 0;
	size_t nph, nth;
	char ha[32], hb[32];
	int fd = -1, err;
	bool created = false;

	/* 1. What needs no stop: the mappings with their smaps detail, the
	 * process's facts, and whether the file can hold the result. */
	err = read_maps(pid, true, &before);
	if (err < 0) {
		err = proc_maps_explain(pid, err, d);
		goto out;
	}
	read_facts(pid, &facts);
	for (size_t i = 0; i < before.n; i++) {
		bool hdr;

		estimate += dump_size(&before.v[i], NULL, o.all_mappings, &hdr);
	}
	/* Headers and notes: generous per mapping and per thread. */
	estimate += PAGE + before.n * (64 + 24 + PATH_MAX / 16) + 65536 * 4;
	r.estimate_bytes = estimate;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = diag_set(d, -errno, "cannot create %s: %s; choose another -f", path,
			       strerror(errno));
		goto out;
	}
	created = true;
	if (fstatvfs(fd, &vfs) == 0 &&
	    (uint64_t)vfs.f_bavail * vfs.f_frsize < estimate) {
		err = diag_set(d, -ENOSPC,
			"the core of PID %d needs up to %s but the file system of %s has %s free; "
			"write it elsewhere with -f%s", (int)pid, human(estimate, ha, sizeof(ha)),
			path, human((uint64_t)vfs.f_bavail * vfs.f_frsize, hb, sizeof(hb)),
			o.all_mappings ? ", or leave out --all" : "");
		goto out;
	}
	buf = malloc(CHUNK);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}

	/* 2. Stop every thread and take its registers. */
	err = freeze(&c, &r.threads_gone, d);
	if (err < 0)
		goto out;
	for (size_t i = 0; i < c.n; i++) {
		struct cd_thread *t = &c.t[i];

		if (!t->stopped)
			continue;
		if (thread_regs(t) < 0) {
			tracee_release(t->tid, t->sig);
			t->stopped = false;
			r.threads_gone++;
			continue;
		}
		thread_times(pid, t);
	}
	qsort_r(c.t, c.n, sizeof(*c.t), cmp_thread_main_first, &pid);
	nth = 0;
	for (size_t i = 0; i < c.n; i++)
		nth += c.t[i].stopped;
	if (!nth) {
		err = diag_set(d, -ESRCH, "PID %d exited before it could be stopped", (int)pid);
		goto out;
	}

	/* 3. The mappings as they are now that nothing runs. */
	err = read_maps(pid, false, &now);
	if (err < 0) {
		err = proc_maps_explain(pid, err, d);
		goto out;
	}
	for (size_t i = 0; i < now.n; i++) {
		bool hdr;

		now.v[i].dump = dump_size(&now.v[i], &before, o.all_mappings, &hdr);
		if (hdr && !elf_magic_at(pid, now.v[i].start))
			now.v[i].dump = 0;
	}

	/* 4. Notes: the main thread's with the process-wide ones, then the
	 * others', as the kernel orders them. */
	for (size_t i = 0, first = 1; i < c.n; i++) {
		struct cd_thread *t = &c.t[i];

		if (!t->stopped)
			continue;
		prstatus(&notes, &facts, t);
		if (first) {
			prpsinfo(&notes, &facts);
			if (facts.auxv_len)
				note(&notes, "CORE", NT_AUXV, facts.auxv, facts.auxv_len);
			file_note(&notes, &now);
			first = 0;
		}
		if (t->fp_ok)
			note(&notes, "CORE", NT_FPREGSET, &t->fp, sizeof(t->fp));
		if (t->xstate_len)
			note(&notes, "LINUX", NT_X86_XSTATE, t->xstate, t->xstate_len);
	}
	if (notes.err) {
		err = notes.err;
		goto out;
	}

	/* 5. Headers, then each mapping's memory, page-aligned. */
	nph = 1 + now.n;
	ph = calloc(nph, sizeof(*ph));
	if (!ph) {
		err = -ENOMEM;
		goto out;
	}
	{
		Elf64_Ehdr eh;
		Elf64_Shdr sh;
		bool xnum = nph >= PN_XNUM;
		uint64_t hdr_end = sizeof(eh) + nph * sizeof(*ph) + (xnum ? sizeof(sh) : 0);

		memset(&eh, 0, sizeof(eh));
		memcpy(eh.e_ident, ELFMAG, SELFMAG);
		eh.e_ident[EI_CLASS] = ELFCLASS64;
		eh.e_ident[EI_DATA] = ELFDATA2LSB;
		eh.e_ident[EI_VERSION] = EV_CURRENT;
		eh.e_ident[EI_OSABI] = ELFOSABI_NONE;
		eh.e_type = ET_CORE;
		eh.e_machine = EM_X86_64;
		eh.e_version = EV_CURRENT;
		eh.e_phoff = sizeof(eh);
		eh.e_ehsize = sizeof(eh);
		eh.e_phentsize = sizeof(*ph);
		eh.e_phnum = xnum ? PN_XNUM : (Elf64_Half)nph;
		if (xnum) {
			/* More than 65534 headers: the real count goes in
			 * section 0's sh_info (ELF's extended numbering). */
			memset(&sh, 0, sizeof(sh));
			sh.sh_info = (Elf64_Word)nph;
			eh.e_shoff = sizeof(eh) + nph * sizeof(*ph);
			eh.e_shentsize = sizeof(sh);
			eh.e_shnum = 1;
		}
		ph[0].p_type = PT_NOTE;
		ph[0].p_offset = hdr_end;
		ph[0].p_filesz = notes.len;
		ph[0].p_align = 4;
		data_off = (hdr_end + notes.len + PAGE - 1) & ~(PAGE - 1);
		off = data_off;
		for (size_t i = 0; i < now.n; i++) {
			Elf64_Phdr *p = &ph[1 + i];

			p->p_type = PT_LOAD;
			p->p_flags = now.v[i].prot;
			p->p_offset = now.v[i].dump ? off : data_off;
			p->p_vaddr = now.v[i].start;
			p->p_filesz = now.v[i].dump;
			p->p_memsz = now.v[i].end - now.v[i].start;
			p->p_align = PAGE;
			off += now.v[i].dump;
			r.ndumped += now.v[i].dump > 0;
		}
		err = pwrite_all(fd, &eh, sizeof(eh), 0);
		if (!err)
			err = pwrite_all(fd, ph, nph * sizeof(*ph), sizeof(eh));
		if (!err && xnum)
			err = pwrite_all(fd, &sh, sizeof(sh), eh.e_shoff);
		if (!err)
			err = pwrite_all(fd, notes.p, notes.len, hdr_end);
	}
	for (size_t i = 0; !err && i < now.n; i++)
		if (now.v[i].dump)
			err = copy_range(pid, fd, buf, now.v[i].start, now.v[i].dump,
					 ph[1 + i].p_offset, &r);
	if (err == -ESRCH) {
		err = diag_set(d, -ESRCH, "PID %d was killed during the dump", (int)pid);
		goto out;
	}
	if (err < 0) {
		err = diag_set(d, err, "cannot write %s: %s%s", path, strerror(-err),
			       err == -ENOSPC ? "; write it elsewhere with -f" : "");
		goto out;
	}
	release_all(&c);
	r.pause_ns = clock_ns(CLOCK_MONOTONIC) - c.stop_start;

	/* 6. The size the headers promise, holes included. */
	if (ftruncate(fd, (off_t)off) < 0 || close(fd) < 0) {
		fd = -1;
		err = diag_set(d, -errno, "cannot write %s: %s", path, strerror(errno));
		goto out;
	}
	fd = -1;
	r.file_bytes = off;
	r.nthreads = (unsigned)nth;
	r.nmappings = (unsigned)now.n;
	r.total_ns = clock_ns(CLOCK_MONOTONIC) - t0;
	*ret = r;
	err = 0;
out:
	release_all(&c);
	if (fd >= 0)
		close(fd);
	if (err < 0 && created)
		unlink(path);
	for (size_t i = 0; i < c.n; i++)
		free(c.t[i].xstate);
	free(c.t);
	free(ph);
	free(buf);
	free(notes.p);
	free(facts.auxv);
	maps_free(&before);
	maps_free(&now);
	return err;
}
