/* http_reply_fuzz: what answers on $NPROF_SOCKET, as nprof's client of
 * nprofd reads it (src/client/http_reply.c). The first byte chooses how
 * the rest is cut into pieces, as recv() might return it; the rest is
 * read whole and in those pieces, then the connection ends. Both reads
 * must agree on everything (the result, the status, the body to the
 * byte, the file name, the sentence), the body is never longer than
 * what came, and a refusal says why in one clean line. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/http_reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct body {
	char *buf;
	size_t len, cap;
};

static int on_body(void *arg, const char *data, size_t n)
{
	struct body *b = arg;

	if (!n || n > b->cap - b->len)
		abort(); /* never empty, never more than came */
	memcpy(b->buf + b->len, data, n);
	b->len += n;
	return 0;
}

struct result {
	int feed, end;
	struct http_reply r;
	struct body body;
	struct diag d;
};

static void clean_line(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			abort();
}

/* Reads buf in pieces of 1 to max bytes (max 0: whole). */
static void read_all(struct result *x, const char *buf, size_t len, unsigned seed, size_t max)
{
	size_t off = 0;

	x->body.buf = malloc(len ? len : 1);
	x->body.cap = len;
	if (!x->body.buf)
		abort();
	diag_clear(&x->d);
	http_reply_init(&x->r, on_body, &x->body);
	while (off < len && x->feed == 0) {
		size_t n = len - off;

		if (max) {
			seed = seed * 1103515245u + 12345u;
			n = 1 + (seed >> 16) % max;
			n = n < len - off ? n : len - off;
		}
		x->feed = http_reply_feed(&x->r, buf + off, n, &x->d);
		off += n;
	}
	x->end = x->feed == 0 ? http_reply_end(&x->r, &x->d) : x->feed;
	if (x->feed != 0 && x->feed != -EPROTO)
		abort();
	if (x->end != 0 && x->end != -EPROTO)
		abort();
	if (x->end && !x->d.msg[0])
		abort();
	clean_line(x->d.msg);
	if (x->r.body_bytes != x->body.len)
		abort();
	if (x->r.status && (x->r.status < 100 || x->r.status > 599))
		abort();
	if (x->r.head_done && x->r.status < 200)
		abort();
	if (x->end == 0 && (!x->r.done || !x->r.head_done))
		abort();
	if (strlen(x->r.filename) >= sizeof(x->r.filename))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct result whole, pieces;
	const char *buf = (const char *)data + 1;
	size_t len;
	unsigned seed;

	if (size < 1)
		return 0;
	seed = data[0];
	len = size - 1;
	memset(&whole, 0, sizeof(whole));
	memset(&pieces, 0, sizeof(pieces));
	read_all(&whole, buf, len, seed, 0);
	read_all(&pieces, buf, len, seed, 1 + seed % 64);
	if (whole.feed != pieces.feed || whole.end != pieces.end ||
	    whole.r.status != pieces.r.status || whole.r.done != pieces.r.done ||
	    whole.r.head_done != pieces.r.head_done || whole.body.len != pieces.body.len ||
	    memcmp(whole.body.buf, pieces.body.buf, whole.body.len) ||
	    strcmp(whole.r.filename, pieces.r.filename) || strcmp(whole.d.msg, pieces.d.msg))
		abort();
	free(whole.body.buf);
	free(pieces.body.buf);
	return 0;
}
