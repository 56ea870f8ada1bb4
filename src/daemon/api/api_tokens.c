/* api_tokens: API tokens (created over the unix socket only: a token is
 * handed to the user the kernel vouched for) and the audit log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"
#include "daemon/api/api.h"
#include "daemon/auth/tokens.h"
#include "daemon/store/db.h"

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
	int64_t id;

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
	} else if (db_query_int(d->db, 0, "SELECT COUNT(*) FROM tokens WHERE uid = ? AND kind = 'api' "
				"AND revoked IS NULL AND expires > ?", "ui", (unsigned)rq->user.uid, (int64_t)now_ms()) >=
		   TOKENS_PER_USER) {
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
	json_t *rows = db_query(d->db, "SELECT id, user, uid, name, created, expires, revoked FROM "
				"tokens WHERE kind = 'api' AND (? OR uid = ?) ORDER BY id DESC LIMIT 1000", "iu",
				(int64_t)rq->user.admin, (unsigned)rq->user.uid);
	char when[40];

	for (size_t i = 0; i < json_array_size(rows); i++) {
		json_t *t = json_array_get(rows, i);
		json_t *rev = json_object_get(t, "revoked");

		json_object_set_new(t, "created", json_string(iso_time(
			(uint64_t)json_integer_value(json_object_get(t, "created")), when, sizeof(when))));
		json_object_set_new(t, "expires", json_string(iso_time(
			(uint64_t)json_integer_value(json_object_get(t, "expires")), when, sizeof(when))));
		json_object_set_new(t, "revoked", json_is_integer(rev) ? json_string(iso_time(
			(uint64_t)json_integer_value(rev), when, sizeof(when))) : json_null());
	}
	rp->json = json_pack("{so}", "tokens", rows ? rows : json_array());
}

void api_token_revoke(struct daemon *d, struct request *rq, struct reply *rp)
{
	const char *seg = rq->param[0];
	char *end;
	long long id = strtoll(seg, &end, 10);
	int64_t owner = *end || id <= 0 ? -1
		: db_query_int(d->db, -1, "SELECT uid FROM tokens WHERE id = ? AND kind = 'api'",
			       "i", (int64_t)id);

	if (owner < 0 || (!rq->user.admin && owner != (int64_t)rq->user.uid)) {
		reply_error(rp, 404, "id", "no token %.32s of yours", seg);
		return;
	}
	token_revoke(d->db, id);
	rp->json = json_pack("{sI}", "revoked", (json_int_t)id);
	snprintf(rp->result, sizeof(rp->result), "revoked token %lld", id);
}

/* For admins: the route says so (route.c). */
void api_audit(struct daemon *d, struct request *rq, struct reply *rp)
{
	const char *limit_text = rq->query(rq, "limit"), *user = rq->query(rq, "user"),
		   *worker = rq->query(rq, "worker");
	long limit = limit_text ? atol(limit_text) : 200;
	json_t *rows;
	char when[40];

	/* As instances: a row costs ~2 KiB as JSON objects while the reply
	 * is built; 100000 of them took the daemon to 280 MB, per request. */
	if (limit < 1 || limit > 10000) {
		reply_error(rp, 400, "limit", "limit must be 1 to 10000");
		return;
	}
	rows = db_query(d->db, "SELECT * FROM audit WHERE (? IS NULL OR user = ?) AND "
			"(? IS NULL OR worker = ?) ORDER BY id DESC LIMIT ?", "tttti",
			user, user, worker, worker, (int64_t)limit);
	for (size_t i = 0; i < json_array_size(rows); i++) {
		json_t *a = json_array_get(rows, i);

		json_object_set_new(a, "time", json_string(iso_time(
			(uint64_t)json_integer_value(json_object_get(a, "time")), when, sizeof(when))));
	}
	rp->json = json_pack("{so}", "audit", rows ? rows : json_array());
}
