/* token_rows: the index's tokens table — API tokens and the browser's
 * sign-in sessions — as C structs: every statement that reads or writes
 * it is here (making a token and checking one is auth/tokens.c's; the
 * handlers see typed rows, never column names). A row keeps a token's
 * SHA-256 only, never the token. */
#ifndef NPROF_DAEMON_TOKEN_ROWS_H
#define NPROF_DAEMON_TOKEN_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct db;

/* One row. */
struct token_row {
	int64_t id;
	uid_t uid;			/* whose it is */
	char user[64];
	char name[72];			/* an API token's, as its user called it */
	char kind[16];			/* auth/tokens.h's TOKEN_API, TOKEN_SESSION */
	char csrf[64];			/* a session's CSRF token; "" for API tokens */
	uint64_t created_ms, expires_ms;
	uint64_t revoked_ms;		/* 0: not revoked */
};

/* A new row from t (its id and revoked_ms ignored) for the token whose
 * SHA-256 is hash (hex): 0 and its id into *ret_id, or -EIO. */
int token_row_insert(struct db *db, const struct token_row *t, const char *hash,
		     int64_t *ret_id);

/* The token of kind whose hash is hash, live at now_ms (not revoked, not
 * expired): 0 and *ret, -ENOENT, or -EIO. */
int token_row_live(struct db *db, const char *hash, const char *kind, uint64_t now_ms,
		   struct token_row *ret);

/* Token id of kind: 0 and *ret, -ENOENT, or -EIO. */
int token_row_get(struct db *db, int64_t id, const char *kind, struct token_row *ret);

/* Revoked at now_ms (one revoked already keeps its time). 0 or -EIO. */
int token_row_revoke(struct db *db, int64_t id, uint64_t now_ms);

/* How many tokens of kind uid holds live at now_ms, or -EIO. */
int64_t token_rows_live_count(struct db *db, uid_t uid, const char *kind, uint64_t now_ms);

/* The id of uid's oldest token of kind live at now_ms: 0 when there is
 * none, or -EIO. */
int64_t token_row_oldest_live(struct db *db, uid_t uid, const char *kind, uint64_t now_ms);

/* Which tokens a list shows. */
struct token_filter {
	const char *kind;
	bool all_users;			/* else only uid's */
	uid_t uid;
	long limit;
};

/* The newest first, at most f->limit: 0 and *ret (n of them; free it),
 * or -EIO (-ENOMEM). */
int token_rows_list(struct db *db, const struct token_filter *f, struct token_row **ret,
		    size_t *n);

#endif
