#include "base/strtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"

void strtab_init(struct strtab *t, size_t max)
{
	memset(t, 0, sizeof(*t));
	t->max = max < STRTAB_MAX ? max : STRTAB_MAX;
}

void strtab_release(struct strtab *t)
{
	if (!t)
		return;
	free(t->buf);
	strtab_init(t, t->max);
}

int strtab_add(struct strtab *t, const char *s, size_t len, uint32_t *ret_off)
{
	/* len + 1 more bytes must fit: written so that nothing overflows. */
	if (len >= t->max - t->len) {
		t->refused++;
		return -ENOBUFS;
	}
	if (array_reserve(&t->buf, &t->cap, t->len + len + 1, 1) < 0)
		return -ENOMEM;
	memcpy(t->buf + t->len, s, len);
	t->buf[t->len + len] = '\0';
	*ret_off = (uint32_t)t->len;
	t->len += len + 1;
	return 0;
}

int strtab_reserve(struct strtab *t, size_t len)
{
	if (len > t->max - t->len)
		return -ENOBUFS;
	return array_reserve(&t->buf, &t->cap, t->len + len, 1) < 0 ? -ENOMEM : 0;
}
