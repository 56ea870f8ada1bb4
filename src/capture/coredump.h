/* coredump: an ELF core file of a running process that goes on running
 * (nprof dump; the daemon's "Heap" button for native processes), which
 * `gdb PROGRAM CORE` and `eu-stack --core CORE` open with every thread's
 * stack.
 *
 * Sequence: read /proc/PID/smaps, auxv, cmdline, stat (nothing stopped
 * yet); estimate the size and refuse when the file system cannot hold it;
 * stop every thread (PTRACE_SEIZE + PTRACE_INTERRUPT, rescanning the task
 * list until no new thread appears: stopped threads create none); copy
 * each thread's registers (general, FP, xstate); re-read the maps; write
 * the notes and copy the selected mappings straight into the file
 * (process_vm_readv, all-zero pages left as holes); release every thread.
 * The pause is that stop-to-release window, and is reported. No SIGSTOP is
 * sent: if nprof dies while writing the core file the kernel detaches the
 * threads and they run on (the file is then incomplete).
 *
 * Layout, as the kernel writes it: ELF header, PT_NOTE then one PT_LOAD
 * per mapping (p_filesz 0 for those not copied), notes per thread
 * (NT_PRSTATUS, NT_FPREGSET, NT_X86_XSTATE; the main thread first, with
 * NT_PRPSINFO, NT_AUXV and NT_FILE), then the memory, page-aligned.
 *
 * Which mappings are copied, like the kernel's default coredump_filter
 * (0x33): anonymous ones (heap, stacks, [anon:...], shared memory, memfd),
 * writable ones, private file mappings the process has written to (COW
 * pages: .data, RELRO, where the dynamic linker's r_debug and link map
 * live), the vDSO, and the first page of every ELF file mapped from offset
 * 0 (build-ids). With all_mappings, every readable mapping. Never: PROT_NONE
 * guard regions, [vvar], [vsyscall], VM_IO and MADV_DONTDUMP ranges. */
#ifndef NPROF_CAPTURE_COREDUMP_H
#define NPROF_CAPTURE_COREDUMP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/diag.h"

struct coredump_options {
	bool all_mappings; /* every readable mapping, file-backed text included */
};

struct coredump_result {
	uint64_t pause_ns;	   /* threads stopped, first stop to last release */
	uint64_t total_ns;	   /* the whole call */
	uint64_t estimate_bytes;   /* the size checked against free space */
	uint64_t file_bytes;	   /* the core's size (holes included) */
	uint64_t data_bytes;	   /* memory bytes actually written */
	uint64_t unreadable_bytes; /* selected but not readable: left as zeros */
	unsigned nthreads;	   /* threads in the core */
	unsigned threads_gone;	   /* exited before they could be stopped */
	unsigned nmappings, ndumped; /* PT_LOADs, and those with contents */
};

/* Writes the core of pid to path (created 0600, replaced if it exists).
 * Fails (-errno; d names the cause and the fix) when: no such process
 * (-ESRCH), not permitted (-EACCES reading its memory map, -EPERM
 * stopping its threads, as proc_explain_access says),
 * the file would not fit (-ENOSPC, checked before anything is stopped;
 * nothing is written), or writing failed (the partial file is removed).
 * Every thread is released on every path. */
int coredump_write(pid_t pid, const char *path, const struct coredump_options *o,
		   struct coredump_result *ret, struct diag *d);

#endif
