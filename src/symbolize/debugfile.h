/* debugfile: finding the separate debug file of a stripped binary.
 *
 * Lookup order (the same as gdb's and perf's):
 *  1. by build-id: /usr/lib/debug/.build-id/xx/yyyy.debug, accepted when
 *     its own build-id matches;
 *  2. by .gnu_debuglink NAME: DIR/NAME, DIR/.debug/NAME and
 *     /usr/lib/debug/DIR/NAME, where DIR is the binary's directory,
 *     accepted when the file's CRC32 matches the link's (and its build-id,
 *     when both files have one).
 * Each path is tried in the target's world (its root and mount namespace,
 * so a container's own debug files are found: opened with no more rights
 * than its user's, base/target_files.h) and then on the host -- but when
 * nprof has more rights than the target's user, on the host only under
 * /usr/lib/debug, which root arranges: DIR is the user's. A debuglink
 * with a '/' in it is not followed. Only regular files are opened. */
#ifndef NPROF_SYMBOLIZE_DEBUGFILE_H
#define NPROF_SYMBOLIZE_DEBUGFILE_H

#include <libelf.h>

#include "symbolize/elf_symtab.h"

/* Files larger than this are not CRC-checked (and so not used through a
 * debuglink): reading gigabytes to name a frame is not worth it. */
#define DEBUGFILE_MAX_CRC_SIZE (2ull << 30)

struct debugfile {
	int fd;
	Elf *elf;
	char *path;	/* as opened */
};

struct target_files;

/* Finds the debug file for the binary at bin_path (as the target names
 * it), whose facts are bin. tf is the target's world, or NULL (this
 * host's alone). On success fills ret (release with debugfile_close).
 * -ENOENT when there is none. */
int debugfile_find(struct target_files *tf, const char *bin_path,
		   const struct elf_info *bin, struct debugfile *ret);

void debugfile_close(struct debugfile *f);

/* zlib's CRC32 of the whole file open as fd, as .gnu_debuglink uses. */
int debugfile_crc32(int fd, uint32_t *ret_crc);

#endif
