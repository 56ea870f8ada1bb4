/* unwind_table: ELF sections to a cfi_table, and the build-id cache.
 * libelf does the ELF parsing; the CFI bytes go to cfi.c, which trusts
 * nothing. */
#include "unwind/unwind_table.h"
#include "base/array.h"
#include "base/target_files.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SECTION (256u << 20) /* a .eh_frame bigger than this is not real */

struct elf_src {
	int fd;
	Elf *elf;
};

/* Where an ELF comes from: a file by path, a descriptor (kept by the
 * caller: another process's file, opened as base/target_files.h says),
 * or an image in memory. */
struct elf_input {
	const char *path;
	int fd;
	const void *image;
	size_t size;
};

static int elf_src_open(const struct elf_input *in, struct elf_src *ret)
{
	struct elf_src s = { -1, NULL };
	GElf_Ehdr eh;
	int err = 0;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOTSUP;
	if (in->path || in->fd >= 0) {
		/* A regular file only: a FIFO at a module's path (its
		 * owner may bind one there) would hold the open for ever. */
		s.fd = in->path ? target_files_open_host(in->path, false)
				: fcntl(in->fd, F_DUPFD_CLOEXEC, 0);
		if (s.fd < 0)
			return in->path ? s.fd : -errno;
		s.elf = elf_begin(s.fd, ELF_C_READ_MMAP, NULL);
	} else {
		/* libelf takes char *; ELF_C_READ never writes through it. */
		s.elf = elf_memory((char *)(uintptr_t)in->image, in->size);
	}
	if (!s.elf) {
		err = -EINVAL;
		goto out;
	}
	if (elf_kind(s.elf) != ELF_K_ELF || !gelf_getehdr(s.elf, &eh) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
		err = -ENOEXEC;
		goto out;
	}
	*ret = s;
	return 0;
out:
	if (s.elf)
		elf_end(s.elf);
	if (s.fd >= 0)
		close(s.fd);
	return err;
}

static void elf_src_close(struct elf_src *s)
{
	if (s->elf)
		elf_end(s->elf);
	if (s->fd >= 0)
		close(s->fd);
	s->elf = NULL;
	s->fd = -1;
}

static Elf_Scn *find_section(Elf *elf, const char *name, GElf_Shdr *ret_sh)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, ret_sh))
			continue;
		n = elf_strptr(elf, shstrndx, ret_sh->sh_name);
		if (n && !strcmp(n, name))
			return ret_sh->sh_type == SHT_NOBITS ? NULL : scn;
	}
	return NULL;
}

/* A section's bytes, decompressed when SHF_COMPRESSED. */
static int section_bytes(Elf *elf, const char *name, enum cfi_section_kind kind,
			 struct cfi_section *ret)
{
	GElf_Shdr sh;
	Elf_Scn *scn = find_section(elf, name, &sh);
	Elf_Data *d;

	if (!scn)
		return -ENOENT;
	if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
		return -EINVAL;
	d = elf_rawdata(scn, NULL);
	if (!d || !d->d_buf || !d->d_size)
		return -ENOENT;
	if (d->d_size > MAX_SECTION)
		return -E2BIG;
	memset(ret, 0, sizeof(*ret));
	ret->kind = kind;
	ret->data = d->d_buf;
	ret->size = d->d_size;
	ret->addr = sh.sh_addr;
	return 0;
}

static void read_build_id(Elf *elf, uint8_t *id, unsigned *ret_len)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	*ret_len = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + noff, "GNU", 4) && nh.n_descsz &&
			    nh.n_descsz <= UNWIND_BUILD_ID_MAX) {
				memcpy(id, (char *)d->d_buf + doff, nh.n_descsz);
				*ret_len = nh.n_descsz;
				return;
			}
		}
	}
}

static void read_segments(Elf *elf, struct unwind_table *t, uint64_t *ret_lo,
			  uint64_t *ret_hi)
{
	size_t n = 0;
	uint64_t lo = UINT64_MAX, hi = 0;

	t->nseg = 0;
	if (elf_getphdrnum(elf, &n))
		n = 0;
	for (size_t i = 0; i < n && t->nseg < UNWIND_MAX_SEGS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		t->segs[t->nseg++] = (struct unwind_seg){
			.vaddr = ph.p_vaddr, .offset = ph.p_offset,
			.filesz = ph.p_filesz, .memsz = ph.p_memsz, .flags = ph.p_flags,
		};
		if ((ph.p_flags & PF_X) && ph.p_vaddr + ph.p_memsz > ph.p_vaddr) {
			lo = ph.p_vaddr < lo ? ph.p_vaddr : lo;
			hi = ph.p_vaddr + ph.p_memsz > hi ? ph.p_vaddr + ph.p_memsz : hi;
		}
	}
	*ret_lo = lo < hi ? lo : 0;
	*ret_hi = lo < hi ? hi : 0;
}

/* ---- lazy tables ---- */

#define LAZY_MAX_FDES 65536 /* FDEs built per table; past it, no rows */

struct lazy_fde {
	uint64_t off;		/* of the FDE in .eh_frame */
	struct cfi_table *rows;	/* NULL: none usable */
};

struct unwind_lazy {
	pthread_mutex_t lock;	/* guards v, n, cap */
	struct elf_src src;	/* keeps the sections below mapped */
	struct cfi_section eh;
	struct cfi_hdr_index ix;
	struct cfi_limits lim;
	struct lazy_fde *v;	/* sorted by off */
	size_t n, cap;
};

static void lazy_free(struct unwind_lazy *z)
{
	if (!z)
		return;
	for (size_t i = 0; i < z->n; i++)
		cfi_table_free(z->v[i].rows);
	free(z->v);
	elf_src_close(&z->src);
	pthread_mutex_destroy(&z->lock);
	free(z);
}

/* Makes t lazy over the file open as *src (taken from the caller on
 * success): 0, or -ENOTSUP when the file is not one a lazy table can
 * serve as the whole build would. */
static int lazy_open(struct elf_src *src, const struct cfi_limits *lim,
		     struct unwind_table *t)
{
	struct cfi_section hdr, dbg;
	struct unwind_lazy *z;

	if (section_bytes(src->elf, ".eh_frame_hdr", CFI_EH_FRAME, &hdr) ||
	    !section_bytes(src->elf, ".debug_frame", CFI_DEBUG_FRAME, &dbg))
		return -ENOTSUP;
	z = calloc(1, sizeof(*z));
	if (!z)
		return -ENOMEM;
	if (section_bytes(src->elf, ".eh_frame", CFI_EH_FRAME, &z->eh) ||
	    cfi_hdr_index_init(hdr.data, hdr.size, hdr.addr, &z->ix) || !z->ix.n) {
		free(z);
		return -ENOTSUP;
	}
	pthread_mutex_init(&z->lock, NULL);
	z->lim = *lim;
	z->src = *src;
	src->fd = -1;
	src->elf = NULL;
	/* The sections are in libelf's mapping of the file (or its copy),
	 * which elf_end alone undoes: the descriptor can go, so that a
	 * process mapping a thousand libraries costs no thousand open
	 * files. */
	elf_cntl(z->src.elf, ELF_C_FDDONE);
	close(z->src.fd);
	z->src.fd = -1;
	t->lazy = z;
	t->sources = UNWIND_SRC_EH_FRAME;
	t->cfi_err = 0;
	return 0;
}

static bool fde_find(const struct unwind_lazy *z, uint64_t off, size_t *ret_at)
{
	size_t lo = 0, hi = z->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (z->v[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ret_at = lo;
	return lo < z->n && z->v[lo].off == off;
}

const struct cfi_row *unwind_table_find_lazy(const struct unwind_table *t, uint64_t vaddr)
{
	struct unwind_lazy *z = t ? t->lazy : NULL;
	const struct cfi_row *r = NULL;
	struct cfi_table *rows = NULL;
	uint64_t off;
	size_t at;

	if (!z)
		return unwind_table_find(t, vaddr);
	if (cfi_hdr_index_find(&z->ix, &z->eh, vaddr, &off))
		return NULL;
	pthread_mutex_lock(&z->lock);
	if (fde_find(z, off, &at)) {
		rows = z->v[at].rows;
	} else if (z->n < LAZY_MAX_FDES &&
		   !array_reserve(&z->v, &z->cap, z->n + 1, sizeof(*z->v))) {
		/* A broken FDE is remembered as none: asked again, it is not
		 * parsed again. */
		if (cfi_table_build_fde(&z->eh, off, &z->lim, &rows))
			rows = NULL;
		memmove(&z->v[at + 1], &z->v[at], (z->n - at) * sizeof(*z->v));
		z->v[at] = (struct lazy_fde){ off, rows };
		z->n++;
	}
	r = cfi_table_find(rows, vaddr);
	pthread_mutex_unlock(&z->lock);
	return r;
}

unsigned unwind_table_lazy_fdes(const struct unwind_table *t)
{
	unsigned n;

	if (!t || !t->lazy)
		return 0;
	pthread_mutex_lock(&t->lazy->lock);
	n = (unsigned)t->lazy->n;
	pthread_mutex_unlock(&t->lazy->lock);
	return n;
}

/* ---- building ---- */

static int table_build(const struct elf_input *in, const char *debug_path, bool lazy,
		       struct unwind_table **ret_table)
{
	const struct elf_input debug_in = { debug_path, -1, NULL, 0 };
	struct elf_src main_elf = { -1, NULL }, dbg = { -1, NULL };
	struct unwind_table *t = NULL;
	struct cfi_section secs[3];
	unsigned nsec = 0, src[3];
	struct cfi_limits lim;
	int err;

	err = elf_src_open(in, &main_elf);
	if (err)
		goto out;
	t = calloc(1, sizeof(*t));
	if (!t) {
		err = -ENOMEM;
		goto out;
	}
	read_build_id(main_elf.elf, t->build_id, &t->build_id_len);
	memset(&lim, 0, sizeof(lim));
	read_segments(main_elf.elf, t, &lim.lo, &lim.hi);
	if (lazy && !debug_path && main_elf.fd >= 0) {
		err = lazy_open(&main_elf, &lim, t);
		if (err == -ENOMEM)
			goto out;
		err = 0;
		if (t->lazy)
			goto done;
	}
	if (!section_bytes(main_elf.elf, ".eh_frame", CFI_EH_FRAME, &secs[nsec]))
		src[nsec++] = UNWIND_SRC_EH_FRAME;
	if (!section_bytes(main_elf.elf, ".debug_frame", CFI_DEBUG_FRAME, &secs[nsec]))
		src[nsec++] = UNWIND_SRC_DEBUG_FRAME;
	if (debug_path && !elf_src_open(&debug_in, &dbg)) {
		uint8_t id[UNWIND_BUILD_ID_MAX];
		unsigned idlen;

		/* A debug file for another build would describe other code. */
		read_build_id(dbg.elf, id, &idlen);
		if (idlen == t->build_id_len && !memcmp(id, t->build_id, idlen) &&
		    !section_bytes(dbg.elf, ".debug_frame", CFI_DEBUG_FRAME, &secs[nsec]))
			src[nsec++] = UNWIND_SRC_DEBUG_FILE;
	}
	if (!nsec) {
		t->cfi_err = -ENOENT;
	} else {
		t->cfi_err = cfi_table_build(secs, nsec, &lim, &t->cfi);
		if (t->cfi && !t->cfi->n) {
			cfi_table_free(t->cfi);
			t->cfi = NULL;
			t->cfi_err = -ENOENT;
		}
		for (unsigned i = 0; t->cfi && i < nsec; i++)
			t->sources |= src[i];
	}
done:
	*ret_table = t;
	t = NULL;
out:
	elf_src_close(&dbg);
	elf_src_close(&main_elf);
	unwind_table_free(t);
	return err;
}

int unwind_table_probe_fd(int fd)
{
	const struct elf_input in = { NULL, fd, NULL, 0 };
	struct elf_src s;
	GElf_Shdr sh;
	int err = elf_src_open(&in, &s);

	if (err)
		return err;
	/* A section that is there and holds bytes; whether they parse is
	 * for the table to find out. */
	if ((!find_section(s.elf, ".eh_frame", &sh) || !sh.sh_size) &&
	    (!find_section(s.elf, ".debug_frame", &sh) || !sh.sh_size))
		err = -ENOENT;
	elf_src_close(&s);
	return err;
}

int unwind_table_from_elf(const char *path, const char *debug_path,
			  struct unwind_table **ret_table)
{
	const struct elf_input in = { path, -1, NULL, 0 };

	if (!path)
		return -EINVAL;
	return table_build(&in, debug_path, false, ret_table);
}

int unwind_table_from_memory(const void *image, size_t size,
			     struct unwind_table **ret_table)
{
	const struct elf_input in = { NULL, -1, image, size };

	if (!image || !size)
		return -EINVAL;
	return table_build(&in, NULL, false, ret_table);
}

void unwind_table_free(struct unwind_table *t)
{
	if (!t)
		return;
	cfi_table_free(t->cfi);
	lazy_free(t->lazy);
	free(t);
}

int unwind_table_bias(const struct unwind_table *t, uint64_t map_start,
		      uint64_t map_offset, uint64_t *ret_bias)
{
	const uint64_t page = 4096;

	/* Prefer executable segments: a page can hold the end of one
	 * segment and the start of the next. */
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; i < t->nseg; i++) {
			const struct unwind_seg *s = &t->segs[i];

			if (!pass && !(s->flags & PF_X))
				continue;
			if (map_offset < (s->offset & ~(page - 1)) ||
			    map_offset >= s->offset + (s->filesz ? s->filesz : 1))
				continue;
			/* start maps offset map_offset, and the segment maps
			 * p_offset at p_vaddr + bias, congruent mod page. */
			*ret_bias = map_start - map_offset - s->vaddr + s->offset;
			return 0;
		}
	}
	return -ENOENT;
}

/* ---- the cache ---- */

struct cache_entry {
	uint8_t key[UNWIND_BUILD_ID_MAX + 1]; /* [0]: 'b' build-id, 'f' file */
	unsigned keylen;
	struct unwind_table *table;
};

struct unwind_cache {
	pthread_mutex_t lock; /* guards everything below */
	struct cache_entry *v;
	unsigned n, cap;
	unsigned builds;
	bool lazy;		/* unwind_cache_set_lazy */
};

struct unwind_cache *unwind_cache_new(void)
{
	struct unwind_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	return c;
}

void unwind_cache_free(struct unwind_cache *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < c->n; i++)
		unwind_table_free(c->v[i].table);
	free(c->v);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

void unwind_cache_set_lazy(struct unwind_cache *c)
{
	pthread_mutex_lock(&c->lock);
	c->lazy = true;
	pthread_mutex_unlock(&c->lock);
}

bool unwind_cache_is_lazy(struct unwind_cache *c)
{
	bool lazy;

	pthread_mutex_lock(&c->lock);
	lazy = c->lazy;
	pthread_mutex_unlock(&c->lock);
	return lazy;
}

unsigned unwind_cache_builds(const struct unwind_cache *c)
{
	return c ? c->builds : 0;
}

/* The key without building the table: the build-id note, else the
 * file's identity. */
static int make_key(const struct elf_input *in, uint8_t *key, unsigned *ret_len)
{
	struct elf_src s;
	unsigned idlen;
	int err = elf_src_open(in, &s);

	if (err)
		return err;
	read_build_id(s.elf, key + 1, &idlen);
	if (idlen) {
		key[0] = 'b';
		*ret_len = idlen + 1;
	} else if (s.fd >= 0) {
		struct stat st;
		uint64_t f[4];

		if (fstat(s.fd, &st)) {
			err = -errno;
		} else {
			f[0] = st.st_dev;
			f[1] = st.st_ino;
			f[2] = (uint64_t)st.st_size;
			f[3] = (uint64_t)st.st_mtim.tv_sec * 1000000000u +
			       (uint64_t)st.st_mtim.tv_nsec;
			key[0] = 'f';
			memcpy(key + 1, f, sizeof(f));
			*ret_len = 1 + sizeof(f);
		}
	} else {
		err = -ENOENT;
	}
	elf_src_close(&s);
	return err;
}

static int cache_get(struct unwind_cache *c, const struct elf_input *in,
		     const char *debug_path, const struct unwind_table **ret_table)
{
	uint8_t key[UNWIND_BUILD_ID_MAX + 1];
	unsigned keylen = 0;
	struct unwind_table *t = NULL;
	int err;

	err = make_key(in, key, &keylen);
	if (err)
		return err;
	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < c->n; i++) {
		if (c->v[i].keylen == keylen && !memcmp(c->v[i].key, key, keylen)) {
			*ret_table = c->v[i].table;
			goto out;
		}
	}
	if (c->n == c->cap) {
		unsigned cap = c->cap ? c->cap * 2 : 32;
		struct cache_entry *n = realloc(c->v, cap * sizeof(*n));
		if (!n) {
			err = -ENOMEM;
			goto out;
		}
		c->v = n;
		c->cap = cap;
	}
	/* Built under the lock: simple, and two recordings of one process
	 * would otherwise build the same libc twice at the same moment. */
	err = table_build(in, debug_path, c->lazy, &t);
	if (err)
		goto out;
	c->builds++;
	memcpy(c->v[c->n].key, key, keylen);
	c->v[c->n].keylen = keylen;
	c->v[c->n].table = t;
	c->n++;
	*ret_table = t;
out:
	pthread_mutex_unlock(&c->lock);
	return err;
}

int unwind_cache_get(struct unwind_cache *c, const char *path, const char *debug_path,
		     const struct unwind_table **ret_table)
{
	const struct elf_input in = { path, -1, NULL, 0 };

	if (!c || !path)
		return -EINVAL;
	return cache_get(c, &in, debug_path, ret_table);
}

int unwind_cache_get_fd(struct unwind_cache *c, int fd, const struct unwind_table **ret_table)
{
	const struct elf_input in = { NULL, fd, NULL, 0 };

	if (!c || fd < 0)
		return -EINVAL;
	return cache_get(c, &in, NULL, ret_table);
}

int unwind_cache_get_memory(struct unwind_cache *c, const void *image, size_t size,
			    const struct unwind_table **ret_table)
{
	const struct elf_input in = { NULL, -1, image, size };

	if (!c || !image || !size)
		return -EINVAL;
	return cache_get(c, &in, NULL, ret_table);
}
