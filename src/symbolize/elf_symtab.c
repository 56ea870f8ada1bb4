#include "symbolize/elf_symtab.h"
#include "base/array.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void read_build_id(Elf_Data *data, struct elf_info *info)
{
	GElf_Nhdr nh;
	size_t off = 0, name_off, desc_off, next;

	while (off < data->d_size &&
	       (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp((char *)data->d_buf + name_off, "GNU", 4) &&
		    nh.n_descsz > 0 && nh.n_descsz <= ELF_MAX_BUILD_ID &&
		    desc_off + nh.n_descsz <= data->d_size) {
			memcpy(info->build_id, (char *)data->d_buf + desc_off,
			       nh.n_descsz);
			info->build_id_len = nh.n_descsz;
			return;
		}
		off = next;
	}
}

static void read_debuglink(Elf *e, Elf_Scn *scn, struct elf_info *info)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	const unsigned char *p;
	size_t nlen, crc_off;
	unsigned char *ident;

	if (!data || !data->d_buf || data->d_size < 5)
		return;
	p = data->d_buf;
	nlen = strnlen((const char *)p, data->d_size);
	/* name, NUL, padding to 4, then the CRC32 in the file's byte order */
	crc_off = (nlen + 1 + 3) & ~(size_t)3;
	if (nlen == 0 || nlen >= sizeof(info->debuglink) ||
	    crc_off + 4 > data->d_size || memchr(p, '/', nlen))
		return;
	ident = (unsigned char *)elf_getident(e, NULL);
	if (ident && ident[EI_DATA] == ELFDATA2MSB)
		info->debuglink_crc = (uint32_t)p[crc_off] << 24 |
				      (uint32_t)p[crc_off + 1] << 16 |
				      (uint32_t)p[crc_off + 2] << 8 | p[crc_off + 3];
	else
		info->debuglink_crc = (uint32_t)p[crc_off + 3] << 24 |
				      (uint32_t)p[crc_off + 2] << 16 |
				      (uint32_t)p[crc_off + 1] << 8 | p[crc_off];
	memcpy(info->debuglink, p, nlen);
	info->debuglink[nlen] = '\0';
}

int elf_read_info(Elf *e, struct elf_info *ret)
{
	struct elf_info info;
	GElf_Ehdr eh;
	size_t nph, shstrndx;
	Elf_Scn *scn = NULL;
	int err = -EINVAL;

	memset(&info, 0, sizeof(info));
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh))
		goto out;
	info.type = eh.e_type;
	if (elf_getphdrnum(e, &nph) == 0) {
		for (size_t i = 0; i < nph && i < 4096; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(e, (int)i, &ph))
				break;
			if (ph.p_type == PT_LOAD && info.nloads < ELF_MAX_LOADS) {
				struct elf_load *l = &info.loads[info.nloads++];

				l->offset = ph.p_offset;
				l->vaddr = ph.p_vaddr;
				l->filesz = ph.p_filesz;
				l->memsz = ph.p_memsz;
				l->flags = ph.p_flags;
			}
		}
	}
	if (elf_getshdrstrndx(e, &shstrndx) < 0)
		shstrndx = SHN_UNDEF;
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = shstrndx != SHN_UNDEF ? elf_strptr(e, shstrndx, sh.sh_name)
					     : NULL;
		if (sh.sh_type == SHT_NOTE && !info.build_id_len) {
			Elf_Data *data = elf_getdata(scn, NULL);

			if (data && data->d_buf)
				read_build_id(data, &info);
		} else if (sh.sh_type == SHT_SYMTAB && sh.sh_size > 0) {
			info.has_symtab = true;
		} else if (name && !strcmp(name, ".gnu_debuglink") &&
			   sh.sh_type != SHT_NOBITS) {
			read_debuglink(e, scn, &info);
		} else if (name && !strcmp(name, ".gnu_debugdata")) {
			info.has_debugdata = true;
		}
	}
	/* Without section headers (some in-memory images), the notes are
	 * still reachable through PT_NOTE. */
	if (!info.build_id_len && elf_getphdrnum(e, &nph) == 0) {
		for (size_t i = 0; i < nph && i < 4096; i++) {
			GElf_Phdr ph;
			Elf_Data *data;

			if (!gelf_getphdr(e, (int)i, &ph))
				break;
			if (ph.p_type != PT_NOTE || ph.p_filesz > (1u << 20))
				continue;
			data = elf_getdata_rawchunk(e, (int64_t)ph.p_offset,
						    ph.p_filesz, ELF_T_NHDR);
			if (data && data->d_buf)
				read_build_id(data, &info);
			if (info.build_id_len)
				break;
		}
	}
	*ret = info;
	err = 0;
out:
	return err;
}

int elf_info_offset_to_vaddr(const struct elf_info *info, uint64_t offset,
			     uint64_t *ret_vaddr)
{
	const struct elf_load *best = NULL;

	for (unsigned i = 0; i < info->nloads; i++) {
		const struct elf_load *l = &info->loads[i];

		if (offset >= l->offset && offset - l->offset < l->filesz) {
			best = l;
			break;
		}
	}
	/* The kernel maps whole pages, so an address can sit between a page
	 * boundary and the segment's first byte; use the segment that page
	 * belongs to. */
	if (!best) {
		for (unsigned i = 0; i < info->nloads; i++) {
			const struct elf_load *l = &info->loads[i];
			uint64_t page = l->offset & ~(uint64_t)0xfff;

			if (offset >= page && offset - page < l->filesz + 0x1000 &&
			    (!best || l->offset > best->offset))
				best = l;
		}
	}
	if (!best) {
		if (info->nloads)
			return -ENOENT;
		*ret_vaddr = offset; /* no segments: offsets are addresses */
		return 0;
	}
	*ret_vaddr = offset - best->offset + best->vaddr;
	return 0;
}

void elf_symtab_init(struct elf_symtab *t)
{
	memset(t, 0, sizeof(*t));
	strtab_init(&t->strs, ELF_MAX_STRS);
}

void elf_symtab_release(struct elf_symtab *t)
{
	if (!t)
		return;
	free(t->syms);
	strtab_release(&t->strs);
	elf_symtab_init(t);
}

static int add_sym(struct elf_symtab *t, uint64_t addr, uint64_t size,
		   const char *name, size_t len, uint8_t rank)
{
	struct elf_sym *s;
	int err;

	if (t->n >= ELF_MAX_SYMBOLS) {
		t->dropped++;
		return 0;
	}
	if (array_reserve(&t->syms, &t->cap, t->n + 1, sizeof(*t->syms)) < 0)
		return -ENOMEM;
	s = &t->syms[t->n];
	err = strtab_add(&t->strs, name, len, &s->name);
	if (err < 0)
		return err;
	s->addr = addr;
	s->size = size;
	s->rank = rank;
	t->n++;
	return 0;
}

static bool section_is_code(Elf *e, size_t shndx)
{
	Elf_Scn *scn = elf_getscn(e, shndx);
	GElf_Shdr sh;

	return scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR);
}

/* The i-th symbol of data: read in place from a 64-bit table (libelf has
 * converted it to this host's layout), through gelf otherwise. */
static bool get_sym(Elf_Data *data, bool native64, size_t i, GElf_Sym *ret)
{
	if (native64) {
		const Elf64_Sym *s = (const Elf64_Sym *)data->d_buf + i;

		ret->st_name = s->st_name;
		ret->st_info = s->st_info;
		ret->st_other = s->st_other;
		ret->st_shndx = s->st_shndx;
		ret->st_value = s->st_value;
		ret->st_size = s->st_size;
		return true;
	}
	return gelf_getsym(data, (int)i, ret) != NULL;
}

static int add_section(struct elf_symtab *t, Elf *e, Elf_Scn *scn,
		       const GElf_Shdr *sh)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t entsize = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT);
	Elf_Scn *str_scn = elf_getscn(e, sh->sh_link);
	Elf_Data *str = NULL;
	GElf_Shdr str_sh;
	bool native64;
	size_t count;
	int err = 0;

	/* A compressed table would read as garbage symbols; no toolchain we
	 * know compresses .symtab, so skipping it is enough. */
	if (!data || !data->d_buf || !entsize || sh->sh_type == SHT_NOBITS ||
	    (sh->sh_flags & SHF_COMPRESSED))
		goto out;
	/* The names, read in place: a string table that is not one, or that
	 * libelf cannot give, leaves the symbols unnamed (skipped). */
	if (!str_scn || !gelf_getshdr(str_scn, &str_sh) || str_sh.sh_type != SHT_STRTAB ||
	    (str_sh.sh_flags & SHF_COMPRESSED) || !(str = elf_getdata(str_scn, NULL)) ||
	    !str->d_buf || !str->d_size)
		goto out;
	native64 = gelf_getclass(e) == ELFCLASS64 && data->d_type == ELF_T_SYM &&
		   !((uintptr_t)data->d_buf % _Alignof(Elf64_Sym)) && entsize == sizeof(Elf64_Sym);
	count = data->d_size / entsize;
	/* Room for all of them at once: no copy of a growing table per
	 * doubling (mariadbd: 29,000 symbols, 1 MB of names). */
	if (count > 1 && array_reserve(&t->syms, &t->cap,
				       t->n + (count < ELF_MAX_SYMBOLS ? count : ELF_MAX_SYMBOLS),
				       sizeof(*t->syms)) < 0)
		return -ENOMEM;
	strtab_reserve(&t->strs, str->d_size); /* or each add grows it */
	for (size_t i = 1; i < count; i++) {
		GElf_Sym sym;
		const char *name;
		size_t len, room;
		int type, bind;
		uint8_t rank;

		if (!get_sym(data, native64, i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		bind = GELF_ST_BIND(sym.st_info);
		if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE)
			continue;
		if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
			continue;
		if (!sym.st_name || sym.st_name >= str->d_size)
			continue;
		name = (const char *)str->d_buf + sym.st_name;
		room = str->d_size - sym.st_name;
		len = strnlen(name, room < ELF_MAX_SYMBOL_NAME + 1 ? room : ELF_MAX_SYMBOL_NAME + 1);
		/* Unterminated inside its table, or too long: not a name. */
		if (len == room || len > ELF_MAX_SYMBOL_NAME)
			continue;
		/* Untyped symbols are kept only when they label code (hand
		 * written assembly, some JIT stubs); assembler-local labels
		 * and ARM mapping symbols are not functions. */
		if (type == STT_NOTYPE &&
		    (name[0] == '$' || !strncmp(name, ".L", 2) ||
		     !section_is_code(e, sym.st_shndx)))
			continue;
		rank = (uint8_t)((bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2) * 2 +
				 (type == STT_NOTYPE));
		err = add_sym(t, sym.st_value, sym.st_size, name, len, rank);
		if (err < 0)
			goto out;
	}
out:
	return err;
}

size_t elf_symtab_count(Elf *e, uint32_t sh_type)
{
	size_t entsize = e ? gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT) : 0, n = 0;
	Elf_Scn *scn = NULL;

	while (entsize && (scn = elf_nextscn(e, scn)) != NULL) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == sh_type && sh.sh_type != SHT_NOBITS)
			n += sh.sh_size / entsize;
	}
	return n;
}

int elf_symtab_add(struct elf_symtab *t, Elf *e, uint32_t sh_type)
{
	Elf_Scn *scn = NULL;
	int err = 0;

	if (!e || elf_kind(e) != ELF_K_ELF)
		return -EINVAL;
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != sh_type)
			continue;
		err = add_section(t, e, scn, &sh);
		if (err < 0)
			break;
	}
	return err;
}

static size_t leading_underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/* qsort has no context argument; finish runs on one thread at a time by
 * the module's contract (not thread-safe), so a static is acceptable. */
static const struct strtab *sort_strs;

static int cmp_sym(const void *pa, const void *pb)
{
	const struct elf_sym *a = pa, *b = pb;
	const char *na = strtab_get(sort_strs, a->name);
	const char *nb = strtab_get(sort_strs, b->name);
	size_t ua, ub, la, lb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if ((a->size == 0) != (b->size == 0))
		return a->size == 0 ? 1 : -1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	ua = leading_underscores(na);
	ub = leading_underscores(nb);
	if (ua != ub)
		return ua < ub ? -1 : 1;
	/* Lengths without a symbol version: "fclose@@GLIBC_2.2.5" (a
	 * .symtab's) is "fclose" (the .dynsym's) to the names shown. */
	la = strcspn(na, "@");
	lb = strcspn(nb, "@");
	if (la != lb)
		return la < lb ? -1 : 1;
	return strcmp(na, nb);
}

#define RADIX_BITS 11
#define RADIX_BUCKETS (1u << RADIX_BITS)

/* Sorts v by address (stable: least significant digit first, over the
 * bits the addresses span; a digit every address shares is skipped), tmp
 * as large as v: a table of 20,000 symbols in a third of the time qsort
 * takes. */
static void radix_sort(struct elf_sym *v, struct elf_sym *tmp, size_t n)
{
	uint64_t lo = UINT64_MAX, hi = 0, span;
	struct elf_sym *src = v, *dst = tmp;
	size_t count[RADIX_BUCKETS];
	unsigned bits = 0;

	for (size_t i = 0; i < n; i++) {
		lo = v[i].addr < lo ? v[i].addr : lo;
		hi = v[i].addr > hi ? v[i].addr : hi;
	}
	for (span = hi - lo; span; span >>= 1)
		bits++;
	for (unsigned shift = 0; shift < bits; shift += RADIX_BITS) {
		size_t sum = 0;

		memset(count, 0, sizeof(count));
		for (size_t i = 0; i < n; i++)
			count[((src[i].addr - lo) >> shift) & (RADIX_BUCKETS - 1)]++;
		if (count[((src[0].addr - lo) >> shift) & (RADIX_BUCKETS - 1)] == n)
			continue; /* one digit for all: nothing moves */
		for (unsigned b = 0; b < RADIX_BUCKETS; b++) {
			size_t c = count[b];

			count[b] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[((src[i].addr - lo) >> shift) & (RADIX_BUCKETS - 1)]++] = src[i];
		/* The next pass reads what this one wrote. */
		src = dst;
		dst = dst == tmp ? v : tmp;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
}

void elf_symtab_finish(struct elf_symtab *t)
{
	struct elf_sym *tmp;
	size_t w = 0;

	if (!t->n)
		return;
	sort_strs = &t->strs;
	tmp = t->n > 64 ? malloc(t->n * sizeof(*tmp)) : NULL;
	if (tmp) {
		/* By address, then each run of one address (aliases, a few
		 * at most) by preference. */
		radix_sort(t->syms, tmp, t->n);
		free(tmp);
		for (size_t r = 0; r < t->n;) {
			size_t e = r + 1;

			while (e < t->n && t->syms[e].addr == t->syms[r].addr)
				e++;
			/* Insertion: runs are a few aliases (__poll, poll,
			 * __libc_poll), too short for qsort's own cost. */
			for (size_t i = r + 1; i < e; i++) {
				struct elf_sym v = t->syms[i];
				size_t j = i;

				while (j > r && cmp_sym(&t->syms[j - 1], &v) > 0) {
					t->syms[j] = t->syms[j - 1];
					j--;
				}
				t->syms[j] = v;
			}
			r = e;
		}
	} else {
		qsort(t->syms, t->n, sizeof(*t->syms), cmp_sym);
	}
	sort_strs = NULL;
	for (size_t r = 0; r < t->n; r++) {
		if (w && t->syms[w - 1].addr == t->syms[r].addr)
			continue; /* an alias; the best one sorted first */
		t->syms[w++] = t->syms[r];
	}
	t->n = w;
}

/* How far back to look for a sized symbol that encloses a later label. */
#define ENCLOSING_SCAN 8

const struct elf_sym *elf_symtab_find(const struct elf_symtab *t,
				      uint64_t vaddr)
{
	size_t lo = 0, hi = t->n, idx;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	idx = lo - 1;
	for (size_t k = 0; k < ENCLOSING_SCAN && k <= idx; k++) {
		const struct elf_sym *s = &t->syms[idx - k];

		if (s->size && vaddr - s->addr < s->size)
			return s;
	}
	return t->syms[idx].size == 0 ? &t->syms[idx] : NULL;
}
