#include "symbolize/debugfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/target_files.h"

#define MAX_TRIED 16

struct search {
	struct target_files *tf; /* the binary's world, or NULL: this host's */
	const struct elf_info *bin;
	struct { dev_t dev; ino_t ino; } tried[MAX_TRIED];
	unsigned ntried;
};

void debugfile_close(struct debugfile *f)
{
	if (!f)
		return;
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	free(f->path);
	f->elf = NULL;
	f->fd = -1;
	f->path = NULL;
}

int debugfile_crc32(int fd, uint32_t *ret_crc)
{
	struct stat st;
	void *map;
	uLong crc = crc32(0L, Z_NULL, 0);
	size_t off = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	if ((uint64_t)st.st_size > DEBUGFILE_MAX_CRC_SIZE)
		return -EFBIG;
	if (st.st_size == 0) {
		*ret_crc = (uint32_t)crc;
		return 0;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	while (off < (size_t)st.st_size) {
		size_t n = (size_t)st.st_size - off;

		if (n > (1u << 30))
			n = 1u << 30;
		crc = crc32(crc, (const Bytef *)map + off, (uInt)n);
		off += n;
	}
	munmap(map, (size_t)st.st_size);
	*ret_crc = (uint32_t)crc;
	return 0;
}

/* Checks that the file open as fd (which this takes), found at path, is
 * the debug file we want; by_crc says the match is through the debuglink
 * CRC rather than the build-id. */
static int try_fd(struct search *s, int fd, const char *path, bool by_crc,
		  struct debugfile *ret)
{
	struct elf_info info;
	struct stat st;
	Elf *elf = NULL;
	int err = -ENOENT;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		goto out;
	/* The same file seen through the target's root and the host's is
	 * checked once. */
	for (unsigned i = 0; i < s->ntried; i++)
		if (s->tried[i].dev == st.st_dev && s->tried[i].ino == st.st_ino)
			goto out;
	if (s->ntried < MAX_TRIED) {
		s->tried[s->ntried].dev = st.st_dev;
		s->tried[s->ntried].ino = st.st_ino;
		s->ntried++;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_read_info(elf, &info) < 0 || !info.has_symtab)
		goto out;
	if (s->bin->build_id_len && info.build_id_len &&
	    (info.build_id_len != s->bin->build_id_len ||
	     memcmp(info.build_id, s->bin->build_id, info.build_id_len)))
		goto out;
	if (!by_crc && !info.build_id_len)
		goto out;
	if (by_crc) {
		uint32_t crc;

		if (debugfile_crc32(fd, &crc) < 0 || crc != s->bin->debuglink_crc)
			goto out;
	}
	err = -ENOMEM;
	ret->path = strdup(path);
	if (!ret->path)
		goto out;
	ret->fd = fd;
	ret->elf = elf;
	return 0;
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

/* Whether path is under the system's debug directory: root's to arrange
 * on this host, so root may look there for anyone. */
static bool in_system_debug_dir(const char *path)
{
	return !strncmp(path, "/usr/lib/debug/", 15);
}

/* Tries path in the binary's world (as its user may), then on this host;
 * but when nprof has more rights than the binary's user, on this host
 * only under the system's debug directory: a path like DIR/NAME is theirs
 * to point anywhere. */
static int try_rooted(struct search *s, const char *path, bool by_crc,
		      struct debugfile *ret)
{
	int fd, err;

	if (s->tf) {
		fd = target_files_open(s->tf, path);
		if (fd >= 0) {
			err = try_fd(s, fd, path, by_crc, ret);
			if (err != -ENOENT)
				return err;
		}
		if (target_files_privileged(s->tf) && !in_system_debug_dir(path))
			return -ENOENT;
	}
	fd = target_files_open_host(path, false);
	return fd < 0 ? -ENOENT : try_fd(s, fd, path, by_crc, ret);
}

int debugfile_find(struct target_files *tf, const char *bin_path,
		   const struct elf_info *bin, struct debugfile *ret)
{
	struct search s = { .tf = tf, .bin = bin };
	char rel[PATH_MAX], dir[PATH_MAX];
	const char *slash;
	int err = -ENOENT;

	ret->fd = -1;
	ret->elf = NULL;
	ret->path = NULL;
	if (bin->build_id_len >= 2) {
		int n = snprintf(rel, sizeof(rel), "/usr/lib/debug/.build-id/%02x/",
				 bin->build_id[0]);

		for (size_t i = 1; i < bin->build_id_len; i++)
			n += snprintf(rel + n, sizeof(rel) - (size_t)n, "%02x",
				      bin->build_id[i]);
		snprintf(rel + n, sizeof(rel) - (size_t)n, ".debug");
		err = try_rooted(&s, rel, false, ret);
		if (err != -ENOENT)
			goto out;
	}
	/* MiniDebugInfo (.gnu_debugdata, an xz-compressed ELF holding a
	 * .symtab) would be tried here, before the debuglink: it needs
	 * liblzma, which the build does not link yet. */
	/* A debuglink is a file name: one with a '/' would lead out of the
	 * directories below, to wherever the binary's author chose. */
	if (!bin->debuglink[0] || strchr(bin->debuglink, '/') || !bin_path ||
	    bin_path[0] != '/')
		goto out;
	slash = strrchr(bin_path, '/');
	if ((size_t)(slash - bin_path) >= sizeof(dir))
		goto out;
	memcpy(dir, bin_path, (size_t)(slash - bin_path));
	dir[slash - bin_path] = '\0';
	for (unsigned i = 0; i < 3; i++) {
		int n;

		if (i == 0)
			n = snprintf(rel, sizeof(rel), "%s/%s", dir, bin->debuglink);
		else if (i == 1)
			n = snprintf(rel, sizeof(rel), "%s/.debug/%s", dir,
				     bin->debuglink);
		else
			n = snprintf(rel, sizeof(rel), "/usr/lib/debug%s/%s", dir,
				     bin->debuglink);
		if (n < 0 || n >= (int)sizeof(rel))
			continue;
		/* The debuglink of a binary must not lead back to itself (a
		 * CRC would fail anyway; this saves reading it). */
		if (!strcmp(rel, bin_path))
			continue;
		err = try_rooted(&s, rel, true, ret);
		if (err != -ENOENT)
			goto out;
	}
out:
	return err;
}
