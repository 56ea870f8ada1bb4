/* db: the index's schema migrates forward and refuses a newer one;
 * rows go in and come back as JSON. */
#include <stdlib.h>
#include <sqlite3.h>
#include <unistd.h>

#include "daemon/db.h"
#include "test.h"

static int raw(const char *path, const char *sql)
{
	sqlite3 *h;
	int r;

	if (sqlite3_open(path, &h) != SQLITE_OK)
		return -1;
	r = sqlite3_exec(h, sql, NULL, NULL, NULL);
	sqlite3_close(h);
	return r == SQLITE_OK ? 0 : -1;
}

int main(void)
{
	char dir[] = "/tmp/nprof-db-test.XXXXXX", path[128], err[512] = "";
	struct db *db;
	json_t *rows;
	int64_t id = 0;

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/nprofd.db", dir);
	db = db_open(path, err, sizeof(err));
	CHECK(db != NULL, "a new database opens (%s)", err);
	CHECK_INT(db_query_int(db, -1, "PRAGMA user_version", ""), ==, DB_SCHEMA_VERSION,
		  "at the current schema version");
	CHECK(db_exec(db, &id, "INSERT INTO instances(kind, worker, pid, worker_uid, user, uid, "
		      "status, created, target) VALUES('restart', ?, ?, 0, 'root', 0, 'RUNNING', ?, ?)",
		      "tiit", "12-34", (int64_t)12, (int64_t)1000, "web") == 0 && id == 1,
	      "a row goes in, its id back");
	rows = db_query(db, "SELECT worker, pid, target, new_worker FROM instances", "");
	CHECK_STR(json_dumps(json_array_get(rows, 0), JSON_SORT_KEYS | JSON_COMPACT),
		  "{\"new_worker\":null,\"pid\":12,\"target\":\"web\",\"worker\":\"12-34\"}",
		  "and comes back as JSON, nulls included");
	json_decref(rows);
	CHECK(db_integrity_ok(db), "integrity_check ok");
	db_close(db);

	/* The database as version 1 wrote it: without version 2's columns. */
	CHECK(raw(path, "ALTER TABLE instances DROP COLUMN target; ALTER TABLE instances DROP "
		  "COLUMN new_worker; PRAGMA user_version = 1;") == 0, "turned back into version 1");
	db = db_open(path, err, sizeof(err));
	CHECK(db != NULL, "version 1 opens (%s)", err);
	CHECK_INT(db_query_int(db, -1, "PRAGMA user_version", ""), ==, 2, "migrated to version 2");
	CHECK_INT(db_query_int(db, -1, "SELECT COUNT(*) FROM instances WHERE target IS NULL AND "
			       "new_worker IS NULL AND worker = '12-34'", ""), ==, 1,
		  "its rows kept, the new columns there");
	db_close(db);

	CHECK(raw(path, "PRAGMA user_version = 99;") == 0, "a database from a newer nprofd");
	err[0] = '\0';
	db = db_open(path, err, sizeof(err));
	CHECK(db == NULL && strstr(err, "version 99") && strstr(err, "newer"),
	      "refused, naming both versions: %s", err);
	db_close(db);

	CHECK(raw(path, "PRAGMA user_version = 2;") == 0 && truncate(path, 100) == 0,
	      "a database cut short");
	db = db_open(path, err, sizeof(err));
	CHECK(db == NULL && err[0], "refused with a reason: %s", err);
	db_close(db);
	unlink(path);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	return system(path) == 0 ? test_done() : 1;
}
