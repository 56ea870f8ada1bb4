/* agent_params_fuzz: what the agent reads from its callers — the option
 * string (NPROF_START, nprof_start(), the control socket's start line),
 * the key=value pairs of /prof's query one by one, and the HTTP token
 * check. The first byte picks which; the rest is the input.
 *
 * Accepted options stay within their documented ranges and every string
 * field is terminated; a refusal says why in one printable line; the
 * token check accepts only the token itself. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/http_auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TOKEN "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void one_line(const struct diag *d)
{
	size_t n = strnlen(d->msg, sizeof(d->msg));

	if (n == 0 || n == sizeof(d->msg))
		abort();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)d->msg[i] < 0x20 && d->msg[i] != '\t')
			abort(); /* a refusal echoing a control character */
}

static void sane(const struct agent_options *o)
{
	if (o->event > EVENT_LOCK || o->max_depth > 2048 || o->wall_threads > 4096)
		abort();
	if (o->interval_text[0] && o->interval_ns && o->interval_ns < 100000 &&
	    o->event != EVENT_LOCK)
		abort();
	if (strnlen(o->file, sizeof(o->file)) == sizeof(o->file) ||
	    strnlen(o->title, sizeof(o->title)) == sizeof(o->title) ||
	    strnlen(o->interval_text, sizeof(o->interval_text)) == sizeof(o->interval_text))
		abort();
	if (o->out.minwidth < 0)
		abort();
}

static void options_text(const char *text)
{
	struct agent_options o;
	struct diag d;

	diag_clear(&d);
	if (agent_options_parse(text, &o, &d) < 0)
		one_line(&d);
	else
		sane(&o);
}

/* "k=v&k=v", each pair set on one options struct as /prof does, up to
 * the first it refuses. */
static void query(char *text)
{
	struct agent_options o;
	char *save = NULL;
	struct diag d;

	diag_clear(&d);
	if (agent_options_parse("", &o, &d) < 0)
		abort();
	for (char *pair = strtok_r(text, "&", &save); pair; pair = strtok_r(NULL, "&", &save)) {
		char *val = strchr(pair, '=');

		if (val)
			*val++ = '\0';
		diag_clear(&d);
		if (agent_options_set(&o, pair, val, &d) < 0) {
			one_line(&d);
			return; /* /prof answers 400 at the first bad one */
		}
		sane(&o);
	}
}

/* "AUTHORIZATION\nQUERY": either part may be empty (absent). */
static void token(char *text)
{
	struct http_auth a = { .open = false, .token = TOKEN };
	char *nl = strchr(text, '\n');
	const char *auth = text, *q = NULL;

	if (nl) {
		*nl = '\0';
		q = nl + 1;
	}
	if (!*auth)
		auth = NULL;
	if (q && !*q)
		q = NULL;
	if (http_auth_check(&a, auth, q) == HTTP_AUTH_OK &&
	    !(q && !strcmp(q, TOKEN)) && !(auth && strstr(auth, TOKEN)))
		abort(); /* accepted without the token */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;

	if (size < 1 || size > 8192)
		return 0;
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	switch (data[0] % 3) {
	case 0: options_text(text); break;
	case 1: query(text); break;
	default: token(text); break;
	}
	free(text);
	return 0;
}
