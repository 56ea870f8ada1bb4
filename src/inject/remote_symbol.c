#include "inject/remote_symbol.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/proc.h"
#include "base/target_files.h"

static bool name_has_prefix(const char *path, const char *prefix)
{
	const char *base = strrchr(path, '/');

	return !strncmp(base ? base + 1 : path, prefix, strlen(prefix));
}

/* Calls found(ctx, mapping, path) for each file mapping until it
 * returns true: 1 then, 0 when none did, or -errno (proc_maps_read). */
static int each_mapping(pid_t pid,
			bool (*found)(void *ctx, const struct remote_mapping *m, const char *path),
			void *ctx)
{
	struct proc_map_line l;
	const char *p;
	char *buf;
	size_t len;
	int r = proc_maps_read(pid, &buf, &len);

	if (r < 0)
		return r;
	p = buf;
	while (!r && proc_maps_next(&p, buf + len, &l)) {
		struct remote_mapping m = { l.start, l.end, l.offset, l.inode };
		char *path = buf + (l.path - buf);

		if (!l.path_len || *path != '/')
			continue;
		path[l.path_len] = '\0'; /* its newline, or the text's NUL */
		r = found(ctx, &m, path);
	}
	free(buf);
	return r;
}

struct find_ctx {
	const char *const *prefixes;
	struct remote_module *m;
};

static bool match_module(void *arg, const struct remote_mapping *m, const char *path)
{
	struct find_ctx *c = arg;

	if (m->offset != 0 || strstr(path, " (deleted)"))
		return false;
	for (const char *const *p = c->prefixes; *p; p++)
		if (name_has_prefix(path, *p)) {
			snprintf(c->m->path, sizeof(c->m->path), "%s", path);
			c->m->map = *m;
			return true;
		}
	return false;
}

/* The ELF file of module m of pid, in *ret_e (with its fd): the mapped
 * file itself (target_files.h), never a path root resolves in the
 * process's world. */
static int open_elf(pid_t pid, const struct remote_module *m, Elf **ret_e, int *ret_fd,
		    struct diag *d)
{
	struct target_files *tf = target_files_new(pid);
	const char *path = m->path;
	Elf *e;

	if (!tf)
		return diag_set(d, -errno, "cannot read /proc/%d/status: %s", (int)pid,
				strerror(errno));
	*ret_fd = target_files_open_mapped(tf, m->map.start, m->map.end, m->map.inode, path);
	target_files_free(tf);
	if (*ret_fd < 0)
		return diag_set(d, *ret_fd, "cannot read %s as process %d maps it: %s", path,
				(int)pid, strerror(-*ret_fd));
	elf_version(EV_CURRENT);
	e = elf_begin(*ret_fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		close(*ret_fd);
		return diag_set(d, -EINVAL, "%s (in process %d) is not an ELF file", path,
				(int)pid);
	}
	*ret_e = e;
	return 0;
}

int remote_elf_load_base(Elf *e, uint64_t *ret)
{
	size_t n;
	uint64_t lo = UINT64_MAX;

	if (elf_getphdrnum(e, &n) != 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < lo)
			lo = ph.p_vaddr;
	}
	if (lo == UINT64_MAX)
		return -EINVAL;
	*ret = lo & ~(uint64_t)4095;
	return 0;
}

int remote_module_find(pid_t pid, const char *const *prefixes,
		       struct remote_module *ret, struct diag *d)
{
	struct find_ctx c = { .prefixes = prefixes, .m = ret };
	uint64_t vaddr = 0;
	int r = each_mapping(pid, match_module, &c), fd;
	Elf *e;

	if (r < 0)
		return proc_maps_explain(pid, r, d);
	if (r == 0)
		return -ENOENT;
	r = open_elf(pid, ret, &e, &fd, d);
	if (r < 0)
		return r;
	r = remote_elf_load_base(e, &vaddr);
	elf_end(e);
	close(fd);
	if (r < 0)
		return diag_set(d, r, "%s (in process %d) has no loadable segment", ret->path,
				(int)pid);
	ret->bias = ret->map.start - vaddr;
	return 0;
}

int remote_elf_symbol(Elf *e, const char *name, uint64_t *ret_value)
{
	Elf_Scn *scn = NULL;
	Elf_Data *syms = NULL, *versym = NULL;
	size_t strndx = 0, count = 0;
	uint64_t found = 0;
	bool found_default = false;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNSYM && sh.sh_entsize) {
			syms = elf_getdata(scn, NULL);
			strndx = sh.sh_link;
			count = sh.sh_size / sh.sh_entsize;
		} else if (sh.sh_type == SHT_GNU_versym) {
			versym = elf_getdata(scn, NULL);
		}
	}
	for (size_t i = 0; syms && i < count; i++) {
		GElf_Sym sym;
		const char *sn;
		bool hidden = false;

		if (!gelf_getsym(syms, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
		    GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    (GELF_ST_BIND(sym.st_info) != STB_GLOBAL && GELF_ST_BIND(sym.st_info) != STB_WEAK))
			continue;
		sn = elf_strptr(e, strndx, sym.st_name);
		if (!sn || strcmp(sn, name))
			continue;
		if (versym && versym->d_buf && (i + 1) * sizeof(uint16_t) <= versym->d_size)
			hidden = ((const uint16_t *)versym->d_buf)[i] & 0x8000;
		/* The default version wins; a hidden (compat) one only when
		 * there is nothing else. */
		if (!found || (!hidden && !found_default)) {
			found = sym.st_value;
			found_default = !hidden;
		}
	}
	if (!found)
		return -ENOENT;
	*ret_value = found;
	return 0;
}

int remote_symbol(pid_t pid, const struct remote_module *m, const char *name,
		  uint64_t *ret_addr, struct diag *d)
{
	uint64_t value;
	int fd, r;
	Elf *e;

	r = open_elf(pid, m, &e, &fd, d);
	if (r < 0)
		return r;
	r = remote_elf_symbol(e, name, &value);
	elf_end(e);
	close(fd);
	if (r == 0)
		*ret_addr = m->bias + value;
	return r;
}

int remote_elf_code_find(Elf *e, const uint8_t *bytes, size_t n, uint64_t *ret_vaddr)
{
	const uint8_t *raw;
	size_t nph, size;

	raw = (const uint8_t *)elf_rawfile(e, &size);
	if (!raw || elf_getphdrnum(e, &nph) != 0)
		return -ENOENT;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		const uint8_t *at;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X) || ph.p_offset > size ||
		    ph.p_filesz > size - ph.p_offset)
			continue;
		at = memmem(raw + ph.p_offset, ph.p_filesz, bytes, n);
		if (at) {
			*ret_vaddr = ph.p_vaddr + (uint64_t)(at - raw - ph.p_offset);
			return 0;
		}
	}
	return -ENOENT;
}

int remote_code_find(pid_t pid, const struct remote_module *m,
		     const uint8_t *bytes, size_t n, uint64_t *ret_addr,
		     struct diag *d)
{
	uint64_t vaddr;
	int fd, r;
	Elf *e;

	r = open_elf(pid, m, &e, &fd, d);
	if (r < 0)
		return r;
	r = remote_elf_code_find(e, bytes, n, &vaddr);
	elf_end(e);
	close(fd);
	if (r == 0)
		*ret_addr = m->bias + vaddr;
	return r;
}
