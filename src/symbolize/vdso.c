#include "symbolize/vdso.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/uio.h>
#include <unistd.h>

static int read_vm(pid_t pid, uint64_t start, char *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)start, len };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len
		       ? 0 : -EIO;
}

static int read_mem(pid_t pid, uint64_t start, char *buf, size_t len)
{
	char path[64];
	int fd, err = -EIO;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (pread(fd, buf, len, (off_t)start) == (ssize_t)len)
		err = 0;
	close(fd);
	return err;
}

/* Our own vDSO, when it has the target's size. Its size is not in the
 * auxv; the ELF header's section table ends the image in practice, so
 * compare against that. */
static int read_own(uint64_t len, char *buf)
{
	const unsigned char *self = (const void *)getauxval(AT_SYSINFO_EHDR);
	uint64_t shoff, end;
	uint16_t shentsize, shnum;

	if (!self || memcmp(self, "\177ELF", 4) || self[4] != 2 /* 64-bit */)
		return -ENOENT;
	memcpy(&shoff, self + 0x28, 8);
	memcpy(&shentsize, self + 0x3a, 2);
	memcpy(&shnum, self + 0x3c, 2);
	end = shoff + (uint64_t)shentsize * shnum;
	if (end > len)
		return -ENOENT;
	memcpy(buf, self, end);
	memset(buf + end, 0, len - end);
	return 0;
}

int vdso_read(pid_t pid, uint64_t start, uint64_t len, char **ret_image)
{
	char *buf;
	int err;

	if (len == 0 || len > VDSO_MAX_SIZE)
		return -EINVAL;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	err = read_vm(pid, start, buf, len);
	if (err < 0)
		err = read_mem(pid, start, buf, len);
	if (err < 0)
		err = read_own(len, buf);
	if (err < 0) {
		free(buf);
		return err;
	}
	*ret_image = buf;
	return 0;
}
