/* db: the index's schema migrates forward and refuses a newer one;
 * rows go in and come back as JSON; the read connections see every
 * write committed before their query, also while threads read at once;
 * kept statements take new parameters each time. */
#include <pthread.h>
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

/* A reader thread: the count of rows it sees never goes down, and is
 * never more than were written. */
struct reader {
	struct db *db;
	const int *written;	/* atomic */
	int bad;
};

static void *read_counts(void *arg)
{
	struct reader *r = arg;
	int64_t last = 0;

	for (int i = 0; i < 300; i++) {
		int before = __atomic_load_n(r->written, __ATOMIC_ACQUIRE);
		int64_t n = db_query_int(r->db, -1, "SELECT COUNT(*) FROM tokens", "");
		int after = __atomic_load_n(r->written, __ATOMIC_ACQUIRE);

		if (n < last || n < before || n > after + 1)
			r->bad++;
		last = n;
	}
	return NULL;
}

static void readers_and_a_writer(struct db *db)
{
	struct reader rs[6];
	pthread_t t[6];
	int written = 0, failed = 0;

	for (int i = 0; i < 6; i++) {
		rs[i] = (struct reader){ .db = db, .written = &written };
		pthread_create(&t[i], NULL, read_counts, &rs[i]);
	}
	for (int i = 0; i < 200; i++) {
		char hash[32];

		snprintf(hash, sizeof(hash), "h%d", i);
		failed += db_exec(db, NULL, "INSERT INTO tokens(uid, user, name, hash, created, expires) "
				  "VALUES(0, 'root', 't', ?, 0, 1)", "t", hash) < 0;
		__atomic_store_n(&written, i + 1, __ATOMIC_RELEASE);
	}
	for (int i = 0; i < 6; i++)
		pthread_join(t[i], NULL);
	CHECK_INT(failed, ==, 0, "200 writes while 6 threads read");
	for (int i = 0; i < 6; i++)
		CHECK_INT(rs[i].bad, ==, 0, "reader %d saw every write done before its query, never "
			  "fewer rows than before, never more than written", i);
	CHECK_INT(db_query_int(db, -1, "SELECT COUNT(*) FROM tokens", ""), ==, 200,
		  "and all 200 are there");
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
	{
		uint64_t g = db_generation(db);
		int64_t a = db_query_int(db, -1, "SELECT ? + 1", "i", (int64_t)1);
		int64_t b = db_query_int(db, -1, "SELECT ? + 1", "i", (int64_t)41);

		CHECK(a == 2 && b == 42, "a kept statement takes new parameters (%lld, %lld)",
		      (long long)a, (long long)b);
		CHECK(db_generation(db) == g, "queries leave the generation alone");
		CHECK(db_exec(db, NULL, "UPDATE instances SET status = 'FINISHED'", "") == 0 &&
		      db_generation(db) == g + 1, "a write moves it on");
		CHECK_STR(json_string_value(json_object_get(json_array_get(
			  rows = db_query(db, "SELECT status FROM instances", ""), 0), "status")),
			  "FINISHED", "a read right after the write sees it");
		json_decref(rows);
		CHECK(db_query(db, "SELECT nothing FROM nowhere", "") == NULL &&
		      db_exec(db, NULL, "UPDATE nowhere SET x = 1", "") < 0 &&
		      db_generation(db) == g + 1, "a bad statement fails, and is not a write");
		for (int i = 0; i < 100; i++) {
			char sql[64];

			/* more statements than a connection keeps */
			snprintf(sql, sizeof(sql), "SELECT %d + ?", i);
			if (db_query_int(db, -1, sql, "i", (int64_t)1) != i + 1)
				CHECK(false, "statement %d of 100 gave the wrong answer", i);
		}
		CHECK_INT(db_query_int(db, -1, "SELECT ? + 1", "i", (int64_t)6), ==, 7,
			  "statements pushed out and prepared again answer right");
	}
	readers_and_a_writer(db);
	CHECK(db_integrity_ok(db), "integrity_check ok");
	db_close(db);

	/* The database as version 1 wrote it: without the columns and the
	 * index versions 2 and 3 added. */
	CHECK(raw(path, "ALTER TABLE instances DROP COLUMN target; ALTER TABLE instances DROP "
		  "COLUMN new_worker; DROP INDEX tokens_uid; ALTER TABLE tokens DROP COLUMN kind; "
		  "ALTER TABLE tokens DROP COLUMN csrf; PRAGMA user_version = 1;") == 0,
	      "turned back into version 1");
	db = db_open(path, err, sizeof(err));
	CHECK(db != NULL, "version 1 opens (%s)", err);
	CHECK_INT(db_query_int(db, -1, "PRAGMA user_version", ""), ==, DB_SCHEMA_VERSION,
		  "migrated to the current version");
	CHECK_INT(db_query_int(db, -1, "SELECT COUNT(*) FROM instances WHERE target IS NULL AND "
			       "new_worker IS NULL AND worker = '12-34'", ""), ==, 1,
		  "its rows kept, the new columns there");
	CHECK_INT(db_query_int(db, -1, "SELECT COUNT(*) FROM tokens WHERE kind = 'api' AND "
			       "csrf IS NULL", ""), ==, 200, "its tokens are API tokens");
	db_close(db);

	CHECK(raw(path, "PRAGMA user_version = 99;") == 0, "a database from a newer nprofd");
	err[0] = '\0';
	db = db_open(path, err, sizeof(err));
	CHECK(db == NULL && strstr(err, "version 99") && strstr(err, "newer"),
	      "refused, naming both versions: %s", err);
	db_close(db);

	CHECK(raw(path, "PRAGMA user_version = 3;") == 0 && truncate(path, 100) == 0,
	      "a database cut short");
	db = db_open(path, err, sizeof(err));
	CHECK(db == NULL && err[0], "refused with a reason: %s", err);
	db_close(db);
	unlink(path);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	return system(path) == 0 ? test_done() : 1;
}
