/* db: the index's schema migrates forward and refuses a newer one;
 * ids never come back, also across a migration from version 3 (above
 * every id the old rows and the audit log's successful requests name);
 * rows go in and come back, read by position (db_each, db_rows); the
 * read connections see every
 * write committed before their query, also while threads read at once;
 * kept statements take new parameters each time. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <unistd.h>

#include "daemon/store/db.h"
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

/* The first column of a query's first row as a new string ("" when
 * there is none, NULL when the query fails). */
static int copy_text(void *ctx, const struct db_row *r)
{
	*(char **)ctx = strdup(db_text(r, 0) ?: "(null)");
	return 1;
}

static char *first_text(struct db *db, const char *sql)
{
	char *text = NULL;
	int r = db_each(db, copy_text, &text, sql, "");

	return r < 0 ? NULL : text ? text : strdup("");
}

/* One row of (worker, pid, target, new_worker), as db_rows reads it. */
struct instance_cols {
	char worker[16], target[16];
	int64_t pid;
	bool new_worker_null;
};

static void read_instance_cols(const struct db_row *r, void *elem)
{
	struct instance_cols *c = elem;

	snprintf(c->worker, sizeof(c->worker), "%s", db_text(r, 0) ?: "");
	c->pid = db_int(r, 1);
	snprintf(c->target, sizeof(c->target), "%s", db_text(r, 2) ?: "");
	c->new_worker_null = db_null(r, 3);
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
		int64_t n = db_value(r->db, "SELECT COUNT(*) FROM tokens", "");
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
	CHECK_INT(db_value(db, "SELECT COUNT(*) FROM tokens", ""), ==, 200,
		  "and all 200 are there");
}

/* The schema as nprofd wrote it at version 3 (MIGRATIONS 0 to 2). */
static const char V3[] =
	"CREATE TABLE workers(id TEXT PRIMARY KEY, pid INTEGER NOT NULL, name TEXT, uid INTEGER,"
	"  user TEXT, service TEXT, first_seen INTEGER, last_seen INTEGER);"
	"CREATE TABLE instances(id INTEGER PRIMARY KEY, kind TEXT NOT NULL, worker TEXT NOT NULL,"
	"  pid INTEGER NOT NULL, worker_uid INTEGER NOT NULL, service TEXT, user TEXT NOT NULL,"
	"  uid INTEGER NOT NULL, mode TEXT, duration_ns INTEGER, interval TEXT, format TEXT,"
	"  status TEXT NOT NULL, message TEXT NOT NULL DEFAULT '', created INTEGER NOT NULL,"
	"  finished INTEGER, child_pid INTEGER);"
	"CREATE INDEX instances_worker ON instances(worker, id);"
	"CREATE INDEX instances_status ON instances(status);"
	"CREATE TABLE artifacts(id INTEGER PRIMARY KEY, instance INTEGER NOT NULL, worker TEXT NOT NULL,"
	"  worker_uid INTEGER NOT NULL, name TEXT NOT NULL, format TEXT NOT NULL, file TEXT NOT NULL,"
	"  size INTEGER NOT NULL DEFAULT 0, created INTEGER NOT NULL, complete INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX artifacts_instance ON artifacts(instance);"
	"CREATE TABLE tokens(id INTEGER PRIMARY KEY, uid INTEGER NOT NULL, user TEXT NOT NULL,"
	"  name TEXT NOT NULL, hash TEXT NOT NULL UNIQUE, created INTEGER NOT NULL,"
	"  expires INTEGER NOT NULL, revoked INTEGER);"
	"CREATE TABLE audit(id INTEGER PRIMARY KEY, time INTEGER NOT NULL, user TEXT NOT NULL,"
	"  uid INTEGER NOT NULL, via TEXT NOT NULL, method TEXT NOT NULL, path TEXT NOT NULL,"
	"  worker TEXT, status INTEGER NOT NULL, result TEXT);"
	"ALTER TABLE instances ADD COLUMN target TEXT;"
	"ALTER TABLE instances ADD COLUMN new_worker TEXT;"
	"ALTER TABLE tokens ADD COLUMN kind TEXT NOT NULL DEFAULT 'api';"
	"ALTER TABLE tokens ADD COLUMN csrf TEXT;"
	"CREATE INDEX tokens_uid ON tokens(uid, kind);";

static int64_t insert_artifact(struct db *db, int64_t instance)
{
	int64_t id = -1;

	if (db_exec(db, &id, "INSERT INTO artifacts(instance, worker, worker_uid, name, format, file, "
		    "created) VALUES(?, '1-1', 0, 'a', 'pprof', 'f', 0)", "i", instance) < 0)
		return -1;
	return id;
}

static int64_t insert_instance(struct db *db)
{
	int64_t id = -1;

	if (db_exec(db, &id, "INSERT INTO instances(kind, worker, pid, worker_uid, user, uid, status, "
		    "created) VALUES('stacks', '1-1', 1, 0, 'root', 0, 'FINISHED', 0)", "") < 0)
		return -1;
	return id;
}

/* Rows removed (the newest, which plain INTEGER PRIMARY KEY hands out
 * again) and the database closed and opened: ids go on. */
static void ids_never_come_back(const char *path)
{
	char err[512] = "";
	struct db *db = db_open(path, err, sizeof(err));
	int64_t a = insert_artifact(db, 1), b, i = insert_instance(db), j;

	CHECK(db_exec(db, NULL, "DELETE FROM artifacts WHERE id = ?", "i", a) == 0 &&
	      db_exec(db, NULL, "DELETE FROM instances WHERE id = ?", "i", i) == 0,
	      "artifact %lld and instance %lld, the newest, removed", (long long)a, (long long)i);
	b = insert_artifact(db, 1);
	j = insert_instance(db);
	CHECK(b > a && j > i, "the next ones are new ids: artifact %lld, instance %lld", (long long)b,
	      (long long)j);
	db_exec(db, NULL, "DELETE FROM artifacts WHERE id = ?", "i", b);
	db_close(db);
	db = db_open(path, err, sizeof(err));
	a = insert_artifact(db, 1);
	CHECK(a > b, "and after the database is opened again: artifact %lld", (long long)a);
	db_close(db);
}

int main(void)
{
	char dir[] = "/tmp/nprof-db-test.XXXXXX", path[128], err[512] = "";
	struct db *db;
	char *text;
	int64_t id = 0;

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/nprofd.db", dir);
	db = db_open(path, err, sizeof(err));
	CHECK(db != NULL, "a new database opens (%s)", err);
	CHECK_INT(db_value(db, "PRAGMA user_version", ""), ==, DB_SCHEMA_VERSION,
		  "at the current schema version");
	CHECK(db_exec(db, &id, "INSERT INTO instances(kind, worker, pid, worker_uid, user, uid, "
		      "status, created, target) VALUES('restart', ?, ?, 0, 'root', 0, 'RUNNING', ?, ?)",
		      "tiit", "12-34", (int64_t)12, (int64_t)1000, "web") == 0 && id == 1,
	      "a row goes in, its id back");
	{
		struct instance_cols *cols = NULL;
		size_t n = 0;

		CHECK(db_rows(db, sizeof(*cols), read_instance_cols, &cols, &n, "SELECT worker, pid, "
			      "target, new_worker FROM instances", "") == 0 && n == 1 &&
		      !strcmp(cols[0].worker, "12-34") && cols[0].pid == 12 &&
		      !strcmp(cols[0].target, "web") && cols[0].new_worker_null,
		      "and comes back, column by column, nulls included");
		free(cols);
	}
	{
		uint64_t g = db_generation(db);
		int64_t a = db_value(db, "SELECT ? + 1", "i", (int64_t)1);
		int64_t b = db_value(db, "SELECT ? + 1", "i", (int64_t)41);

		CHECK(a == 2 && b == 42, "a kept statement takes new parameters (%lld, %lld)",
		      (long long)a, (long long)b);
		CHECK(db_generation(db) == g, "queries leave the generation alone");
		CHECK(db_exec(db, NULL, "UPDATE instances SET status = 'FINISHED'", "") == 0 &&
		      db_generation(db) == g + 1, "a write moves it on");
		text = first_text(db, "SELECT status FROM instances");
		CHECK_STR(text, "FINISHED", "a read right after the write sees it");
		free(text);
		CHECK(first_text(db, "SELECT nothing FROM nowhere") == NULL &&
		      db_value(db, "SELECT nothing FROM nowhere", "") == -EIO &&
		      db_exec(db, NULL, "UPDATE nowhere SET x = 1", "") < 0 &&
		      db_generation(db) == g + 1, "a bad statement fails, and is not a write");
		for (int i = 0; i < 100; i++) {
			char sql[64];

			/* more statements than a connection keeps */
			snprintf(sql, sizeof(sql), "SELECT %d + ?", i);
			if (db_value(db, sql, "i", (int64_t)1) != i + 1)
				CHECK(false, "statement %d of 100 gave the wrong answer", i);
		}
		CHECK_INT(db_value(db, "SELECT ? + 1", "i", (int64_t)6), ==, 7,
			  "statements pushed out and prepared again answer right");
	}
	/* The states are daemon/core/nouns.h's: nothing else goes in. */
	CHECK(db_exec(db, NULL, "UPDATE instances SET status = 'DONE'", "") < 0,
	      "an instance state nouns.h does not name is refused");
	CHECK(db_exec(db, NULL, "INSERT INTO artifacts(instance, worker, worker_uid, name, format, "
		      "file, created, complete) VALUES(1, '1-1', 0, 'a', 'pprof', 'f', 0, 3)", "") < 0,
	      "an artifact's completeness is 0, 1 or 2");
	readers_and_a_writer(db);
	CHECK(db_integrity_ok(db), "integrity_check ok");
	db_close(db);
	ids_never_come_back(path);

	/* The database as version 1 wrote it: without the columns, tables and
	 * indexes versions 2, 3 and 6 added. */
	CHECK(raw(path, "DROP TABLE schedules; DROP INDEX instances_schedule; "
		  "ALTER TABLE instances DROP COLUMN schedule; ALTER TABLE instances DROP COLUMN cpu_ns; "
		  "ALTER TABLE instances DROP COLUMN target; ALTER TABLE instances DROP "
		  "COLUMN new_worker; DROP INDEX tokens_uid; ALTER TABLE tokens DROP COLUMN kind; "
		  "ALTER TABLE tokens DROP COLUMN csrf; PRAGMA user_version = 1;") == 0,
	      "turned back into version 1");
	db = db_open(path, err, sizeof(err));
	CHECK(db != NULL, "version 1 opens (%s)", err);
	CHECK_INT(db_value(db, "PRAGMA user_version", ""), ==, DB_SCHEMA_VERSION,
		  "migrated to the current version");
	CHECK_INT(db_value(db, "SELECT COUNT(*) FROM instances WHERE target IS NULL AND "
			       "new_worker IS NULL AND worker = '12-34'", ""), ==, 1,
		  "its rows kept, the new columns there");
	CHECK_INT(db_value(db, "SELECT COUNT(*) FROM tokens WHERE kind = 'api' AND "
			       "csrf IS NULL", ""), ==, 200, "its tokens are API tokens");
	db_close(db);

	unlink(path);
	/* Version 3: artifact 7, instance 9 and token 6 were handed out and
	 * removed, named by the audit log's successful requests only;
	 * 999999 only by refusals. */
	CHECK(raw(path, V3) == 0 &&
	      raw(path, "INSERT INTO instances(id, kind, worker, pid, worker_uid, user, uid, status, "
		  "created, target) VALUES(3, 'restart', '1-1', 1, 0, 'root', 0, 'FINISHED', 5, 'web');"
		  "INSERT INTO artifacts(id, instance, worker, worker_uid, name, format, file, created, "
		  "complete) VALUES(4, 3, '1-1', 0, 'a', 'pprof', '3.pb.gz', 5, 1);"
		  "INSERT INTO tokens(id, uid, user, name, hash, created, expires, kind, csrf) "
		  "VALUES(2, 0, 'root', 'ui', 'h', 1, 2, 'session', 'c');"
		  "INSERT INTO audit(id, time, user, uid, via, method, path, worker, status, result) VALUES"
		  "(5, 1, 'root', 0, 'socket', 'GET', '/api/v1/artifacts/7', NULL, 200, 'download'),"
		  "(6, 1, 'root', 0, 'socket', 'POST', '/api/v1/workers/1-1/stacks', '1-1', 201,"
		  " 'instance 9'),"
		  "(7, 1, 'root', 0, 'socket', 'DELETE', '/api/v1/tokens/6', NULL, 200, 'revoked'),"
		  "(8, 1, 'eve', 9, 'socket', 'GET', '/api/v1/artifacts/999999', NULL, 404, 'no'),"
		  "(9, 1, 'eve', 9, 'socket', 'POST', '/api/v1/instances/999999/stop', NULL, 404,"
		  " 'instance 999999 is not running'),"
		  "(10, 1, 'eve', 9, 'socket', 'DELETE', '/api/v1/tokens/999999', NULL, 404, 'no');"
		  "PRAGMA user_version = 3;") == 0, "a database of version 3");
	db = db_open(path, err, sizeof(err));
	CHECK(db != NULL, "version 3 opens (%s)", err);
	CHECK_INT(db_value(db, "PRAGMA user_version", ""), ==, DB_SCHEMA_VERSION,
		  "migrated to the current version");
	text = first_text(db, "SELECT json_object("
			  "'a', json((SELECT json_group_array(json_array(id, instance, file, complete)) "
			  "FROM artifacts)), "
			  "'i', json((SELECT json_group_array(json_array(id, target, kind)) FROM instances)), "
			  "'n', (SELECT COUNT(*) FROM audit), "
			  "'t', json((SELECT json_group_array(json_array(id, kind, csrf)) FROM tokens)))");
	CHECK_STR(text, "{\"a\":[[4,3,\"3.pb.gz\",1]],\"i\":[[3,\"web\",\"restart\"]],"
		  "\"n\":6,\"t\":[[2,\"session\",\"c\"]]}", "its rows kept, column by column");
	free(text);
	{
		int64_t a = insert_artifact(db, 3), i = insert_instance(db), t = -1, u = -1;

		db_exec(db, &t, "INSERT INTO tokens(uid, user, name, hash, created, expires) "
			"VALUES(0, 'root', 'n', 'h2', 1, 2)", "");
		db_exec(db, &u, "INSERT INTO audit(time, user, uid, via, method, path, status) "
			"VALUES(1, 'root', 0, 'socket', 'GET', '/', 200)", "");
		CHECK(a > 7 && a < 999999, "a new artifact (%lld) is above 7, the largest a download "
		      "named, not above 999999, which only a refusal named", (long long)a);
		CHECK(i > 9 && i < 999999, "a new instance (%lld) is above 9, the largest a creation "
		      "named", (long long)i);
		CHECK(t > 6 && t < 999999, "a new token (%lld) is above 6, the largest a revocation "
		      "named", (long long)t);
		CHECK_INT(u, ==, 11, "a new audit line is the next after the last");
	}
	CHECK(db_integrity_ok(db), "integrity_check ok after the migration");
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
