/* audit_rows: the audit log as typed rows (audit_rows.h). */
#include "daemon/store/audit_rows.h"

#include <stdio.h>

#include "daemon/store/db.h"

/* Every read names its columns in this order (read_row's). */
#define COLUMNS "id, time, user, uid, via, method, path, worker, status, result"
enum { C_ID, C_TIME, C_USER, C_UID, C_VIA, C_METHOD, C_PATH, C_WORKER, C_STATUS, C_RESULT };

/* The row r is at, into the struct audit_row at elem (db_rows' reader). */
static void read_row(const struct db_row *r, void *elem)
{
	struct audit_row *a = elem;

	*a = (struct audit_row){
		.id = db_int(r, C_ID),
		.time_ms = (uint64_t)db_int(r, C_TIME),
		.uid = db_int(r, C_UID),
		.status = (unsigned)db_int(r, C_STATUS),
	};
	snprintf(a->user, sizeof(a->user), "%s", db_text(r, C_USER) ?: "");
	snprintf(a->via, sizeof(a->via), "%s", db_text(r, C_VIA) ?: "");
	snprintf(a->method, sizeof(a->method), "%s", db_text(r, C_METHOD) ?: "");
	snprintf(a->path, sizeof(a->path), "%s", db_text(r, C_PATH) ?: "");
	snprintf(a->worker, sizeof(a->worker), "%s", db_text(r, C_WORKER) ?: "");
	snprintf(a->result, sizeof(a->result), "%s", db_text(r, C_RESULT) ?: "");
}

int audit_insert(struct db *db, const struct audit_row *a)
{
	return db_exec(db, NULL, "INSERT INTO audit(time, user, uid, via, method, path, worker, "
		       "status, result) VALUES(?,?,?,?,?,?,?,?,?)", "itittttut", (int64_t)a->time_ms,
		       a->user, a->uid, a->via, a->method, a->path, a->worker[0] ? a->worker : NULL,
		       a->status, a->result);
}

int audit_list(struct db *db, const struct audit_filter *f, struct audit_row **ret, size_t *n)
{
	return db_rows(db, sizeof(**ret), read_row, ret, n, "SELECT " COLUMNS " FROM audit WHERE "
		       "(? IS NULL OR user = ?) AND (? IS NULL OR worker = ?) ORDER BY id DESC "
		       "LIMIT ?", "tttti", f->user, f->user, f->worker, f->worker, (int64_t)f->limit);
}
