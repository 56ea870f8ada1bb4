/* coredump: a core of a forked child with two threads, read back with
 * plain ELF parsing: ET_CORE, one NT_PRSTATUS per thread with the right
 * tids and a stack pointer inside a copied PT_LOAD, NT_PRPSINFO, NT_AUXV,
 * NT_FILE; a known global string read back at its own address; the child
 * runs on untraced; a missing PID writes nothing. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/procfs.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/coredump.h"
#include "test.h"

/* Written by the child after fork: same address in the parent's view. */
static char marker[64];

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static const Elf64_Phdr *load_at(const uint8_t *core, const Elf64_Ehdr *eh, uint64_t addr)
{
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(core + eh->e_phoff);

	for (unsigned i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && addr >= ph[i].p_vaddr &&
		    addr < ph[i].p_vaddr + ph[i].p_filesz)
			return &ph[i];
	return NULL;
}

int main(void)
{
	char path[] = "/tmp/nprof-coredump-test.XXXXXX";
	struct coredump_result r;
	struct diag d;
	int ready[2], fd;
	pid_t child, tid2 = 0;
	char c;

	diag_clear(&d);
	CHECK(coredump_write(999999, "/tmp/nprof-coredump-none", NULL, &r, &d) == -ESRCH &&
		      access("/tmp/nprof-coredump-none", F_OK) < 0,
	      "a missing PID: -ESRCH, no file (%s)", d.msg);

	if (pipe(ready))
		return 1;
	child = fork();
	if (child == 0) {
		pthread_t t;

		snprintf(marker, sizeof(marker), "coredump-marker-%d", (int)getpid());
		pthread_create(&t, NULL, sleeper, NULL);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	if (read(ready[0], &c, 1) != 1)
		return 1;
	usleep(50000);
	fd = mkstemp(path);
	close(fd);

	diag_clear(&d);
	CHECK(coredump_write(child, path, NULL, &r, &d) == 0, "core written (%s)", d.msg);
	CHECK(r.nthreads == 2 && r.pause_ns > 0 && r.file_bytes > 0 && r.data_bytes > 0,
	      "2 threads, pause %llu ns, %llu bytes", (unsigned long long)r.pause_ns,
	      (unsigned long long)r.file_bytes);

	{
		char status[64], buf[256];
		FILE *f;
		bool free_ = true;

		snprintf(status, sizeof(status), "/proc/%d/status", (int)child);
		f = fopen(status, "r");
		while (f && fgets(buf, sizeof(buf), f))
			if (!strncmp(buf, "TracerPid:", 10) && atoi(buf + 10) != 0)
				free_ = false;
		if (f)
			fclose(f);
		CHECK(free_ && kill(child, 0) == 0, "the child runs on, untraced");
	}

	{
		struct stat st;
		int cfd = open(path, O_RDONLY);
		uint8_t *core;
		const Elf64_Ehdr *eh;
		const Elf64_Phdr *ph, *note = NULL;
		unsigned nprstatus = 0, npsinfo = 0, nauxv = 0, nfile = 0, sp_ok = 0;
		bool main_first = false;

		if (cfd < 0 || fstat(cfd, &st) < 0)
			return 1;
		core = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, cfd, 0);
		close(cfd);
		CHECK(core != MAP_FAILED, "core mapped");
		if (core == MAP_FAILED)
			return test_done();
		eh = (const Elf64_Ehdr *)core;
		CHECK(!memcmp(eh->e_ident, ELFMAG, SELFMAG) && eh->e_type == ET_CORE &&
			      eh->e_machine == EM_X86_64,
		      "an x86-64 ELF core");
		CHECK((uint64_t)st.st_size == r.file_bytes, "the file is as large as reported");
		ph = (const Elf64_Phdr *)(core + eh->e_phoff);
		for (unsigned i = 0; i < eh->e_phnum; i++)
			if (ph[i].p_type == PT_NOTE)
				note = &ph[i];
		CHECK(note && ph[0].p_type == PT_NOTE, "PT_NOTE first");
		for (size_t off = note ? note->p_offset : 0;
		     note && off + sizeof(Elf64_Nhdr) <= note->p_offset + note->p_filesz;) {
			const Elf64_Nhdr *nh = (const Elf64_Nhdr *)(core + off);
			const uint8_t *desc = core + off + sizeof(*nh) + ((nh->n_namesz + 3) & ~3u);

			if (nh->n_type == NT_PRSTATUS && nh->n_descsz == sizeof(struct elf_prstatus)) {
				const struct elf_prstatus *ps = (const void *)desc;
				const struct user_regs_struct *regs = (const void *)&ps->pr_reg;

				if (!nprstatus)
					main_first = ps->pr_pid == child;
				else
					tid2 = ps->pr_pid;
				nprstatus++;
				sp_ok += load_at(core, eh, regs->rsp) != NULL;
			}
			npsinfo += nh->n_type == NT_PRPSINFO;
			nauxv += nh->n_type == NT_AUXV;
			nfile += nh->n_type == NT_FILE;
			off += sizeof(*nh) + ((nh->n_namesz + 3) & ~3u) + ((nh->n_descsz + 3) & ~3u);
		}
		CHECK(nprstatus == 2 && main_first && tid2 > child,
		      "one NT_PRSTATUS per thread, the main thread first");
		CHECK(sp_ok == 2, "every thread's stack pointer is in a copied PT_LOAD");
		CHECK(npsinfo == 1 && nauxv == 1 && nfile == 1, "NT_PRPSINFO, NT_AUXV, NT_FILE once each");
		{
			const Elf64_Phdr *l = load_at(core, eh, (uint64_t)(uintptr_t)marker);
			char want[64];

			snprintf(want, sizeof(want), "coredump-marker-%d", (int)child);
			CHECK(l && !strcmp((const char *)core + l->p_offset +
						   ((uint64_t)(uintptr_t)marker - l->p_vaddr),
					   want),
			      "the child's global string is in the core at its address");
		}
		munmap(core, (size_t)st.st_size);
	}
	{
		struct stat st;

		CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "the core is mode 0600");
	}
	unlink(path);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return test_done();
}
