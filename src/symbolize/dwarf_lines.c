/* dwarf_lines: file:line and inlined frames with libdw. See dwarf_lines.h
 * and docs/symbolize.md.
 *
 * An address is found in three steps: the unit covering it, from an index
 * of every compile unit's ranges built at the first lookup (so modules
 * without .debug_aranges, as clang emits by default, work the same);
 * the unit's line table row for the address (dwarf_getsrc_die); and the
 * chain of DIEs containing it, walked down from the unit the way
 * dwarf_getscopes does, keeping the concrete subprogram and
 * inlined-subroutine instances. Every walk is bounded in depth, in
 * siblings visited and by DIE offsets that must only move forward, so
 * DWARF with loops in it ends the walk instead of hanging it. */
#include "symbolize/dwarf_lines.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "symbolize/debugfile.h"

/* DIEs looked at for one address; a unit is rarely past a few hundred
 * thousand, and the walk skips the subtrees that do not hold the PC. */
#define MAX_DIES_PER_FIND (4u << 20)
/* Ranges looked at backwards from the nearest start below an address,
 * for units whose ranges overlap or nest (broken or unusual DWARF). */
#define MAX_OVERLAP_SCAN 64

struct cu_range {
	uint64_t lo, hi;	/* [lo, hi) */
	Dwarf_Off cu;		/* the unit DIE's offset in .debug_info */
};

struct dwarf_lines {
	Elf *elf;
	Dwarf *dw;
	struct cu_range *ranges;
	size_t n, cap;
	bool indexed;
};

/* The state of one walk down a unit towards a PC. */
struct walk {
	uint64_t pc;
	unsigned dies;		/* visited, against MAX_DIES_PER_FIND */
	Dwarf_Die func;		/* the innermost concrete subprogram */
	bool has_func;
	Dwarf_Die inl[DWARF_LINES_MAX_INLINES]; /* inlined in func, outermost first */
	unsigned ninl;
	bool dropped;		/* outermost inlined levels were dropped */
};

static bool has_debug_info(Elf *e)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(e, &shstrndx) < 0)
		return false;
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
			return true;
	}
	return false;
}

int dwarf_lines_open_elf(Elf *e, struct dwarf_lines **ret)
{
	struct dwarf_lines *dl;
	Dwarf *dw;

	if (!e || !has_debug_info(e))
		return -ENOENT;
	dw = dwarf_begin_elf(e, DWARF_C_READ, NULL);
	if (!dw)
		return -ENOENT;
	dl = calloc(1, sizeof(*dl));
	if (!dl) {
		dwarf_end(dw);
		return -ENOMEM;
	}
	dl->elf = e;
	dl->dw = dw;
	*ret = dl;
	return 0;
}

int dwarf_lines_open_module(int fd, const char *path, struct target_files *tf,
			    const struct elf_info *info,
			    struct dwarf_lines **ret, char **ret_debug_path)
{
	struct debugfile df = { .fd = -1 };
	struct dwarf_lines *dl = NULL;
	char *debug_path = NULL;
	Elf *e;
	int err;

	/* Both files are read through libelf's mapping (or read whole now:
	 * ELF_C_FDREAD) so their descriptors are closed here, and a cached
	 * module's DWARF holds none. */
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && has_debug_info(e)) {
		err = -ENOMEM;
		if (elf_cntl(e, ELF_C_FDREAD) < 0)
			goto out;
		err = dwarf_lines_open_elf(e, &dl);
		if (err == 0)
			e = NULL; /* dl owns it */
		goto out;
	}
	err = debugfile_find(tf, path, info, &df);
	if (err < 0)
		goto out;
	err = -ENOMEM;
	if (elf_cntl(df.elf, ELF_C_FDREAD) < 0)
		goto out;
	err = dwarf_lines_open_elf(df.elf, &dl);
	if (err < 0)
		goto out;
	df.elf = NULL; /* dl owns it; df.fd is closed below */
	debug_path = df.path;
	df.path = NULL;
out:
	if (e)
		elf_end(e);
	debugfile_close(&df);
	if (err < 0)
		return err;
	*ret = dl;
	if (ret_debug_path)
		*ret_debug_path = debug_path;
	else
		free(debug_path);
	return 0;
}

void dwarf_lines_free(struct dwarf_lines *dl)
{
	if (!dl)
		return;
	dwarf_end(dl->dw);
	elf_end(dl->elf);
	free(dl->ranges);
	free(dl);
}

static int add_range(struct dwarf_lines *dl, uint64_t lo, uint64_t hi,
		     Dwarf_Off cu)
{
	if (lo >= hi)
		return 0;
	if (dl->n >= DWARF_LINES_MAX_RANGES)
		return -ENOBUFS;
	if (array_reserve(&dl->ranges, &dl->cap, dl->n + 1, sizeof(*dl->ranges)) < 0)
		return -ENOMEM;
	dl->ranges[dl->n++] = (struct cu_range){ lo, hi, cu };
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* Every compile unit's address ranges, sorted. What cannot be read
 * (a broken unit, the limits) is left out: those addresses get no lines. */
static void build_index(struct dwarf_lines *dl)
{
	Dwarf_CU *cu = NULL, *next;
	unsigned units = 0;

	dl->indexed = true;
	for (;;) {
		Dwarf_Half version;
		uint8_t unit_type;
		Dwarf_Die cudie;
		Dwarf_Addr base, start, end;
		ptrdiff_t off = 0;
		int tag;

		/* No subdie: for a skeleton unit libdw would find its split
		 * unit by opening the .dwo file the DWARF names (its comp_dir
		 * and dwo_name: a path of the binary's author's choosing,
		 * opened as root for an admin). The skeleton's ranges are in
		 * this file. */
		if (dwarf_get_units(dl->dw, cu, &next, &version, &unit_type,
				    &cudie, NULL) != 0 ||
		    ++units > DWARF_LINES_MAX_UNITS)
			break;
		cu = next;
		tag = dwarf_tag(&cudie);
		if (tag != DW_TAG_compile_unit && tag != DW_TAG_skeleton_unit)
			continue;
		while ((off = dwarf_ranges(&cudie, off, &base, &start, &end)) > 0)
			if (add_range(dl, start, end, dwarf_dieoffset(&cudie)) < 0)
				goto sort;
	}
sort:
	if (dl->n)
		qsort(dl->ranges, dl->n, sizeof(*dl->ranges), cmp_range);
}

static bool find_unit(struct dwarf_lines *dl, uint64_t pc, Dwarf_Die *ret)
{
	size_t lo = 0, hi;

	if (!dl->indexed)
		build_index(dl);
	hi = dl->n;
	/* lo = the number of ranges starting at or below pc */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (dl->ranges[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, k = 0; i-- > 0 && k < MAX_OVERLAP_SCAN; k++)
		if (pc < dl->ranges[i].hi)
			return dwarf_offdie(dl->dw, dl->ranges[i].cu, ret) != NULL;
	return false;
}

static void record(struct walk *w, Dwarf_Die *d, int tag)
{
	if (tag == DW_TAG_subprogram) {
		/* A function nested in another (GNU C) is a frame of its own:
		 * what was inlined into the outer one is not on this path. */
		w->func = *d;
		w->has_func = true;
		w->ninl = 0;
		w->dropped = false;
		return;
	}
	if (w->ninl == DWARF_LINES_MAX_INLINES) {
		memmove(&w->inl[0], &w->inl[1], (w->ninl - 1) * sizeof(w->inl[0]));
		w->ninl--;
		w->dropped = true;
	}
	w->inl[w->ninl++] = *d;
}

/* Descends from parent to the DIEs containing w->pc; true when one was
 * found below parent. */
static bool walk(struct walk *w, Dwarf_Die *parent, unsigned depth)
{
	Dwarf_Die child;
	Dwarf_Off last;

	if (depth >= DWARF_LINES_MAX_NESTING || dwarf_child(parent, &child) != 0)
		return false;
	last = dwarf_dieoffset(parent);
	do {
		Dwarf_Off off = dwarf_dieoffset(&child);
		int tag;

		/* Offsets only move forward in valid DWARF; a sibling link
		 * pointing back would loop. */
		if (off == (Dwarf_Off)-1 || off <= last || ++w->dies > MAX_DIES_PER_FIND)
			return false;
		last = off;
		tag = dwarf_tag(&child);
		switch (tag) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
		case DW_TAG_with_stmt:
			if (dwarf_haspc(&child, w->pc) != 1)
				break;
			if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine)
				record(w, &child, tag);
			walk(w, &child, depth + 1);
			return true;
		case DW_TAG_namespace:
		case DW_TAG_module:
			if (walk(w, &child, depth + 1))
				return true;
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

static const char *die_string(Dwarf_Die *d, unsigned name)
{
	Dwarf_Attribute a;

	/* Follows DW_AT_abstract_origin and DW_AT_specification (libdw
	 * bounds the chain). */
	if (!dwarf_attr_integrate(d, name, &a))
		return NULL;
	return dwarf_formstring(&a);
}

static void name_frame(Dwarf_Die *d, struct dwarf_loc *loc)
{
	loc->name = die_string(d, DW_AT_name);
	loc->linkage_name = die_string(d, DW_AT_linkage_name);
	if (!loc->linkage_name)
		loc->linkage_name = die_string(d, DW_AT_MIPS_linkage_name);
}

/* libdw names a file it does not know "???" (the unused index 0 of a
 * DWARF 4 line table). */
static const char *known_file(const char *f)
{
	return f && f[0] && strcmp(f, "???") ? f : NULL;
}

/* The caller's file:line of an inlined call. */
static void call_site(Dwarf_Die *cudie, Dwarf_Die *inl, struct dwarf_loc *loc)
{
	Dwarf_Attribute a;
	Dwarf_Word file, line;
	Dwarf_Files *files;
	size_t nfiles;

	loc->file = NULL;
	loc->line = 0;
	if (!dwarf_attr(inl, DW_AT_call_line, &a) || dwarf_formudata(&a, &line) != 0 ||
	    !line || line > UINT32_MAX)
		return;
	if (!dwarf_attr(inl, DW_AT_call_file, &a) || dwarf_formudata(&a, &file) != 0 ||
	    dwarf_getsrcfiles(cudie, &files, &nfiles) != 0 || file >= nfiles)
		return;
	loc->file = known_file(dwarf_filesrc(files, file, NULL, NULL));
	if (loc->file)
		loc->line = (uint32_t)line;
}

int dwarf_lines_find(struct dwarf_lines *dl, uint64_t vaddr,
		     struct dwarf_loc *ret, unsigned max, unsigned *ret_n)
{
	struct walk *w;
	Dwarf_Die cudie;
	Dwarf_Line *row;
	unsigned keep, n = 0;
	bool dropped, innermost;

	if (!max)
		return -EINVAL;
	if (!find_unit(dl, vaddr, &cudie))
		return -ENOENT;
	w = calloc(1, sizeof(*w)); /* ~1.5 KiB of DIEs: not on the stack */
	if (!w)
		return -ENOMEM;
	w->pc = vaddr;
	walk(w, &cudie, 0);

	keep = w->ninl < max - 1 ? w->ninl : max - 1;
	dropped = w->dropped || keep < w->ninl;
	/* Whether ret[n - 1] will be the innermost frame there is. */
	innermost = !w->ninl || keep;
	memset(&ret[0], 0, sizeof(ret[0]));
	if (w->has_func)
		name_frame(&w->func, &ret[0]);
	n = 1;
	for (unsigned i = w->ninl - keep; i < w->ninl; i++) {
		struct dwarf_loc *loc = &ret[n++];

		memset(loc, 0, sizeof(*loc));
		name_frame(&w->inl[i], loc);
		loc->inlined = true;
		/* The frame outside this call is at the call. */
		call_site(&cudie, &w->inl[i], &ret[n - 2]);
	}
	if (dropped) {
		/* ret[0]'s direct callee is not shown: its line would lie. */
		ret[0].file = NULL;
		ret[0].line = 0;
	}
	/* The innermost frame is at the address itself. */
	row = innermost ? dwarf_getsrc_die(&cudie, vaddr) : NULL;
	if (row) {
		int line = 0;
		const char *file = known_file(dwarf_linesrc(row, NULL, NULL));

		if (file && dwarf_lineno(row, &line) == 0 && line > 0) {
			ret[n - 1].file = file;
			ret[n - 1].line = (uint32_t)line;
		}
	}
	*ret_n = n;
	free(w);
	return 0;
}
