#include "symbolize/kallsyms.h"
#include "base/array.h"
#include "base/hex.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int kallsyms_init(struct kallsyms *k)
{
	memset(k, 0, sizeof(*k));
	strtab_init(&k->strs, KALLSYMS_MAX_STRS);
	k->sorted = true;
	if (strtab_add(&k->strs, "[kernel]", 8, &k->kernel_module) < 0)
		return -ENOMEM;
	k->last_module = k->kernel_module;
	return 0;
}

void kallsyms_release(struct kallsyms *k)
{
	if (!k)
		return;
	free(k->syms);
	strtab_release(&k->strs);
	memset(k, 0, sizeof(*k));
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

static int parse_line(struct kallsyms *k, const char *p, const char *end)
{
	uint64_t addr;
	const char *name, *name_end, *mod = NULL, *mod_end = NULL, *last;
	uint32_t name_off, mod_off;
	char type;
	int err;

	if (hex_parse(p, end, 0, &addr, &p) < 0 || end - p < 4 || *p != ' ' ||
	    !is_space(p[2]))
		return -EINVAL;
	type = p[1];
	name = p + 3;
	for (name_end = name; name_end < end && !is_space(*name_end); name_end++)
		;
	if (name_end == name)
		return -EINVAL;
	if (name_end < end) {
		mod = name_end;
		while (mod < end && is_space(*mod))
			mod++;
		for (mod_end = mod; mod_end < end && !is_space(*mod_end); mod_end++)
			;
		if (mod_end - mod < 3 || *mod != '[' || mod_end[-1] != ']')
			mod = NULL;
	}
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return 0;
	if (memchr(name, '\0', (size_t)(name_end - name)) ||
	    (mod && memchr(mod, '\0', (size_t)(mod_end - mod))))
		return -EINVAL;
	if (k->n >= KALLSYMS_MAX_SYMBOLS)
		return -E2BIG;
	last = strtab_get(&k->strs, k->last_module);
	if (!mod) {
		mod_off = k->kernel_module;
	} else if (!strncmp(last, mod, (size_t)(mod_end - mod)) &&
		   last[mod_end - mod] == '\0') {
		mod_off = k->last_module; /* modules' symbols come together */
	} else {
		err = strtab_add(&k->strs, mod, (size_t)(mod_end - mod), &mod_off);
		if (err < 0)
			return err;
		k->last_module = mod_off;
	}
	err = strtab_add(&k->strs, name, (size_t)(name_end - name), &name_off);
	if (err < 0)
		return err;
	if (array_reserve(&k->syms, &k->cap, k->n + 1, sizeof(*k->syms)) < 0)
		return -ENOMEM;
	if (k->n && addr < k->syms[k->n - 1].addr)
		k->sorted = false;
	k->syms[k->n].addr = addr;
	k->syms[k->n].name = name_off;
	k->syms[k->n].module = mod_off;
	k->n++;
	if (addr)
		k->nonzero++;
	if (!mod && !k->text && name_end - name == 5 && !memcmp(name, "_text", 5))
		k->text = addr;
	return 0;
}

int kallsyms_parse(struct kallsyms *k, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;
	int err = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;

		if (eol - p > KALLSYMS_MAX_LINE) {
			k->skipped_lines++;
		} else if (eol > p) {
			err = parse_line(k, p, eol);
			if (err == -EINVAL) {
				k->skipped_lines++;
				err = 0;
			} else if (err < 0) {
				break;
			}
		}
		p = nl ? nl + 1 : end;
	}
	return err;
}

static int cmp_ksym(const void *pa, const void *pb)
{
	const struct ksym *a = pa, *b = pb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	/* Keep the file's order among aliases, for a stable choice. */
	return a->name < b->name ? -1 : a->name > b->name;
}

void kallsyms_finish(struct kallsyms *k)
{
	if (!k->sorted)
		qsort(k->syms, k->n, sizeof(*k->syms), cmp_ksym);
	k->sorted = true;
}

const struct ksym *kallsyms_find(const struct kallsyms *k, uint64_t addr)
{
	size_t lo = 0, hi = k->n;
	const struct ksym *s;

	if (!k->nonzero || !k->sorted)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	s = &k->syms[lo - 1];
	/* Several names can share an address (aliases, "_text"/"_stext");
	 * the first in the file is the canonical one. */
	while (s > k->syms && s[-1].addr == s->addr)
		s--;
	if (s->addr == 0 || addr - s->addr > KALLSYMS_MAX_GAP)
		return NULL;
	return s;
}
