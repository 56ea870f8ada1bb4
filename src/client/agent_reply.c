/* agent_reply: see agent_reply.h. Every read is bounded by the length
 * given, never by a NUL. */
#include "client/agent_reply.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

/* A run of bytes inside the reply. */
struct span {
	const char *p;
	size_t n;
};

static bool span_eat(struct span *s, const char *word)
{
	size_t k = strlen(word);

	if (s->n < k || memcmp(s->p, word, k))
		return false;
	s->p += k;
	s->n -= k;
	return true;
}

/* A decimal number that is all of s: 1 to 20 digits, at most max. */
static int span_uint(struct span s, uint64_t max, uint64_t *ret)
{
	uint64_t v = 0;

	if (!s.n || s.n > 20)
		return -EPROTO;
	for (size_t i = 0; i < s.n; i++) {
		unsigned dgt = (unsigned)(unsigned char)s.p[i] - '0';

		if (dgt > 9 || v > (max - dgt) / 10)
			return -EPROTO;
		v = v * 10 + dgt;
	}
	*ret = v;
	return 0;
}

/* s as printable ASCII into out, cut to fit. */
static void span_text(struct span s, char *out, size_t cap)
{
	size_t n = s.n < cap - 1 ? s.n : cap - 1;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s.p[i];

		out[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	out[n] = '\0';
}

int agent_reply_parse(const char *buf, size_t len, pid_t pid, size_t *ret_off,
		      size_t *ret_len, struct diag *d)
{
	size_t scan = len < AGENT_REPLY_MAX_HEADER + 1 ? len : AGENT_REPLY_MAX_HEADER + 1;
	const char *nl = scan ? memchr(buf, '\n', scan) : NULL;
	struct span line;
	size_t hdr, body;
	uint64_t want;

	if (!len)
		return diag_set(d, -EPROTO, "PID %d's agent closed the connection without a reply",
				(int)pid);
	if (!nl)
		return diag_set(d, -EPROTO, "PID %d's agent sent a malformed reply (%s)", (int)pid,
				len > AGENT_REPLY_MAX_HEADER ? "a first line of over 4 KiB"
							     : "no end to its first line");
	line = (struct span){ buf, (size_t)(nl - buf) };
	hdr = line.n + 1;
	body = len - hdr;
	if (span_eat(&line, "error") && (!line.n || span_eat(&line, " "))) {
		char msg[400];

		span_text(line, msg, sizeof(msg));
		return diag_set(d, !strncmp(msg, "permission denied", 17) ? -EACCES : -EIO,
				"PID %d's agent: %s", (int)pid, msg[0] ? msg : "unspecified error");
	}
	line = (struct span){ buf, (size_t)(nl - buf) };
	if (!span_eat(&line, "ok") || (line.n && !span_eat(&line, " ")))
		return diag_set(d, -EPROTO,
				"PID %d's agent sent a malformed reply (its first line is neither "
				"ok nor error)", (int)pid);
	if (line.n) {
		if (span_uint(line, UINT64_MAX, &want) < 0)
			return diag_set(d, -EPROTO,
					"PID %d's agent sent a malformed reply (a length that is "
					"not a number)", (int)pid);
		if (want != body)
			return diag_set(d, -EPROTO,
					"PID %d's agent announced %llu bytes and sent %zu%s",
					(int)pid, (unsigned long long)want, body,
					want > body ? ": the reply was cut short" : "");
	}
	*ret_off = hdr;
	*ret_len = body;
	return 0;
}

void agent_reply_clean_text(char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
			s[i] = '?';
	}
}

/* "key=value" tokens of a "state running" line. */
static int parse_running(struct span s, struct agent_status *st)
{
	while (s.n) {
		const char *sp = memchr(s.p, ' ', s.n);
		struct span tok = { s.p, sp ? (size_t)(sp - s.p) : s.n };

		s.p += tok.n + (sp != NULL);
		s.n -= tok.n + (sp != NULL);
		if (span_eat(&tok, "event="))
			span_text(tok, st->event, sizeof(st->event));
		else if (span_eat(&tok, "effective="))
			span_text(tok, st->effective, sizeof(st->effective));
		else if (span_eat(&tok, "interval=")) {
			if (span_uint(tok, UINT64_MAX, &st->interval) < 0)
				return -EPROTO;
		} else if (span_eat(&tok, "samples=")) {
			if (span_uint(tok, UINT64_MAX, &st->samples) < 0)
				return -EPROTO;
		}
		/* other keys: a newer agent's */
	}
	return 0;
}

int agent_status_parse(const char *buf, size_t len, struct agent_status *ret)
{
	struct agent_status st = { 0 };
	bool have_version = false, have_pid = false, have_state = false;
	struct span rest = { buf, len };

	while (rest.n) {
		const char *nl = memchr(rest.p, '\n', rest.n);
		struct span line = { rest.p, nl ? (size_t)(nl - rest.p) : rest.n };
		uint64_t v;

		rest.p += line.n + (nl != NULL);
		rest.n -= line.n + (nl != NULL);
		if (span_eat(&line, "nprof-agent ")) {
			if (have_version || span_uint(line, UINT_MAX, &v) < 0 || !v)
				return -EPROTO;
			st.version = (unsigned)v;
			have_version = true;
		} else if (span_eat(&line, "pid ")) {
			if (have_pid || span_uint(line, INT_MAX, &v) < 0 || !v)
				return -EPROTO;
			st.pid = (pid_t)v;
			have_pid = true;
		} else if (span_eat(&line, "events ")) {
			span_text(line, st.events, sizeof(st.events));
		} else if (span_eat(&line, "http-token ")) {
			span_text(line, st.http_token, sizeof(st.http_token));
		} else if (span_eat(&line, "http ")) {
			span_text(line, st.http, sizeof(st.http));
		} else if (span_eat(&line, "state ")) {
			if (have_state)
				return -EPROTO;
			have_state = true;
			if (span_eat(&line, "running")) {
				if (line.n && !span_eat(&line, " "))
					return -EPROTO;
				st.running = true;
				if (parse_running(line, &st) < 0)
					return -EPROTO;
			} else if (!(line.n == 4 && !memcmp(line.p, "idle", 4))) {
				return -EPROTO;
			}
		}
	}
	if (!have_version || !have_pid || !have_state)
		return -EPROTO;
	*ret = st;
	return 0;
}
