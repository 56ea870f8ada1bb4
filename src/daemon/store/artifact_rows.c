/* artifact_rows: the artifacts table as typed rows (artifact_rows.h). */
#include "daemon/store/artifact_rows.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/store/db.h"

/* Every read names its columns in this order (read_row's). */
#define COLUMNS "id, instance, worker, worker_uid, name, format, file, size, created, complete"
enum { C_ID, C_INSTANCE, C_WORKER, C_WORKER_UID, C_NAME, C_FORMAT, C_FILE, C_SIZE, C_CREATED,
       C_COMPLETE };

/* The row r is at, into the struct artifact at elem (db_rows' reader). */
static void read_row(const struct db_row *r, void *elem)
{
	struct artifact *a = elem;
	int64_t complete = db_int(r, C_COMPLETE);

	*a = (struct artifact){
		.id = db_int(r, C_ID),
		.instance = db_int(r, C_INSTANCE),
		.worker_uid = (uid_t)db_int(r, C_WORKER_UID),
		.size = (uint64_t)db_int(r, C_SIZE),
		.created_ms = (uint64_t)db_int(r, C_CREATED),
		/* the schema's CHECK allows these three alone */
		.complete = complete == ARTIFACT_COMPLETE ? ARTIFACT_COMPLETE
			  : complete == ARTIFACT_PARTIAL ? ARTIFACT_PARTIAL : ARTIFACT_WRITING,
	};
	snprintf(a->worker, sizeof(a->worker), "%s", db_text(r, C_WORKER) ?: "");
	snprintf(a->name, sizeof(a->name), "%s", db_text(r, C_NAME) ?: "");
	snprintf(a->format, sizeof(a->format), "%s", db_text(r, C_FORMAT) ?: "");
	snprintf(a->file, sizeof(a->file), "%s", db_text(r, C_FILE) ?: "");
}

static int one_row(void *ctx, const struct db_row *r)
{
	read_row(r, ctx);
	return 1;
}

int artifact_get(struct db *db, int64_t id, struct artifact *ret)
{
	int r = db_each(db, one_row, ret, "SELECT " COLUMNS " FROM artifacts WHERE id = ?", "i", id);

	return r < 0 ? -EIO : r ? 0 : -ENOENT;
}

int artifact_oldest_settled(struct db *db, struct artifact *ret)
{
	int r = db_each(db, one_row, ret, "SELECT " COLUMNS " FROM artifacts WHERE complete > 0 "
			"AND id < (SELECT MAX(id) FROM artifacts) ORDER BY (SELECT schedule IS NULL "
			"FROM instances WHERE instances.id = artifacts.instance), id LIMIT 1", "");

	return r < 0 ? -EIO : r ? 0 : -ENOENT;
}

int artifacts_list(struct db *db, const struct artifact_filter *f, struct artifact **ret,
		   size_t *n)
{
	return db_rows(db, sizeof(**ret), read_row, ret, n, "SELECT " COLUMNS " FROM artifacts "
		       "WHERE (? IS NULL OR worker = ?) AND (? = 0 OR instance = ?) "
		       "AND (? OR worker_uid = ?) ORDER BY id DESC LIMIT ?", "ttiiiui",
		       f->worker, f->worker, f->instance, f->instance, (int64_t)f->all_users,
		       (unsigned)f->uid, (int64_t)f->limit);
}

int artifacts_of_instances(struct db *db, const int64_t *ids, size_t n, struct artifact **ret,
			   size_t *m)
{
	/* the ids as one JSON array, which json_each reads: one statement
	 * whatever their number */
	size_t cap = 3 + n * 21, len = 0;	/* "[", the ids with commas, "]", NUL */
	char *list = malloc(cap);
	int r;

	if (!list)
		return -ENOMEM;
	list[len++] = '[';
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(list + len, cap - len, "%s%lld", i ? "," : "",
					(long long)ids[i]);
	snprintf(list + len, cap - len, "]");
	r = db_rows(db, sizeof(**ret), read_row, ret, m, "SELECT " COLUMNS " FROM artifacts "
		    "WHERE instance IN (SELECT value FROM json_each(?)) ORDER BY id", "t", list);
	free(list);
	return r;
}

int artifact_insert(struct db *db, const struct artifact *a, int64_t *ret_id)
{
	return db_exec(db, ret_id, "INSERT INTO artifacts(instance, worker, worker_uid, name, "
		       "format, file, size, created, complete) VALUES(?,?,?,?,?,?,?,?,?)",
		       "ituttti" "ii", a->instance, a->worker, (unsigned)a->worker_uid, a->name,
		       a->format, a->file, (int64_t)a->size, (int64_t)a->created_ms,
		       (int64_t)a->complete);
}

int artifact_settled(struct db *db, int64_t id, uint64_t size, enum artifact_state complete)
{
	return db_exec(db, NULL, "UPDATE artifacts SET size = ?, complete = ? WHERE id = ?", "iii",
		       (int64_t)size, (int64_t)complete, id);
}

int artifact_delete(struct db *db, int64_t id)
{
	return db_exec(db, NULL, "DELETE FROM artifacts WHERE id = ?", "i", id);
}

static int two_ints(void *ctx, const struct db_row *r)
{
	uint64_t *v = ctx;

	v[0] = (uint64_t)db_int(r, 0);
	v[1] = (uint64_t)db_int(r, 1);
	return 1;
}

int artifacts_totals(struct db *db, uint64_t *count, uint64_t *bytes)
{
	uint64_t v[2] = { 0, 0 };

	if (db_each(db, two_ints, v, "SELECT COUNT(*), IFNULL(SUM(size), 0) FROM artifacts", "") < 0)
		return -EIO;
	*count = v[0];
	*bytes = v[1];
	return 0;
}

int artifacts_of_range(struct db *db, const struct profile_range *r, struct artifact **ret,
		       size_t *n)
{
	/* (the artifacts' columns, from the join) */
	return db_rows(db, sizeof(**ret), read_row, ret, n, "SELECT a.id, a.instance, a.worker, "
		       "a.worker_uid, a.name, a.format, a.file, a.size, a.created, a.complete "
		       "FROM artifacts a JOIN instances i ON a.instance = i.id "
		       "WHERE i.kind = 'profile' AND i.mode = ? AND i.service = ? "
		       "AND i.schedule IS NOT NULL AND i.status IN ('FINISHED', 'STOPPED') "
		       "AND i.created >= ? AND i.created <= ? AND a.complete > 0 "
		       "AND (? OR a.worker_uid = ?) AND (? < 0 OR a.worker_uid = ?) "
		       "ORDER BY a.id LIMIT ?", "ttiiiuiii", r->mode, r->service,
		       (int64_t)r->from_ms, (int64_t)r->until_ms, (int64_t)r->all_users,
		       (unsigned)r->uid, r->owner, r->owner, (int64_t)r->limit);
}
