#include "inject/agent_load.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/hex.h"
#include "base/proc.h"
#include "base/target_files.h"
#include "inject/remote_symbol.h"
#include "symbolize/elf_symtab.h"

/* `mov $15, %rax; syscall`: glibc's __restore_rt, rt_sigreturn. */
static const uint8_t SIGRETURN[] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 };

/* The build-id of the ELF file fd, as hex; "" when it has none. */
static void build_id_of(int fd, char *hex, size_t len)
{
	struct elf_info info;
	Elf *e;

	hex[0] = '\0';
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && elf_read_info(e, &info) == 0 && info.build_id_len && len > 2 * info.build_id_len)
		hex_encode(info.build_id, info.build_id_len, hex);
	if (e)
		elf_end(e);
}

/* Whether the file at fd is a usable copy of the agent for a process of
 * uid: the same build-id, and only uid (or root) could have written it,
 * since the process is about to run its code. */
static bool usable_copy(int fd, const char *ours, uid_t uid)
{
	char theirs[128];
	struct stat st;

	if (fstat(fd, &st) < 0 || (st.st_uid != uid && st.st_uid != 0) ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)))
		return false;
	build_id_of(fd, theirs, sizeof(theirs));
	return !strcmp(ours, theirs);
}

/* The library's path as pid sees it: lib itself when that is the same
 * file there, else a copy in its /tmp named by its user and build-id (an
 * existing copy is used only when it is that user's and its build-id
 * matches). Every look and the copy in the process's world are made with
 * its user's rights (target_files.h): root never writes there. */
static int visible_path(pid_t pid, const char *lib, struct agent_load *r, struct diag *d)
{
	char ours[128];
	struct stat a, b;
	struct target_files *tf = NULL;
	int fd = open(lib, O_RDONLY | O_CLOEXEC), there = -1, err;

	if (fd < 0)
		return diag_set(d, -errno, "cannot read the agent %s: %s", lib, strerror(errno));
	tf = target_files_new(pid);
	if (!tf) {
		err = diag_set(d, -errno, "cannot read /proc/%d/status: %s", (int)pid,
			       strerror(errno));
		goto out;
	}
	there = target_files_open(tf, lib);
	if (there >= 0 && fstat(fd, &a) == 0 && fstat(there, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
		snprintf(r->path, sizeof(r->path), "%s", lib);
		err = 0;
		goto out;
	}
	if (there >= 0)
		close(there);
	build_id_of(fd, ours, sizeof(ours));
	if (!ours[0]) {
		err = diag_set(d, -EINVAL, "the agent %s has no build-id to name its copy by", lib);
		goto out;
	}
	snprintf(r->path, sizeof(r->path), "/tmp/nprof-agent-%u-%.80s.so",
		 (unsigned)target_files_uid(tf), ours);
	there = target_files_open(tf, r->path);
	if (there >= 0 && usable_copy(there, ours, target_files_uid(tf))) {
		err = 0;
		goto out;
	}
	err = target_files_install(tf, fd, r->path);
	if (err < 0) {
		err = diag_set(d, err,
			       "the agent is not in process %d's filesystem (another mount "
			       "namespace) and copying it to %s there as its user (uid %u) "
			       "failed: %s",
			       (int)pid, r->path, (unsigned)target_files_uid(tf), strerror(-err));
		goto out;
	}
	r->copied = true;
out:
	if (there >= 0)
		close(there);
	target_files_free(tf);
	close(fd);
	return err;
}

/* Where to call: dlopen in the C library (glibc >= 2.34), else in
 * libdl; and the C library's rt_sigreturn. */
static int find_calls(pid_t pid, uint64_t *ret_dlopen, uint64_t *ret_sigreturn, struct diag *d)
{
	static const char *const libc[] = { "libc.so.", "libc-2.", NULL };
	static const char *const libdl[] = { "libdl.so.", "libdl-2.", NULL };
	struct remote_module c, dl;
	struct diag md; /* remote_module_find's own line, kept for other errors */
	int err;

	diag_clear(&md);
	err = remote_module_find(pid, libc, &c, &md);
	if (err == -EACCES || err == -EPERM)
		return proc_explain_access(pid, -EPERM, "an attach", PROC_ACCESS_ATTACH, d);
	if (err == -ENOENT && kill(pid, 0) < 0 && errno == ESRCH)
		return diag_set(d, -ESRCH, "no process with PID %d", (int)pid);
	if (err == -ENOENT)
		return diag_set(d, -ENOEXEC,
				"process %d has no C library mapped (a static binary?): nprof attach "
				"needs the dynamic loader to load the agent; start it with "
				"LD_PRELOAD=libnprof.so instead",
				(int)pid);
	if (err < 0)
		return diag_set(d, err, "%s", md.msg[0] ? md.msg : strerror(-err));
	err = remote_symbol(pid, &c, "dlopen", ret_dlopen, d);
	if (err == -ENOENT && remote_module_find(pid, libdl, &dl, d) == 0)
		err = remote_symbol(pid, &dl, "dlopen", ret_dlopen, d);
	if (err == -ENOENT)
		return diag_set(d, -ENOEXEC,
				"process %d has no dlopen (a C library before glibc 2.34 keeps it in "
				"libdl.so.2, which it has not loaded): start it with "
				"LD_PRELOAD=libnprof.so instead",
				(int)pid);
	if (err < 0)
		return err;
	err = remote_code_find(pid, &c, SIGRETURN, sizeof(SIGRETURN), ret_sigreturn, d);
	if (err == -ENOENT)
		return diag_set(d, -ENOEXEC, "%s (in process %d) has no rt_sigreturn trampoline",
				c.path, (int)pid);
	return err;
}

int agent_load(pid_t pid, const char *lib, int (*answers)(void *ctx, pid_t pid),
	       struct agent_load *r, struct diag *d)
{
	static const char *const agent[] = { "libnprof.so", "nprof-agent-", NULL };
	struct remote_module m;
	struct inject_call c = { .string = "", .done = answers };
	int err;

	memset(r, 0, sizeof(*r));
	err = find_calls(pid, &c.func, &c.sigreturn, d);
	if (err < 0)
		return err;
	if (remote_module_find(pid, agent, &m, NULL) == 0) {
		/* Loaded once, detached since: bring its control back. */
		snprintf(r->path, sizeof(r->path), "%s", m.path);
		err = remote_symbol(pid, &m, "nprof_control_start", &c.func, d);
		if (err < 0)
			return err == -ENOENT ? diag_set(d, -ENOEXEC,
							  "%s in process %d is not nprof's agent",
							  m.path, (int)pid) : err;
		r->resumed = true;
		return inject_call(pid, &c, &r->call, d);
	}
	err = visible_path(pid, lib, r, d);
	if (err < 0)
		return err;
	c.string = r->path;
	c.arg1 = RTLD_LAZY;
	err = inject_call(pid, &c, &r->call, d);
	if (err < 0)
		return err;
	if (r->call.finished && remote_module_find(pid, agent, &m, NULL) != 0)
		return diag_set(d, -ENOEXEC,
				"dlopen(\"%s\") failed inside process %d: the library or one of its "
				"dependencies is missing or unreadable for it (ldd %s, as the "
				"process's user and in its filesystem)",
				r->path, (int)pid, lib);
	return 0;
}
