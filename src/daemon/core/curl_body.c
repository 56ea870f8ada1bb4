/* curl_body: see curl_body.h. */
#include "daemon/core/curl_body.h"

#include <stdlib.h>
#include <string.h>

size_t curl_body_write(char *p, size_t size, size_t n, void *body)
{
	struct curl_body *b = body;
	size_t add = size * n;
	char *grown;

	if (b->len + add > b->max) {
		b->too_big = true;
		return 0; /* ends the transfer */
	}
	grown = realloc(b->data, b->len + add + 1);
	if (!grown)
		return 0;
	memcpy(grown + b->len, p, add);
	b->len += add;
	grown[b->len] = '\0';
	b->data = grown;
	return b->first_line && memchr(p, '\n', add) ? 0 : add;
}
