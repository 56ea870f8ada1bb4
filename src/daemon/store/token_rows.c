/* token_rows: the tokens table as typed rows (token_rows.h). */
#include "daemon/store/token_rows.h"

#include <errno.h>
#include <stdio.h>

#include "daemon/store/db.h"

/* Every read names its columns in this order (read_row's). */
#define COLUMNS "id, uid, user, name, kind, csrf, created, expires, revoked"
enum { C_ID, C_UID, C_USER, C_NAME, C_KIND, C_CSRF, C_CREATED, C_EXPIRES, C_REVOKED };

/* The row r is at, into the struct token_row at elem (db_rows' reader). */
static void read_row(const struct db_row *r, void *elem)
{
	struct token_row *t = elem;

	*t = (struct token_row){
		.id = db_int(r, C_ID),
		.uid = (uid_t)db_int(r, C_UID),
		.created_ms = (uint64_t)db_int(r, C_CREATED),
		.expires_ms = (uint64_t)db_int(r, C_EXPIRES),
		.revoked_ms = (uint64_t)db_int(r, C_REVOKED),
	};
	snprintf(t->user, sizeof(t->user), "%s", db_text(r, C_USER) ?: "");
	snprintf(t->name, sizeof(t->name), "%s", db_text(r, C_NAME) ?: "");
	snprintf(t->kind, sizeof(t->kind), "%s", db_text(r, C_KIND) ?: "");
	snprintf(t->csrf, sizeof(t->csrf), "%s", db_text(r, C_CSRF) ?: "");
}

static int one_row(void *ctx, const struct db_row *r)
{
	read_row(r, ctx);
	return 1;
}

int token_row_insert(struct db *db, const struct token_row *t, const char *hash,
		     int64_t *ret_id)
{
	return db_exec(db, ret_id, "INSERT INTO tokens(uid, user, name, hash, created, expires, "
		       "kind, csrf) VALUES(?,?,?,?,?,?,?,?)", "utttiitt", (unsigned)t->uid, t->user,
		       t->name, hash, (int64_t)t->created_ms, (int64_t)t->expires_ms, t->kind,
		       t->csrf[0] ? t->csrf : NULL);
}

int token_row_live(struct db *db, const char *hash, const char *kind, uint64_t now_ms,
		   struct token_row *ret)
{
	int r = db_each(db, one_row, ret, "SELECT " COLUMNS " FROM tokens WHERE hash = ? AND "
			"kind = ? AND revoked IS NULL AND expires > ?", "tti", hash, kind,
			(int64_t)now_ms);

	return r < 0 ? -EIO : r ? 0 : -ENOENT;
}

int token_row_get(struct db *db, int64_t id, const char *kind, struct token_row *ret)
{
	int r = db_each(db, one_row, ret, "SELECT " COLUMNS " FROM tokens WHERE id = ? AND "
			"kind = ?", "it", id, kind);

	return r < 0 ? -EIO : r ? 0 : -ENOENT;
}

int token_row_revoke(struct db *db, int64_t id, uint64_t now_ms)
{
	return db_exec(db, NULL, "UPDATE tokens SET revoked = ? WHERE id = ? AND revoked IS NULL",
		       "ii", (int64_t)now_ms, id);
}

int64_t token_rows_live_count(struct db *db, uid_t uid, const char *kind, uint64_t now_ms)
{
	return db_value(db, "SELECT COUNT(*) FROM tokens WHERE uid = ? AND kind = ? AND "
			"revoked IS NULL AND expires > ?", "uti", (unsigned)uid, kind,
			(int64_t)now_ms);
}

int64_t token_row_oldest_live(struct db *db, uid_t uid, const char *kind, uint64_t now_ms)
{
	return db_value(db, "SELECT id FROM tokens WHERE uid = ? AND kind = ? AND revoked IS "
			"NULL AND expires > ? ORDER BY id LIMIT 1", "uti", (unsigned)uid, kind,
			(int64_t)now_ms);
}

int token_rows_list(struct db *db, const struct token_filter *f, struct token_row **ret,
		    size_t *n)
{
	return db_rows(db, sizeof(**ret), read_row, ret, n, "SELECT " COLUMNS " FROM tokens "
		       "WHERE kind = ? AND (? OR uid = ?) ORDER BY id DESC LIMIT ?", "tiui", f->kind,
		       (int64_t)f->all_users, (unsigned)f->uid, (int64_t)f->limit);
}
