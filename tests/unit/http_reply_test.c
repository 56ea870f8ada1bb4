/* http_reply: nprofd's replies as libmicrohttpd writes them (Content-Length,
 * chunked, 204), read whole and a byte at a time alike; interim 1xx
 * replies; a body to the close; and each bound and malformation refused
 * with its sentence, a reply cut short told from a whole one. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/http_reply.h"
#include "test.h"

struct got {
	char body[1 << 16];
	size_t len;
	int fail_after;		/* > 0: on_body fails once this many bytes came */
};

static int on_body(void *arg, const char *data, size_t n)
{
	struct got *g = arg;

	if (g->len + n >= sizeof(g->body))
		return -ENOBUFS;
	memcpy(g->body + g->len, data, n);
	g->len += n;
	g->body[g->len] = '\0';
	if (g->fail_after && g->len >= (size_t)g->fail_after)
		return -EPIPE;
	return 0;
}

/* The reply in s read in pieces of step bytes (0: whole), then, with
 * close, the end of the connection. The first error, d saying why. */
static int read_reply(struct http_reply *r, struct got *g, const char *s, size_t len,
		      size_t step, int close, struct diag *d)
{
	int err = 0;

	memset(g, 0, sizeof(*g));
	http_reply_init(r, on_body, g);
	diag_clear(d);
	for (size_t off = 0; off < len && !err; off += step ? step : len) {
		size_t n = step && len - off > step ? step : len - off;

		err = http_reply_feed(r, s + off, n, d);
	}
	if (!err && close)
		err = http_reply_end(r, d);
	return err;
}

static struct http_reply r;
static struct got g;
static struct diag d;

#define READ(s, step, close) read_reply(&r, &g, s, strlen(s), step, close, &d)

int main(void)
{
	static const char mhd[] =
		"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 13\r\n"
		"Content-Type: application/json\r\nCache-Control: no-store\r\n\r\n"
		"{\"ok\": true}\n";
	static const char chunked[] =
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
		"Content-Disposition: attachment; filename=\"cpu-7.pb.gz\"\r\n\r\n"
		"5\r\nhello\r\n1;ext=\"a;b\"\r\n,\r\nB \r\n 0123456789\r\n0\r\nX-Trailer: t\r\n\r\n";
	char *big;

	CHECK(READ(mhd, 0, 0) == 0 && r.done && r.status == 200 && r.head_done,
	      "a reply of Content-Length: whole without waiting for the close");
	CHECK_STR(g.body, "{\"ok\": true}\n", "its body");
	CHECK(READ(mhd, 1, 1) == 0 && r.status == 200 && !strcmp(g.body, "{\"ok\": true}\n") &&
	      r.body_bytes == 13, "the same read a byte at a time");

	CHECK(READ(chunked, 0, 0) == 0 && r.done, "chunked: whole at the empty line after the trailers");
	CHECK_STR(g.body, "hello, 0123456789", "chunked: the chunks joined, extensions skipped");
	CHECK_STR(r.filename, "cpu-7.pb.gz", "Content-Disposition's quoted file name");
	{
		size_t step = 1;

		while (step < 8 && READ(chunked, step, 1) == 0 &&
		       !strcmp(g.body, "hello, 0123456789") && r.done)
			step++;
		CHECK_UINT(step, ==, 8, "chunked: the same in pieces of 1 to 7 bytes");
	}
	CHECK(READ("HTTP/1.1 200 OK\nTransfer-Encoding: Chunked\nContent-Length: 3\n\n"
		   "2\nab\n0\n\n", 0, 0) == 0 && r.done && !strcmp(g.body, "ab"),
	      "lines ending in LF alone; Transfer-Encoding over Content-Length");
	CHECK(READ("HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", 0, 0) == 0 && r.done &&
	      r.status == 204 && g.len == 0, "204: no body, whatever Content-Length says");
	CHECK(READ("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\nX: y\r\n\r\n"
		   "HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}", 0, 0) == 0 &&
	      r.status == 404 && !strcmp(g.body, "{}"), "interim 1xx replies skipped");
	CHECK(READ("HTTP/1.0 200 OK\r\nContent-Disposition: attachment; filename=a.txt; x=1\r\n\r\n"
		   "to the end", 3, 0) == 0 && !r.done, "a body without length: not done before the close");
	CHECK(http_reply_end(&r, &d) == 0 && r.done && !strcmp(g.body, "to the end") &&
	      !strcmp(r.filename, "a.txt"), "...and whole at the close; an unquoted file name");
	CHECK(READ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 500 x\r\n\r\n", 0, 0) == 0 &&
	      r.status == 200 && !strcmp(g.body, "ok"), "what follows a whole reply is not read");

	/* cut short */
	CHECK(READ("", 0, 1) == -EPROTO, "closed before any byte: -EPROTO");
	CHECK_STR(d.msg, "closed the connection without a reply", "...saying so");
	CHECK(READ("HTTP/1.1 200 OK\r\nContent-Le", 0, 1) == -EPROTO &&
	      !strcmp(d.msg, "closed the connection within the reply's head"), "closed within the head");
	CHECK(READ("HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n0123456789", 4, 1) == -EPROTO,
	      "closed within a body of Content-Length");
	CHECK_STR(d.msg, "closed the connection 10 bytes into a body of 4096", "...how far it got");
	CHECK(READ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", 0, 1) ==
	      -EPROTO && strstr(d.msg, "before its last chunk"), "closed before the last chunk");

	/* malformed */
	CHECK(READ("HTTP/2 200\r\n\r\n", 0, 0) == -EPROTO, "HTTP/2's status line: -EPROTO");
	CHECK_STR(d.msg, "a status line that is not HTTP/1.x NNN (HTTP/2 200)", "...quoting it");
	CHECK(READ("HTTP/1.1 2x0 OK\r\n\r\n", 0, 0) == -EPROTO && strstr(d.msg, "3 digits"),
	      "a code of other than 3 digits");
	CHECK(READ("HTTP/1.1 700 Odd\r\n\r\n", 0, 0) == -EPROTO, "a code past 599");
	CHECK(READ("HTTP/1.1 200 OK\r\nX\x1b[2J: a\r\n\r\n", 0, 0) == -EPROTO, "an escape in a name");
	CHECK_STR(d.msg, "a header line that is not Name: value (X?[2J: a)",
		  "...quoted with '?' for the escape");
	CHECK(READ("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", 0, 0) == -EPROTO &&
	      strstr(d.msg, "folded"), "a folded header line");
	CHECK(READ("HTTP/1.1 200 OK\r\nBad Name: a\r\n\r\n", 0, 0) == -EPROTO, "a space in a name");
	CHECK(READ("HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", 0, 0) == -EPROTO && strstr(d.msg, "CR"),
	      "a CR inside a line");
	CHECK(READ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc", 0, 0) ==
	      -EPROTO && strstr(d.msg, "differ"), "two Content-Lengths that differ");
	CHECK(READ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab", 0, 0) == 0,
	      "two that agree");
	CHECK(READ("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 0, 0) == -EPROTO,
	      "a negative Content-Length");
	CHECK(READ("HTTP/1.1 200 OK\r\nContent-Length: 1000000000000000000\r\n\r\n", 0, 0) == -EPROTO,
	      "a Content-Length of 10^18");
	CHECK(READ("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 0, 0) == -EPROTO,
	      "a Transfer-Encoding other than chunked");
	CHECK(READ("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", 0, 0) == -EPROTO,
	      "chunked in an HTTP/1.0 reply");
	CHECK(READ("HTTP/1.1 101 Switching Protocols\r\n\r\n", 0, 0) == -EPROTO, "101");
	CHECK(READ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 0, 0) == -EPROTO &&
	      strstr(d.msg, "not hex"), "a chunk size that is not hex");
	CHECK(READ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n", 0, 0) ==
	      -EPROTO && strstr(d.msg, "15 hex digits"), "a chunk size of 16 hex digits");
	CHECK(READ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", 0, 0) ==
	      -EPROTO && strstr(d.msg, "after a chunk"), "a chunk longer than its size");
	CHECK(http_reply_feed(&r, "x", 1, &d) == -EPROTO, "nothing is read after an error");

	/* bounds */
	big = malloc(200000);
	if (!big)
		return 1;
	strcpy(big, "HTTP/1.1 200 OK\r\nX: ");
	memset(big + strlen(big), 'a', 9000);
	strcpy(big + 20 + 9000, "\r\n\r\n");
	CHECK(READ(big, 1000, 0) == -EPROTO, "a header line of 9000 bytes");
	CHECK_STR(d.msg, "a header line of over 8 KiB", "...refused at 8 KiB");
	strcpy(big, "HTTP/1.1 200 OK\r\n");
	for (int i = 0; i < 101; i++)
		strcat(big, "X: y\r\n");
	strcat(big, "\r\n");
	CHECK(READ(big, 0, 0) == -EPROTO && strstr(d.msg, "100 header lines"), "101 header lines");
	strcpy(big, "HTTP/1.1 200 OK\r\n");
	for (int i = 0; i < 40; i++) {
		size_t n = strlen(big);

		memcpy(big + n, "X: ", 3);
		memset(big + n + 3, 'b', 2000);
		strcpy(big + n + 2003, "\r\n");
	}
	strcat(big, "\r\n");
	CHECK(READ(big, 4096, 0) == -EPROTO, "a head of 80 KB");
	CHECK_STR(d.msg, "a head of over 64 KiB", "...refused at 64 KiB");
	strcpy(big, "HTTP/1.1 200 OK\r\n");
	for (int i = 0; i < 11; i++)
		strcat(big, "HTTP/1.1 100 Continue\r\n\r\n");
	CHECK(READ(big + strlen("HTTP/1.1 200 OK\r\n"), 0, 0) == -EPROTO &&
	      strstr(d.msg, "interim"), "11 interim replies");
	strcpy(big, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n");
	for (int i = 0; i < 40; i++) {
		size_t n = strlen(big);

		memcpy(big + n, "T: ", 3);
		memset(big + n + 3, 'c', 2000);
		strcpy(big + n + 2003, "\r\n");
	}
	CHECK(READ(big, 0, 0) == -EPROTO && !strcmp(d.msg, "trailers of over 64 KiB"),
	      "trailers of 80 KB");
	free(big);

	memset(&g, 0, sizeof(g));
	g.fail_after = 3;
	http_reply_init(&r, on_body, &g);
	CHECK(http_reply_feed(&r, mhd, strlen(mhd), &d) == -EPIPE && !r.done,
	      "on_body's error stops the reading and is returned");
	return test_done();
}
