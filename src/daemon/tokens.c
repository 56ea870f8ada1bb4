/* tokens: random bearer tokens, kept as SHA-256 hashes. */
#include <errno.h>
#include <gnutls/crypto.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "daemon/db.h"
#include "daemon/tokens.h"

static void hash_hex(const char *token, char out[65])
{
	unsigned char h[32];

	gnutls_hash_fast(GNUTLS_DIG_SHA256, token, strlen(token), h);
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", h[i]);
}

int token_create(struct db *db, const struct user *u, const char *name, uint64_t ttl_ms,
		 char *buf, size_t len, int64_t *ret_id)
{
	static const char b64url[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned char rnd[43];
	char token[TOKEN_LEN + 1], hash[65];
	uint64_t now = now_ms();
	int64_t id;

	if (len < sizeof(token))
		return -ENOBUFS;
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return -EIO;
	memcpy(token, "nprof_", 6);
	/* 43 characters of 6 bits each: 258 bits, the top 2 of the last
	 * one unused — 256 bits of randomness. */
	for (size_t i = 0; i < sizeof(rnd); i++)
		token[6 + i] = b64url[rnd[i] & 63];
	token[TOKEN_LEN] = '\0';
	hash_hex(token, hash);
	if (db_exec(db, &id,
		    "INSERT INTO tokens(uid, user, name, hash, created, expires) VALUES(?,?,?,?,?,?)",
		    "utttii", (unsigned)u->uid, u->name, name, hash, (int64_t)now,
		    (int64_t)(now + ttl_ms)) < 0)
		return -EIO;
	memcpy(buf, token, sizeof(token));
	*ret_id = id;
	return 0;
}

int token_check(struct db *db, const char *token, struct user *ret)
{
	char hash[65];
	json_t *rows;
	json_t *row;
	int r = -EACCES;

	if (strlen(token) != TOKEN_LEN || strncmp(token, "nprof_", 6))
		return -EACCES;
	hash_hex(token, hash);
	rows = db_query(db, "SELECT uid, user FROM tokens WHERE hash = ? AND revoked IS NULL "
			    "AND expires > ?", "ti", hash, (int64_t)now_ms());
	row = json_array_get(rows, 0);
	if (row) {
		ret->uid = (uid_t)json_integer_value(json_object_get(row, "uid"));
		snprintf(ret->name, sizeof(ret->name), "%s",
			 json_string_value(json_object_get(row, "user")));
		r = 0;
	}
	json_decref(rows);
	return r;
}
