/* tokens: API tokens for HTTP. A token is "nprof_" and 43 characters of
 * base64url (256 random bits); the index keeps only its SHA-256, so a
 * stolen database lets no one in. Created, listed and revoked by their
 * owner over the unix socket (an admin sees and revokes all). */
#ifndef NPROF_DAEMON_TOKENS_H
#define NPROF_DAEMON_TOKENS_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/daemon.h"

#define TOKEN_LEN 49 /* "nprof_" + 43, without the NUL */

/* A new token for u named name, valid ttl_ms: the token into buf (at
 * least TOKEN_LEN + 1 bytes; shown once, never stored) and its id. */
int token_create(struct db *db, const struct user *u, const char *name, uint64_t ttl_ms,
		 char *buf, size_t len, int64_t *ret_id);

/* The live (unrevoked, unexpired) token's owner into ret: uid and name
 * (admin and via are the caller's to set). 0, or -EACCES. */
int token_check(struct db *db, const char *token, struct user *ret);

#endif
