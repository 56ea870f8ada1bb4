/* reply: the reply every handler fills, whichever door the request came
 * by — the one error writer, the JSON rendered — and a request's query
 * written unambiguously. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "daemon/core/daemon.h"

void reply_error(struct reply *rp, unsigned status, const char *field, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* A message echoes what the client sent (a path, a key), which may
	 * be neither text nor UTF-8, or be cut inside a character by a
	 * "%.200s"; jansson takes only UTF-8, and would leave no body. */
	utf8_clean(msg);
	json_decref(rp->json);
	rp->status = status;
	rp->json = json_pack("{ss}", "error", msg);
	if (rp->json && field)
		json_object_set_new(rp->json, "field", json_string(field));
	snprintf(rp->result, sizeof(rp->result), "%.255s", msg);
}

bool reply_render(struct reply *rp)
{
	char *body = json_dumps(rp->json, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(6));
	size_t len = body ? strlen(body) : 0;
	char *nl = body ? realloc(body, len + 2) : NULL;

	if (!nl) {
		free(body);
		return false;
	}
	nl[len] = '\n';
	nl[len + 1] = '\0';
	free(rp->body);
	rp->body = nl;
	rp->body_len = len + 1;
	return true;
}

bool request_args_add(char *args, size_t size, size_t *len, const char *key, const char *value)
{
	int n = value ? snprintf(args + *len, size - *len, "%zu:%s=%zu:%s;", strlen(key), key,
				 strlen(value), value)
		      : snprintf(args + *len, size - *len, "%zu:%s;", strlen(key), key);

	if (n < 0 || (size_t)n >= size - *len)
		return false;
	*len += (size_t)n;
	return true;
}
