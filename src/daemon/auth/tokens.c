/* tokens: random bearer tokens, kept as SHA-256 hashes. */
#include <errno.h>
#include <gnutls/crypto.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "base/hex.h"
#include "daemon/auth/tokens.h"
#include "daemon/core/wall_time.h"
#include "daemon/store/token_rows.h"

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
	struct token_row row = { .uid = u->uid, .created_ms = now, .expires_ms = now + ttl_ms };

	if (len < sizeof(token))
		return -ENOBUFS;
	if (token_random(token) < 0 || (csrf && token_random(csrf) < 0))
		return -EIO;
	hash_hex(token, hash);
	snprintf(row.user, sizeof(row.user), "%s", u->name);
	snprintf(row.name, sizeof(row.name), "%s", name);
	snprintf(row.kind, sizeof(row.kind), "%s", kind);
	snprintf(row.csrf, sizeof(row.csrf), "%s", csrf ? csrf : "");
	if (token_row_insert(db, &row, hash, ret_id) < 0)
		return -EIO;
	memcpy(buf, token, sizeof(token));
	return 0;
}

int token_check(struct db *db, const char *token, const char *kind, struct token_info *ret)
{
	struct token_row row;
	char hash[65];
	int r;

	if (strlen(token) != TOKEN_LEN || strncmp(token, "nprof_", 6))
		return -EACCES;
	hash_hex(token, hash);
	r = token_row_live(db, hash, kind, now_ms(), &row);
	if (r < 0)
		return r == -ENOENT ? -EACCES : r;
	ret->id = row.id;
	ret->uid = row.uid;
	snprintf(ret->user, sizeof(ret->user), "%s", row.user);
	snprintf(ret->csrf, sizeof(ret->csrf), "%s", row.csrf);
	ret->expires_ms = row.expires_ms;
	return 0;
}

int token_revoke(struct db *db, int64_t id)
{
	return token_row_revoke(db, id, now_ms());
}

bool token_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char diff = la != lb;

	for (size_t i = 0; i < la && i < lb; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return diff == 0;
}
