/* vdso: the image of a process's [vdso] mapping.
 *
 * The vDSO is not a file: its ELF image exists only in memory. It is read
 * from the target with process_vm_readv, or /proc/PID/mem; when neither
 * is allowed, our own vDSO stands in when it has the same size, since one
 * kernel gives every native process the same image. */
#ifndef NPROF_SYMBOLIZE_VDSO_H
#define NPROF_SYMBOLIZE_VDSO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A vDSO is two to four pages; anything far larger is not one. */
#define VDSO_MAX_SIZE (1u << 20)

/* Reads len bytes at start in pid into a malloc'd buffer. */
int vdso_read(pid_t pid, uint64_t start, uint64_t len, char **ret_image);

#endif
