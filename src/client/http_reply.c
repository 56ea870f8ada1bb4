/* http_reply: see http_reply.h. One state per kind of bytes expected;
 * the line states gather a line into r->line, the body states pass
 * bytes on as they come. */
#include "client/http_reply.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

enum state {
	ST_STATUS,	/* a status line */
	ST_FIELD,	/* a header line, or the empty line ending the head */
	ST_LENGTH,	/* r->left bytes of a body of Content-Length */
	ST_CLOSE,	/* a body that runs to the close */
	ST_CHUNK_SIZE,	/* a chunk's size line */
	ST_CHUNK_DATA,	/* r->left bytes of a chunk */
	ST_CHUNK_END,	/* the empty line after a chunk's data */
	ST_TRAILER,	/* a trailer line, or the empty line ending the reply */
	ST_DONE,
	ST_FAILED,
};

void http_reply_init(struct http_reply *r, http_body_fn on_body, void *arg)
{
	memset(r, 0, offsetof(struct http_reply, line));
	r->state = ST_STATUS;
	r->on_body = on_body;
	r->arg = arg;
}

/* Up to 40 bytes of s as printable ASCII into out[48], for a message. */
static const char *excerpt(const char *s, size_t n, char *out)
{
	size_t k = n < 40 ? n : 40, i;

	for (i = 0; i < k; i++)
		out[i] = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ? s[i] : '?';
	if (n > k) {
		memcpy(out + k, "...", 3);
		k += 3;
	}
	out[k] = '\0';
	return out;
}

static int fail(struct http_reply *r, struct diag *d, const char *what, const char *s, size_t n)
{
	char ex[48];

	r->state = ST_FAILED;
	if (s)
		return diag_set(d, -EPROTO, "%s (%s)", what, excerpt(s, n, ex));
	return diag_set(d, -EPROTO, "%s", what);
}

/* tchar of RFC 9110: the bytes a header's name may hold. */
static bool is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* "HTTP/1.x NNN[ reason]". */
static int status_line(struct http_reply *r, const char *s, size_t n, struct diag *d)
{
	int status = 0;

	if (n < 12 || memcmp(s, "HTTP/1.", 7) || s[7] < '0' || s[7] > '9' || s[8] != ' ' ||
	    (n > 12 && s[12] != ' '))
		return fail(r, d, "a status line that is not HTTP/1.x NNN", s, n);
	for (int i = 9; i < 12; i++) {
		if (s[i] < '0' || s[i] > '9')
			return fail(r, d, "a status line whose code is not 3 digits", s, n);
		status = status * 10 + (s[i] - '0');
	}
	if (status < 100 || status > 599)
		return fail(r, d, "a status code out of 100..599", s, n);
	r->status = status;
	r->http10 = s[7] == '0';
	return 0;
}

/* Content-Disposition: attachment; filename="NAME" (or filename=NAME). */
static void disposition(struct http_reply *r, const char *v, size_t n)
{
	const char *p = memmem(v, n, "filename=", 9), *end = v + n;
	char quote = 0;
	size_t i = 0;

	if (!p)
		return;
	p += 9;
	if (p < end && *p == '"')
		quote = *p++;
	while (p < end && i + 1 < sizeof(r->filename) &&
	       (quote ? *p != quote : *p != ';' && *p != ' '))
		r->filename[i++] = *p++;
	r->filename[i] = '\0';
}

/* The head is whole: a final response's, or an interim 1xx one's. */
static int head_end(struct http_reply *r, struct diag *d)
{
	if (r->status < 200) {
		if (r->status == 101)
			return fail(r, d, "101 Switching Protocols, which nothing asked for",
				    NULL, 0);
		if (++r->interim > HTTP_REPLY_INTERIM_MAX)
			return fail(r, d, "more than 10 interim 1xx responses", NULL, 0);
		r->status = 0;
		r->chunked = r->has_length = false;
		r->length = 0;
		r->head_bytes = 0;
		r->fields = 0;
		r->filename[0] = '\0';
		r->state = ST_STATUS;
		return 0;
	}
	r->head_done = true;
	if (r->status == 204 || r->status == 304)
		r->state = ST_DONE;
	else if (r->chunked)
		r->state = ST_CHUNK_SIZE;
	else if (r->has_length)
		r->state = r->length ? ST_LENGTH : ST_DONE;
	else
		r->state = ST_CLOSE;
	r->left = r->length;
	r->done = r->state == ST_DONE;
	return 0;
}

/* "Name: value", or the empty line that ends the head. */
static int field_line(struct http_reply *r, const char *s, size_t n, struct diag *d)
{
	size_t k = 0;
	const char *v, *end = s + n;

	if (!n)
		return head_end(r, d);
	if (++r->fields > HTTP_REPLY_FIELDS_MAX)
		return fail(r, d, "more than 100 header lines", NULL, 0);
	if (is_ows(s[0]))
		return fail(r, d, "a folded header line", s, n);
	while (k < n && is_tchar((unsigned char)s[k]))
		k++;
	if (!k || k == n || s[k] != ':')
		return fail(r, d, "a header line that is not Name: value", s, n);
	v = s + k + 1;
	while (v < end && is_ows(*v))
		v++;
	while (end > v && is_ows(end[-1]))
		end--;
	if (k == 14 && !strncasecmp(s, "Content-Length", k)) {
		uint64_t len = 0;

		if (v == end || end - v > 18)
			return fail(r, d, "a Content-Length that is not a number below 10^18", s, n);
		for (const char *p = v; p < end; p++) {
			if (*p < '0' || *p > '9')
				return fail(r, d, "a Content-Length that is not a number below 10^18",
					    s, n);
			len = len * 10 + (uint64_t)(*p - '0');
		}
		if (r->has_length && len != r->length)
			return fail(r, d, "two Content-Length headers that differ", s, n);
		r->has_length = true;
		r->length = len;
	} else if (k == 17 && !strncasecmp(s, "Transfer-Encoding", k)) {
		/* chunked is the only coding nprofd uses, and HTTP/1.1's own */
		if (r->chunked || r->http10 || end - v != 7 || strncasecmp(v, "chunked", 7))
			return fail(r, d, "a Transfer-Encoding other than one chunked in HTTP/1.1",
				    s, n);
		r->chunked = true;
	} else if (k == 19 && !strncasecmp(s, "Content-Disposition", k)) {
		disposition(r, v, (size_t)(end - v));
	}
	/* With Transfer-Encoding, Content-Length is not the body's (RFC 9112, 6.3). */
	return 0;
}

/* A chunk's size in hex, perhaps extensions after a ';'. */
static int chunk_size_line(struct http_reply *r, const char *s, size_t n, struct diag *d)
{
	uint64_t size = 0;
	size_t k = 0;

	for (; k < n; k++) {
		char c = s[k];
		unsigned x = c >= '0' && c <= '9' ? (unsigned)(c - '0')
			   : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
			   : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16;

		if (x == 16)
			break;
		if (k == 15)
			return fail(r, d, "a chunk size of more than 15 hex digits", s, n);
		size = size << 4 | x;
	}
	if (!k)
		return fail(r, d, "a chunk size that is not hex", s, n);
	while (k < n && is_ows(s[k]))
		k++;
	if (k < n && s[k] != ';')
		return fail(r, d, "a chunk size that is not hex", s, n);
	if (size) {
		r->left = size;
		r->state = ST_CHUNK_DATA;
	} else {
		r->head_bytes = 0;
		r->state = ST_TRAILER;
	}
	return 0;
}

/* A whole line of r->line (its end removed) in state r->state. */
static int on_line(struct http_reply *r, size_t n, struct diag *d)
{
	const char *s = r->line;

	if (memchr(s, '\r', n) || memchr(s, '\0', n))
		return fail(r, d, "a CR or NUL byte inside a line", s, n);
	switch (r->state) {
	case ST_STATUS:
		if (status_line(r, s, n, d) < 0)
			return -EPROTO;
		r->state = ST_FIELD;
		return 0;
	case ST_FIELD:
		return field_line(r, s, n, d);
	case ST_CHUNK_SIZE:
		return chunk_size_line(r, s, n, d);
	case ST_CHUNK_END:
		if (n)
			return fail(r, d, "bytes after a chunk's data", s, n);
		r->state = ST_CHUNK_SIZE;
		return 0;
	case ST_TRAILER:
		if (!n) {
			r->state = ST_DONE;
			r->done = true;
		}
		return 0;
	default:
		return fail(r, d, "a line where none was expected", NULL, 0);
	}
}

/* Gathers a line from buf; *used bytes taken. */
static int take_line(struct http_reply *r, const char *buf, size_t len, size_t *used,
		     struct diag *d)
{
	const char *nl = memchr(buf, '\n', len);
	size_t take = nl ? (size_t)(nl - buf) + 1 : len, n;
	bool head = r->state == ST_STATUS || r->state == ST_FIELD || r->state == ST_TRAILER;

	size_t line_room = HTTP_REPLY_LINE_MAX - r->line_len;
	size_t head_room = head ? HTTP_REPLY_HEAD_MAX - r->head_bytes : SIZE_MAX;

	*used = take;
	/* The bound the bytes cross first is named, however they were cut. */
	if (take > line_room && line_room <= head_room)
		return fail(r, d, r->state == ST_CHUNK_SIZE || r->state == ST_CHUNK_END
				  ? "a chunk size line of over 8 KiB" : "a header line of over 8 KiB",
			    NULL, 0);
	if (take > head_room)
		return fail(r, d, r->state == ST_TRAILER ? "trailers of over 64 KiB"
							 : "a head of over 64 KiB", NULL, 0);
	if (head)
		r->head_bytes += take;
	memcpy(r->line + r->line_len, buf, take);
	r->line_len += take;
	if (!nl)
		return 0;
	n = r->line_len - 1;
	if (n && r->line[n - 1] == '\r')
		n--;
	r->line_len = 0;
	return on_line(r, n, d);
}

static int body(struct http_reply *r, const char *buf, size_t n)
{
	r->body_bytes += n;
	return r->on_body ? r->on_body(r->arg, buf, n) : 0;
}

int http_reply_feed(struct http_reply *r, const char *buf, size_t len, struct diag *d)
{
	int err;

	if (r->state == ST_FAILED)
		return diag_set(d, -EPROTO, "a reply already malformed");
	while (len && r->state != ST_DONE) {
		size_t used;

		switch (r->state) {
		case ST_LENGTH:
		case ST_CHUNK_DATA:
			used = len < r->left ? len : (size_t)r->left;
			r->left -= used;
			if (!r->left) {
				r->state = r->state == ST_LENGTH ? ST_DONE : ST_CHUNK_END;
				r->done = r->state == ST_DONE;
			}
			err = body(r, buf, used);
			break;
		case ST_CLOSE:
			used = len;
			err = body(r, buf, used);
			break;
		default:
			err = take_line(r, buf, len, &used, d);
			break;
		}
		if (err < 0) {
			r->state = ST_FAILED;
			r->done = false;
			return err;
		}
		buf += used;
		len -= used;
	}
	return 0;
}

int http_reply_end(struct http_reply *r, struct diag *d)
{
	switch (r->state) {
	case ST_DONE:
		return 0;
	case ST_CLOSE:
		r->state = ST_DONE;
		r->done = true;
		return 0;
	case ST_FAILED:
		return diag_set(d, -EPROTO, "a reply already malformed");
	case ST_STATUS:
		if (!r->interim && !r->line_len)
			return fail(r, d, "closed the connection without a reply", NULL, 0);
		/* fall through */
	case ST_FIELD:
		return fail(r, d, "closed the connection within the reply's head", NULL, 0);
	case ST_LENGTH:
		r->state = ST_FAILED;
		return diag_set(d, -EPROTO, "closed the connection %llu bytes into a body of %llu",
				(unsigned long long)r->body_bytes, (unsigned long long)r->length);
	default:
		r->state = ST_FAILED;
		return diag_set(d, -EPROTO, "closed the connection %llu bytes into a chunked body, "
				"before its last chunk", (unsigned long long)r->body_bytes);
	}
}
