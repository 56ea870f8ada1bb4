/* symcache_test: ELF modules loaded once and shared.
 *
 * Small ELF files and images are written at test time with libelf (a
 * .text, a GNU build-id note or none, one function in .symtab). A module
 * with a build-id is found again by it, from another open of the file,
 * another path or an in-memory image; one without is keyed by path,
 * size, mtime and inode, and a change to any of them is another module.
 * Symbols are read (and copied: an image is not kept); non-ELF input is
 * -EINVAL; references count up and down; when SYMCACHE_MAX_MODULES are
 * cached, only unreferenced modules are evicted, the least recently used
 * first, and with none unreferenced a new module fails with -ENOBUFS;
 * the DWARF of a module is opened once, and a module without any is
 * tried once. The stats count all of it. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/symcache.h"
#include "test.h"

#define BID_LEN 20

static char dir[] = "/tmp/nprof-symcache-XXXXXX";

struct elf_spec {
	const uint8_t *build_id; /* BID_LEN bytes, or NULL for none */
	const char *func;	 /* the one function in .symtab */
	size_t text_size;	 /* bytes of .text, to vary the file size */
};

/* The address of spec->func in the file written by write_elf. */
#define FUNC_VADDR 0x1000

static Elf_Scn *add_scn(Elf *e, uint32_t name, uint32_t type, uint64_t flags,
			void *buf, size_t size, Elf_Type dtype, size_t align)
{
	Elf_Scn *scn = elf_newscn(e);
	Elf_Data *d = scn ? elf_newdata(scn) : NULL;
	GElf_Shdr sh;

	if (!d)
		return NULL;
	d->d_buf = buf;
	d->d_size = size;
	d->d_type = dtype;
	d->d_align = align;
	d->d_version = EV_CURRENT;
	if (!gelf_getshdr(scn, &sh))
		return NULL;
	sh.sh_name = name;
	sh.sh_type = type;
	sh.sh_flags = flags;
	sh.sh_addralign = align;
	if (flags & SHF_EXECINSTR)
		sh.sh_addr = FUNC_VADDR;
	gelf_update_shdr(scn, &sh);
	return scn;
}

/* Writes a small ET_DYN ELF file to fd. 0 or -1. */
static int write_elf(int fd, const struct elf_spec *spec)
{
	static const char shstr[] =
		"\0.text\0.note.gnu.build-id\0.symtab\0.strtab\0.shstrtab";
	enum { N_TEXT = 1, N_NOTE = 7, N_SYMTAB = 26, N_STRTAB = 34,
	       N_SHSTRTAB = 42 };
	uint8_t *text = calloc(1, spec->text_size);
	uint8_t note[16 + BID_LEN];
	char strtab[128];
	Elf64_Sym syms[2];
	Elf *e = elf_begin(fd, ELF_C_WRITE, NULL);
	Elf64_Ehdr *eh = e ? elf64_newehdr(e) : NULL;
	Elf64_Phdr *ph = eh ? elf64_newphdr(e, 1) : NULL;
	Elf_Scn *text_scn, *symtab_scn, *strtab_scn, *shstr_scn;
	GElf_Shdr sh;
	int64_t size;
	int ret = -1;

	if (!ph || !text)
		goto out;
	memset(text, 0xc3, spec->text_size); /* ret */
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;

	text_scn = add_scn(e, N_TEXT, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR,
			   text, spec->text_size, ELF_T_BYTE, 16);
	if (spec->build_id) {
		uint32_t hdr[3] = { 4, BID_LEN, NT_GNU_BUILD_ID };

		memcpy(note, hdr, sizeof(hdr));
		memcpy(note + 12, "GNU", 4);
		memcpy(note + 16, spec->build_id, BID_LEN);
		if (!add_scn(e, N_NOTE, SHT_NOTE, SHF_ALLOC, note, sizeof(note),
			     ELF_T_BYTE, 4))
			goto out;
	}
	strtab[0] = '\0';
	snprintf(strtab + 1, sizeof(strtab) - 1, "%s", spec->func);
	memset(syms, 0, sizeof(syms));
	syms[1].st_name = 1;
	syms[1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
	syms[1].st_shndx = (uint16_t)elf_ndxscn(text_scn);
	syms[1].st_value = FUNC_VADDR;
	syms[1].st_size = spec->text_size;
	symtab_scn = add_scn(e, N_SYMTAB, SHT_SYMTAB, 0, syms, sizeof(syms),
			     ELF_T_SYM, 8);
	strtab_scn = add_scn(e, N_STRTAB, SHT_STRTAB, 0, strtab,
			     strlen(spec->func) + 2, ELF_T_BYTE, 1);
	shstr_scn = add_scn(e, N_SHSTRTAB, SHT_STRTAB, 0, (void *)shstr,
			    sizeof(shstr), ELF_T_BYTE, 1);
	if (!text_scn || !symtab_scn || !strtab_scn || !shstr_scn)
		goto out;
	gelf_getshdr(symtab_scn, &sh);
	sh.sh_link = (uint32_t)elf_ndxscn(strtab_scn);
	sh.sh_info = 1;
	sh.sh_entsize = sizeof(Elf64_Sym);
	gelf_update_shdr(symtab_scn, &sh);
	eh->e_shstrndx = (uint16_t)elf_ndxscn(shstr_scn);

	size = elf_update(e, ELF_C_NULL);
	if (size < 0)
		goto out;
	ph->p_type = PT_LOAD;
	ph->p_flags = PF_R | PF_X;
	ph->p_offset = 0;
	ph->p_vaddr = 0;
	ph->p_filesz = ph->p_memsz = (uint64_t)size;
	ph->p_align = 0x1000;
	elf_flagphdr(e, ELF_C_SET, ELF_F_DIRTY);
	if (elf_update(e, ELF_C_WRITE) < 0)
		goto out;
	ret = 0;
out:
	if (ret < 0)
		printf("# write_elf: %s\n", elf_errmsg(-1));
	elf_end(e);
	free(text);
	return ret;
}

static void make_bid(uint8_t *bid, unsigned n)
{
	for (int i = 0; i < BID_LEN; i++)
		bid[i] = (uint8_t)(0xa0 + i);
	bid[0] = (uint8_t)n;
	bid[1] = (uint8_t)(n >> 8);
}

/* Writes the file dir/name; returns its path (static buffer). */
static const char *make_file(const char *name, const struct elf_spec *spec)
{
	static char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write_elf(fd, spec) < 0) {
		printf("# cannot write %s\n", path);
		exit(1);
	}
	close(fd);
	return path;
}

/* An image of spec in malloc'd memory, its size into *len. */
static char *make_image(const struct elf_spec *spec, size_t *len)
{
	int fd = memfd_create("symcache-test", 0);
	struct stat st;
	char *buf;

	if (fd < 0 || write_elf(fd, spec) < 0 || fstat(fd, &st) < 0)
		exit(1);
	buf = malloc((size_t)st.st_size);
	if (!buf || pread(fd, buf, (size_t)st.st_size, 0) != st.st_size)
		exit(1);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

static int get_path(struct symcache *c, const char *path, struct symmod **m)
{
	int fd = open(path, O_RDONLY);
	int err;

	if (fd < 0)
		return -errno;
	err = symcache_get_file(c, fd, path, NULL, m);
	close(fd);
	return err;
}

static const char *name_at(const struct symmod *m, uint64_t vaddr)
{
	const struct elf_sym *s = elf_symtab_find(&m->symtab, vaddr);

	return s ? elf_symtab_name(&m->symtab, s) : NULL;
}

static struct symcache_stats stats(const struct symcache *c)
{
	struct symcache_stats st;

	symcache_get_stats(c, &st);
	return st;
}

static void test_build_id(struct symcache *c)
{
	uint8_t bid[BID_LEN];
	struct elf_spec spec = { bid, "with_build_id", 64 };
	struct symmod *m = NULL, *m2 = NULL, *m3 = NULL, *m4 = NULL;
	struct symcache_stats st0 = stats(c), st;
	char path[256], copy[256];
	char *image;
	size_t len;
	int err;

	make_bid(bid, 1);
	snprintf(path, sizeof(path), "%s", make_file("bid.so", &spec));
	snprintf(copy, sizeof(copy), "%s", make_file("bid-copy.so", &spec));

	err = get_path(c, path, &m);
	CHECK(err == 0 && m, "build-id: loaded (%d)", err);
	if (!m)
		return;
	CHECK(m->info.build_id_len == BID_LEN &&
	      !memcmp(m->info.build_id, bid, BID_LEN), "build-id: read");
	CHECK_STR(m->key_path, "", "build-id: no path in the key");
	CHECK_UINT(m->refs, ==, 1, "build-id: one reference");
	CHECK_STR(name_at(m, FUNC_VADDR + 5), "with_build_id", "build-id: symbol");
	CHECK(m->debug_path == NULL, "build-id: .symtab used, no debug file");
	st = stats(c);
	CHECK(st.modules_parsed == st0.modules_parsed + 1 &&
	      st.cache_hits == st0.cache_hits, "build-id: parsed once");

	err = get_path(c, path, &m2);
	CHECK(err == 0 && m2 == m, "build-id: the same file again is the same module");
	CHECK_UINT(m->refs, ==, 2, "build-id: two references");
	err = get_path(c, copy, &m3);
	CHECK(err == 0 && m3 == m, "build-id: a copy under another path too");
	CHECK_UINT(m->refs, ==, 3, "build-id: three references");

	image = make_image(&spec, &len);
	err = symcache_get_image(c, image, len, "[vdso]", &m4);
	CHECK(err == 0 && m4 == m, "build-id: an image with the build-id too");
	free(image);
	st = stats(c);
	CHECK(st.modules_parsed == st0.modules_parsed + 1 &&
	      st.cache_hits == st0.cache_hits + 3, "build-id: three cache hits");

	symcache_put(c, m2);
	symcache_put(c, m3);
	symcache_put(c, m4);
	CHECK_UINT(m->refs, ==, 1, "build-id: puts drop references");
	symcache_put(c, NULL);
	CHECK_UINT(m->refs, ==, 1, "build-id: put of NULL does nothing");
	symcache_put(c, m);
	CHECK_UINT(m->refs, ==, 0, "build-id: the last put");

	/* Another build-id, same everything else: another module. */
	make_bid(bid, 2);
	make_file("bid.so", &spec);
	err = get_path(c, path, &m2);
	CHECK(err == 0 && m2 && m2 != m && m2->info.build_id[0] == 2,
	      "build-id: another build-id at the same path is another module");
	st = stats(c);
	CHECK_UINT(st.modules_parsed, ==, st0.modules_parsed + 2,
		   "build-id: parsed the new one");
	symcache_put(c, m2);
}

/* Without a build-id: path, size, mtime and inode. */
static void test_no_build_id(struct symcache *c)
{
	struct elf_spec spec = { NULL, "plain_func", 64 };
	struct symmod *m = NULL, *m2 = NULL, *m3 = NULL, *mt = NULL;
	struct symcache_stats st0 = stats(c), st;
	char path[256], other[256], tmp[256];
	struct timespec ts[2];
	struct stat sb;
	int err, keep;

	snprintf(path, sizeof(path), "%s", make_file("plain.so", &spec));
	snprintf(other, sizeof(other), "%s", make_file("plain-other.so", &spec));

	err = get_path(c, path, &m);
	CHECK(err == 0 && m, "plain: loaded (%d)", err);
	if (!m)
		return;
	CHECK_UINT(m->info.build_id_len, ==, 0, "plain: no build-id");
	CHECK_STR(m->key_path, path, "plain: keyed by path");
	CHECK_STR(name_at(m, FUNC_VADDR), "plain_func", "plain: symbol");
	err = get_path(c, path, &m2);
	CHECK(err == 0 && m2 == m && m->refs == 2, "plain: the same file: a hit");
	symcache_put(c, m2);

	err = get_path(c, other, &m2);
	CHECK(err == 0 && m2 && m2 != m,
	      "plain: the same bytes at another path: another module");
	symcache_put(c, m2);

	/* Other size. */
	spec.text_size = 128;
	make_file("plain.so", &spec);
	err = get_path(c, path, &m2);
	CHECK(err == 0 && m2 && m2 != m, "plain: another size: another module");
	symcache_put(c, m2);

	/* The first file's size back, but another mtime. */
	spec.text_size = 64;
	make_file("plain.so", &spec);
	stat(path, &sb);
	ts[0] = sb.st_atim;
	ts[1] = sb.st_mtim;
	ts[1].tv_sec -= 1000;
	utimensat(AT_FDCWD, path, ts, 0);
	err = get_path(c, path, &mt);
	CHECK(err == 0 && mt && mt != m && mt->key_size == m->key_size &&
	      mt->key_mtime_ns != m->key_mtime_ns,
	      "plain: another mtime: another module");

	/* Same path, size and mtime, but another inode (a file renamed over
	 * it, as package managers replace libraries). The old file is kept
	 * open so that its inode number is not reused. */
	keep = open(path, O_RDONLY);
	err = keep >= 0 ? symcache_get_file(c, keep, path, NULL, &m2) : -1;
	CHECK(err == 0 && m2 == mt && mt->refs == 2,
	      "plain: that file again: a hit");
	symcache_put(c, m2);
	snprintf(tmp, sizeof(tmp), "%s", make_file("plain.so.tmp", &spec));
	utimensat(AT_FDCWD, tmp, ts, 0);
	CHECK(rename(tmp, path) == 0, "plain: a new file renamed over it");
	err = get_path(c, path, &m2);
	CHECK(err == 0 && m2 && m2 != mt && mt && m2->key_ino != mt->key_ino &&
	      m2->key_mtime_ns == mt->key_mtime_ns &&
	      m2->key_size == mt->key_size,
	      "plain: another inode: another module");
	symcache_put(c, m2);
	err = get_path(c, path, &m3);
	CHECK(err == 0 && m3 == m2, "plain: and that one is found again");
	symcache_put(c, m3);
	symcache_put(c, mt);
	if (keep >= 0)
		close(keep);
	st = stats(c);
	CHECK_UINT(st.modules_parsed, ==, st0.modules_parsed + 5,
		   "plain: five modules parsed");
	CHECK_UINT(st.cache_hits, ==, st0.cache_hits + 3, "plain: three hits");
	symcache_put(c, m);
}

static void test_not_elf(struct symcache *c)
{
	char path[256], junk[64] = "this is not an ELF file, just text\n";
	struct symcache_stats st0 = stats(c), st;
	struct symmod *m = NULL;
	int fd, err;

	snprintf(path, sizeof(path), "%s/text", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && write(fd, junk, strlen(junk)) == (ssize_t)strlen(junk),
	      "not ELF: file written");
	err = symcache_get_file(c, fd, path, NULL, &m);
	CHECK_INT(err, ==, -EINVAL, "not ELF: a text file");
	close(fd);

	snprintf(path, sizeof(path), "%s/empty", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	err = symcache_get_file(c, fd, path, NULL, &m);
	CHECK_INT(err, ==, -EINVAL, "not ELF: an empty file");
	close(fd);

	fd = open(dir, O_RDONLY | O_DIRECTORY);
	err = symcache_get_file(c, fd, dir, NULL, &m);
	CHECK_INT(err, ==, -EINVAL, "not ELF: a directory");
	close(fd);

	err = symcache_get_image(c, junk, strlen(junk), "junk", &m);
	CHECK_INT(err, ==, -EINVAL, "not ELF: an image of text");
	st = stats(c);
	CHECK(st.modules_parsed == st0.modules_parsed &&
	      st.cache_hits == st0.cache_hits, "not ELF: nothing counted");
}

/* An image is not kept: its symbols outlive the buffer. */
static void test_image(struct symcache *c)
{
	struct elf_spec spec = { NULL, "vdso_func", 32 };
	struct symmod *m = NULL;
	size_t len;
	char *image = make_image(&spec, &len);
	int err = symcache_get_image(c, image, len, "[vdso]", &m);

	CHECK(err == 0 && m, "image: loaded (%d)", err);
	memset(image, 0, len);
	free(image);
	if (!m)
		return;
	CHECK_STR(name_at(m, FUNC_VADDR + 1), "vdso_func",
		  "image: the symbol outlives the image");
	CHECK(name_at(m, FUNC_VADDR + 64) == NULL, "image: nothing past the function");
	symcache_put(c, m);
}

/* Opening DWARF: once for a module with it, once for one without. */
static void test_dwarf(struct symcache *c)
{
	struct elf_spec spec = { NULL, "no_dwarf", 64 };
	struct symcache_stats st0 = stats(c), st;
	struct symmod *m = NULL;
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	const char *path = make_file("nodwarf.so", &spec);
	int fd = open(path, O_RDONLY), err;

	err = symcache_get_file(c, fd, path, NULL, &m);
	CHECK(err == 0 && m && !m->dwarf_tried, "dwarf: not tried before asked");
	if (m) {
		err = symcache_open_dwarf(c, m, fd, path, NULL);
		CHECK(err == 0 && m->dwarf_tried && !m->dwarf,
		      "dwarf: none in a module without it");
		err = symcache_open_dwarf(c, m, fd, path, NULL);
		CHECK(err == 0 && m->dwarf_tried && !m->dwarf, "dwarf: asked again");
		symcache_put(c, m);
	}
	close(fd);
	st = stats(c);
	CHECK_UINT(st.dwarf_modules, ==, st0.dwarf_modules, "dwarf: none counted");

	/* This test program is built with -g. */
	m = NULL;
	self[n > 0 ? n : 0] = '\0';
	fd = open(self, O_RDONLY);
	err = symcache_get_file(c, fd, self, NULL, &m);
	CHECK(err == 0 && m, "dwarf: this program loaded (%d)", err);
	if (m) {
		struct dwarf_lines *first;

		err = symcache_open_dwarf(c, m, fd, self, NULL);
		CHECK(err == 0 && m->dwarf_tried && m->dwarf,
		      "dwarf: this program's DWARF opened");
		first = m->dwarf;
		err = symcache_open_dwarf(c, m, fd, self, NULL);
		CHECK(err == 0 && m->dwarf == first, "dwarf: opened only once");
		symcache_put(c, m);
	}
	close(fd);
	st = stats(c);
	CHECK_UINT(st.dwarf_modules, ==, st0.dwarf_modules + 1,
		   "dwarf: one module's DWARF counted");
}

/* A cache of its own filled to SYMCACHE_MAX_MODULES with images of
 * distinct build-ids. */
static void test_eviction(void)
{
	enum { MAX = SYMCACHE_MAX_MODULES };
	struct symcache *c = symcache_new();
	struct symmod **mods = calloc(MAX + 2, sizeof(*mods));
	uint8_t bid[BID_LEN];
	struct elf_spec spec = { bid, "evict_func", 16 };
	struct symcache_stats st0, st;
	struct symmod *m = NULL, *extra = NULL;
	size_t len, bid_off;
	char *tmpl, *image, *p;
	int err, fails = 0;

	if (!c || !mods)
		abort();
	make_bid(bid, 0);
	tmpl = make_image(&spec, &len);
	p = memmem(tmpl, len, bid, BID_LEN);
	CHECK(p != NULL, "evict: build-id in the image");
	if (!p)
		return;
	bid_off = (size_t)(p - tmpl);
	image = malloc(len);

/* Gets the module of build-id number i: 0 or -errno. */
#define GET(i, ret)                                                   \
	(memcpy(image, tmpl, len), make_bid(bid, (i)),                \
	 memcpy(image + bid_off, bid, BID_LEN),                       \
	 symcache_get_image(c, image, len, "[img]", (ret)))

	for (unsigned i = 0; i < MAX; i++)
		if (GET(i, &mods[i]) != 0 || !mods[i])
			fails++;
	CHECK(!fails, "evict: %d modules cached", MAX);
	st0 = stats(c);
	CHECK_UINT(st0.modules_parsed, ==, MAX, "evict: each parsed");

	err = GET(MAX, &m);
	CHECK_INT(err, ==, -ENOBUFS, "evict: full and all referenced: -ENOBUFS");
	err = GET(7, &m);
	CHECK(err == 0 && m == mods[7], "evict: a cached one is still a hit when full");
	symcache_put(c, m);

	/* One unreferenced module: it is the one that goes. */
	symcache_put(c, mods[100]);
	err = GET(MAX, &extra);
	CHECK(err == 0 && extra, "evict: room made by the unreferenced module");
	err = GET(100, &m);
	CHECK_INT(err, ==, -ENOBUFS, "evict: it was evicted, and no room for it again");
	err = GET(99, &m);
	CHECK(err == 0 && m == mods[99], "evict: its neighbours stay");
	symcache_put(c, m);
	err = GET(MAX, &m);
	CHECK(err == 0 && m == extra, "evict: the new one stays");
	symcache_put(c, m);

	/* Least recently used first: put all in order, then use 0 again. */
	for (unsigned i = 0; i < MAX; i++)
		if (i != 100)
			symcache_put(c, mods[i]);
	symcache_put(c, extra);
	CHECK(mods[0]->refs == 0 && mods[MAX - 1]->refs == 0 && extra->refs == 0,
	      "evict: all unreferenced");
	err = GET(0, &m);
	CHECK(err == 0 && m == mods[0], "evict: 0 used again");
	symcache_put(c, m);
	st0 = stats(c);
	err = GET(MAX + 1, &m); /* evicts 1, the least recently used */
	CHECK(err == 0 && m, "evict: a new module when all are unreferenced");
	symcache_put(c, m);
	err = GET(0, &m);
	symcache_put(c, m);
	st = stats(c);
	CHECK(err == 0 && st.modules_parsed == st0.modules_parsed + 1 &&
	      st.cache_hits == st0.cache_hits + 1,
	      "evict: the recently used 0 stayed");
	err = GET(2, &m);
	symcache_put(c, m);
	st = stats(c);
	CHECK(err == 0 && st.modules_parsed == st0.modules_parsed + 1 &&
	      st.cache_hits == st0.cache_hits + 2, "evict: so did 2");
	err = GET(1, &m); /* parsed again, evicting 3 */
	symcache_put(c, m);
	st = stats(c);
	CHECK(err == 0 && st.modules_parsed == st0.modules_parsed + 2,
	      "evict: 1, the least recently used, was the one evicted");
	err = GET(3, &m);
	symcache_put(c, m);
	st = stats(c);
	CHECK(err == 0 && st.modules_parsed == st0.modules_parsed + 3,
	      "evict: then 3, next in line");
#undef GET
	free(image);
	free(tmpl);
	free(mods);
	symcache_free(c);
}

int main(void)
{
	struct symcache *c;
	struct symcache_stats st;
	char cmd[300];

	if (elf_version(EV_CURRENT) == EV_NONE || !mkdtemp(dir)) {
		printf("Bail out! setup\n");
		return 1;
	}
	c = symcache_new();
	CHECK(c != NULL, "new");
	if (!c)
		return test_done();
	st = stats(c);
	CHECK(!st.modules_parsed && !st.cache_hits && !st.debug_files &&
	      !st.dwarf_modules, "new: stats zero");
	test_build_id(c);
	test_no_build_id(c);
	test_not_elf(c);
	test_image(c);
	test_dwarf(c);
	symcache_free(c);
	test_eviction();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("# cannot remove %s\n", dir);
	return test_done();
}
