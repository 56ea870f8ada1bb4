/* api_tokens: API tokens (created over the unix socket only: a token is
 * handed to the user the kernel vouched for) and the audit log. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"
#include "daemon/api/api.h"
#include "daemon/auth/tokens.h"
#include "daemon/store/audit_rows.h"
#include "daemon/store/token_rows.h"

#define TOKEN_TTL_DEFAULT_NS (90ull * 24 * 3600 * 1000000000ull)
#define TOKEN_TTL_MAX_NS (366ull * 24 * 3600 * 1000000000ull)
/* Live tokens a user may hold: each is a row, and a list of them a reply. */
#define TOKENS_PER_USER 100

void api_token_create(struct daemon *d, struct request *rq, struct reply *rp)
{
	json_error_t jerr;
	json_t *body = rq->body_len ? json_loadb(rq->body, rq->body_len, JSON_REJECT_DUPLICATES, &jerr)
				    : json_object();
	json_t *name_v = json_object_get(body, "name"), *ttl_v = json_object_get(body, "expires_in");
	const char *name = json_is_string(name_v) ? json_string_value(name_v) : "api";
	uint64_t ttl = TOKEN_TTL_DEFAULT_NS;
	char token[TOKEN_LEN + 1], when[40];
	int64_t id, live;

	if (strcmp(rq->user.via, "socket")) {
		reply_error(rp, 403, NULL, "tokens are created over nprofd's unix socket only: run "
			    "nprof token create on the host");
	} else if (!json_is_object(body)) {
		reply_error(rp, 400, NULL, "the body must be a JSON object {\"name\": ..., "
			    "\"expires_in\": \"90d\"}");
	} else if (name_v && (!json_is_string(name_v) || !name[0] || strlen(name) > 64)) {
		reply_error(rp, 400, "name", "name must be a string of 1 to 64 bytes");
	} else if (ttl_v && (!json_is_string(ttl_v) ||
			     units_parse_duration_ns(json_string_value(ttl_v), 1000000000ull, &ttl) < 0 ||
			     !ttl || ttl > TOKEN_TTL_MAX_NS)) {
		reply_error(rp, 400, "expires_in", "expires_in must be a duration from 1s to 366d "
			    "(\"90d\", \"12h\")");
	} else if ((live = token_rows_live_count(d->db, rq->user.uid, TOKEN_API, now_ms())) < 0) {
		reply_error(rp, 500, NULL, "cannot read your tokens from the index (see nprofd's log)");
	} else if (live >= TOKENS_PER_USER) {
		reply_error(rp, 429, NULL, "you hold %d live tokens, the most a user may; revoke one "
			    "(nprof token list, nprof token revoke ID)", TOKENS_PER_USER);
	} else if (token_create(d->db, &rq->user, TOKEN_API, name, ttl / 1000000, token,
				sizeof(token), NULL, &id) < 0) {
		reply_error(rp, 500, NULL, "cannot write the token to the index (see nprofd's log)");
	} else {
		rp->status = 201;
		rp->json = json_pack("{sI ss ss ss ss}", "id", (json_int_t)id, "name", name,
				     "user", rq->user.name, "token", token, "expires",
				     iso_time(now_ms() + ttl / 1000000, when, sizeof(when)));
		snprintf(rp->result, sizeof(rp->result), "token %lld", (long long)id);
	}
	json_decref(body);
}

void api_tokens_list(struct daemon *d, struct request *rq, struct reply *rp)
{
	struct token_filter f = { .kind = TOKEN_API, .all_users = rq->user.admin,
				  .uid = rq->user.uid, .limit = 1000 };
	struct token_row *rows;
	json_t *list;
	size_t n;

	if (token_rows_list(d->db, &f, &rows, &n) < 0) {
		reply_error(rp, 500, NULL, "cannot read the tokens from the index (see nprofd's log)");
		return;
	}
	list = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(list, json_pack("{sI ss sI ss so so so}",
			"id", (json_int_t)rows[i].id, "user", rows[i].user,
			"uid", (json_int_t)rows[i].uid, "name", rows[i].name,
			"created", api_time_json(rows[i].created_ms),
			"expires", api_time_json(rows[i].expires_ms),
			"revoked", api_time_json(rows[i].revoked_ms)));
	free(rows);
	rp->json = json_pack("{so}", "tokens", list);
}

void api_token_revoke(struct daemon *d, struct request *rq, struct reply *rp)
{
	const char *seg = rq->param[0];
	char *end;
	long long id = strtoll(seg, &end, 10);
	struct token_row t;
	int r = *end || id <= 0 ? -ENOENT : token_row_get(d->db, id, TOKEN_API, &t);

	if (r == -EIO) {
		reply_error(rp, 500, NULL, "cannot read token %lld from the index (see nprofd's log)",
			    id);
	} else if (r < 0 || (!rq->user.admin && t.uid != rq->user.uid)) {
		reply_error(rp, 404, "id", "no token %.32s of yours", seg);
	} else if (token_revoke(d->db, id) < 0) {
		reply_error(rp, 500, NULL, "cannot revoke token %lld in the index (see nprofd's log)",
			    id);
	} else {
		rp->json = json_pack("{sI}", "revoked", (json_int_t)id);
		snprintf(rp->result, sizeof(rp->result), "revoked token %lld", id);
	}
}

/* For admins: the route says so (route.c). */
void api_audit(struct daemon *d, struct request *rq, struct reply *rp)
{
	const char *limit_text = rq->query(rq, "limit");
	struct audit_filter f = { .user = rq->query(rq, "user"), .worker = rq->query(rq, "worker"),
				  .limit = limit_text ? atol(limit_text) : 200 };
	struct audit_row *rows;
	json_t *list;
	size_t n;

	/* As instances: a row costs ~2 KiB as JSON objects while the reply
	 * is built; 100000 of them took the daemon to 280 MB, per request. */
	if (f.limit < 1 || f.limit > 10000) {
		reply_error(rp, 400, "limit", "limit must be 1 to 10000");
		return;
	}
	if (audit_list(d->db, &f, &rows, &n) < 0) {
		reply_error(rp, 500, NULL, "cannot read the audit log from the index (see nprofd's "
			    "log)");
		return;
	}
	list = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct audit_row *a = &rows[i];

		json_array_append_new(list, json_pack("{sI so ss sI ss ss ss so sI ss}",
			"id", (json_int_t)a->id, "time", api_time_json(a->time_ms), "user", a->user,
			"uid", (json_int_t)a->uid, "via", a->via, "method", a->method, "path", a->path,
			"worker", a->worker[0] ? json_string(a->worker) : json_null(),
			"status", (json_int_t)a->status, "result", a->result));
	}
	free(rows);
	rp->json = json_pack("{so}", "audit", list);
}
