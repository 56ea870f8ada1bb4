/* tokens: random bearer tokens, kept as SHA-256 hashes. */
#include <errno.h>
#include <gnutls/crypto.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "base/hex.h"
#include "daemon/auth/tokens.h"
#include "daemon/core/wall_time.h"
#include "daemon/store/db.h"

static void hash_hex(const char *token, char out[65])
{
	unsigned char h[32];

	gnutls_hash_fast(GNUTLS_DIG_SHA256, token, strlen(token), h);
	hex_encode(h, sizeof(h), out);
}

/* "nprof_" and 43 random base64url characters into token. */
static int token_random(char token[TOKEN_LEN + 1])
{
	static const char b64url[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned char rnd[43];

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return -EIO;
	memcpy(token, "nprof_", 6);
	/* 43 characters of 6 bits each: 258 bits, the top 2 of the last
	 * one unused — 256 bits of randomness. */
	for (size_t i = 0; i < sizeof(rnd); i++)
		token[6 + i] = b64url[rnd[i] & 63];
	token[TOKEN_LEN] = '\0';
	return 0;
}

int token_create(struct db *db, const struct user *u, const char *kind, const char *name,
		 uint64_t ttl_ms, char *buf, size_t len, char *csrf, int64_t *ret_id)
{
	char token[TOKEN_LEN + 1], hash[65];
	uint64_t now = now_ms();
	int64_t id;

	if (len < sizeof(token))
		return -ENOBUFS;
	if (token_random(token) < 0 || (csrf && token_random(csrf) < 0))
		return -EIO;
	hash_hex(token, hash);
	if (db_exec(db, &id,
		    "INSERT INTO tokens(uid, user, name, hash, created, expires, kind, csrf) "
		    "VALUES(?,?,?,?,?,?,?,?)", "utttiitt", (unsigned)u->uid, u->name, name, hash,
		    (int64_t)now, (int64_t)(now + ttl_ms), kind, csrf) < 0)
		return -EIO;
	memcpy(buf, token, sizeof(token));
	*ret_id = id;
	return 0;
}

int token_check(struct db *db, const char *token, const char *kind, struct token_info *ret)
{
	char hash[65];
	json_t *rows;
	json_t *row;
	int r = -EACCES;

	if (strlen(token) != TOKEN_LEN || strncmp(token, "nprof_", 6))
		return -EACCES;
	hash_hex(token, hash);
	rows = db_query(db, "SELECT id, uid, user, csrf, expires FROM tokens WHERE hash = ? AND "
			    "kind = ? AND revoked IS NULL AND expires > ?", "tti", hash, kind,
			    (int64_t)now_ms());
	row = json_array_get(rows, 0);
	if (row) {
		const char *csrf = json_string_value(json_object_get(row, "csrf"));

		ret->id = json_integer_value(json_object_get(row, "id"));
		ret->uid = (uid_t)json_integer_value(json_object_get(row, "uid"));
		snprintf(ret->user, sizeof(ret->user), "%s",
			 json_string_value(json_object_get(row, "user")));
		snprintf(ret->csrf, sizeof(ret->csrf), "%s", csrf ? csrf : "");
		ret->expires_ms = (uint64_t)json_integer_value(json_object_get(row, "expires"));
		r = 0;
	}
	json_decref(rows);
	return r;
}

int token_revoke(struct db *db, int64_t id)
{
	return db_exec(db, NULL, "UPDATE tokens SET revoked = ? WHERE id = ? AND revoked IS NULL",
		       "ii", (int64_t)now_ms(), id);
}

bool token_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char diff = la != lb;

	for (size_t i = 0; i < la && i < lb; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return diff == 0;
}
