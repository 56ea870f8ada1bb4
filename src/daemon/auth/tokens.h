/* tokens: bearer tokens for HTTP, of two kinds: API tokens, which users
 * create for scripts (over the unix socket: an admin sees and revokes
 * all), and sessions, which a browser gets by signing in (sent back as
 * a cookie, with a CSRF token its page must echo). A token is "nprof_"
 * and 43 characters of base64url (256 random bits); the index keeps only
 * its SHA-256, so a stolen database lets no one in. */
#ifndef NPROF_DAEMON_TOKENS_H
#define NPROF_DAEMON_TOKENS_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/core/daemon.h"

#define TOKEN_LEN 49 /* "nprof_" + 43, without the NUL */

#define TOKEN_API "api"
#define TOKEN_SESSION "session"
#define SESSION_COOKIE "nprof_session"	/* the cookie a session's token is sent in */

/* What a live token stands for. */
struct token_info {
	int64_t id;
	uid_t uid;
	char user[64];
	char csrf[64];			/* sessions (TOKEN_LEN of them); "" for API tokens */
	uint64_t expires_ms;
};

/* A new token of kind for u named name, valid ttl_ms: the token into buf
 * (at least TOKEN_LEN + 1 bytes; shown once, never stored) and its id.
 * A session gets a CSRF token too, into csrf (TOKEN_LEN + 1 bytes;
 * NULL for API tokens). */
int token_create(struct db *db, const struct user *u, const char *kind, const char *name,
		 uint64_t ttl_ms, char *buf, size_t len, char *csrf, int64_t *ret_id);

/* The live (unrevoked, unexpired) token of kind: who it stands for, into
 * ret. 0, -EACCES, or -EIO when the index cannot be read. */
int token_check(struct db *db, const char *token, const char *kind, struct token_info *ret);

/* Ends the token now (revoked); 0, or -EIO. */
int token_revoke(struct db *db, int64_t id);

/* Whether a and b (NUL-terminated) are equal, in a time that does not
 * depend on where they first differ. */
bool token_equal(const char *a, const char *b);

#endif
