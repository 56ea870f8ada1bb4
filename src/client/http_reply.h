/* http_reply: reading an HTTP/1.1 response as it arrives, for nprof's
 * client of nprofd (daemon_client). Whatever holds the socket
 * $NPROF_SOCKET names answers, so nothing it sends is trusted: the
 * reader keeps one line at a time (HTTP_REPLY_LINE_MAX), at most
 * HTTP_REPLY_HEAD_MAX bytes of head and of trailers, and passes the body
 * on as it comes, de-chunked, without keeping it. It is fuzzed
 * (tests/fuzz/http_reply_fuzz.c: any input, fed whole or in pieces,
 * reads alike).
 *
 * Understood: the status line (HTTP/1.0 or 1.1), Content-Length,
 * Transfer-Encoding: chunked (with trailers), a body to the close when
 * neither is sent, no body for 1xx, 204 and 304, interim 1xx responses
 * skipped, and Content-Disposition's file name. Every other header is
 * read and skipped. Lines end in CRLF or LF. */
#ifndef NPROF_CLIENT_HTTP_REPLY_H
#define NPROF_CLIENT_HTTP_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/diag.h"

/* The longest line (status, header, chunk size, trailer), its end included. */
#define HTTP_REPLY_LINE_MAX 8192
/* The most bytes the head (status line and headers), and the trailers, may take. */
#define HTTP_REPLY_HEAD_MAX (64u << 10)
/* The most header lines of a head, and interim 1xx responses before the final one. */
#define HTTP_REPLY_FIELDS_MAX 100
#define HTTP_REPLY_INTERIM_MAX 10

/* Takes n bytes of the body (n > 0, data not NUL-terminated): 0, or a
 * -errno that stops the reading (http_reply_feed returns it). */
typedef int (*http_body_fn)(void *arg, const char *data, size_t n);

struct http_reply {
	/* the results, read by the caller */
	int status;		/* 100..599 once head_done, else 0 */
	bool head_done;		/* the final response's head is read */
	bool done;		/* the reply is whole: nothing more is read */
	uint64_t body_bytes;	/* body bytes passed on */
	char filename[256];	/* Content-Disposition's filename=, as sent, cut to fit; or "" */

	/* the reader's own */
	int state;
	http_body_fn on_body;
	void *arg;
	bool http10;		/* HTTP/1.0: no chunked */
	bool chunked, has_length;
	uint64_t length;	/* Content-Length */
	uint64_t left;		/* of the body or of the current chunk */
	size_t head_bytes;	/* of this head, or of the trailers */
	unsigned fields, interim;
	size_t line_len;
	char line[HTTP_REPLY_LINE_MAX];
};

/* A reader that passes the body to on_body(arg, ...). */
void http_reply_init(struct http_reply *r, http_body_fn on_body, void *arg);

/* Reads the next len bytes the server sent. 0 when they were read (once
 * r->done, what follows the reply is ignored); -EPROTO when the reply is
 * malformed or past a bound, d saying how in a few words ("a header line
 * of over 8 KiB", "a chunk size that is not hex"), control characters
 * from the reply shown as '?'; or on_body's -errno. After an error
 * nothing more is read. */
int http_reply_feed(struct http_reply *r, const char *buf, size_t len, struct diag *d);

/* The server closed the connection: 0 when the reply is whole (done,
 * or its body ran to the close); else -EPROTO, d saying how far it got
 * ("closed before any reply", "closed 812 bytes into a body of 4096"). */
int http_reply_end(struct http_reply *r, struct diag *d);

#endif
