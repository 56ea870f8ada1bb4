/* db: SQLite behind one mutex; schema migrations by user_version. */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/db.h"
#include "daemon/log.h"

struct db {
	sqlite3 *h;
	pthread_mutex_t lock;
};

/* Migrations: MIGRATIONS[v] brings a schema at version v to v + 1.
 * Append, never edit one that has shipped. Times are Unix milliseconds. */
static const char *const MIGRATIONS[] = {
	/* 0 -> 1 */
	"CREATE TABLE workers("
	"  id TEXT PRIMARY KEY, pid INTEGER NOT NULL, name TEXT, uid INTEGER,"
	"  user TEXT, service TEXT, first_seen INTEGER, last_seen INTEGER);"
	"CREATE TABLE instances("
	"  id INTEGER PRIMARY KEY, kind TEXT NOT NULL, worker TEXT NOT NULL,"
	"  pid INTEGER NOT NULL, worker_uid INTEGER NOT NULL, service TEXT,"
	"  user TEXT NOT NULL, uid INTEGER NOT NULL, mode TEXT,"
	"  duration_ns INTEGER, interval TEXT, format TEXT,"
	"  status TEXT NOT NULL, message TEXT NOT NULL DEFAULT '',"
	"  created INTEGER NOT NULL, finished INTEGER, child_pid INTEGER);"
	"CREATE INDEX instances_worker ON instances(worker, id);"
	"CREATE INDEX instances_status ON instances(status);"
	"CREATE TABLE artifacts("
	"  id INTEGER PRIMARY KEY, instance INTEGER NOT NULL, worker TEXT NOT NULL,"
	"  worker_uid INTEGER NOT NULL, name TEXT NOT NULL, format TEXT NOT NULL,"
	"  file TEXT NOT NULL, size INTEGER NOT NULL DEFAULT 0,"
	"  created INTEGER NOT NULL, complete INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX artifacts_instance ON artifacts(instance);"
	"CREATE TABLE tokens("
	"  id INTEGER PRIMARY KEY, uid INTEGER NOT NULL, user TEXT NOT NULL,"
	"  name TEXT NOT NULL, hash TEXT NOT NULL UNIQUE, created INTEGER NOT NULL,"
	"  expires INTEGER NOT NULL, revoked INTEGER);"
	"CREATE TABLE audit("
	"  id INTEGER PRIMARY KEY, time INTEGER NOT NULL, user TEXT NOT NULL,"
	"  uid INTEGER NOT NULL, via TEXT NOT NULL, method TEXT NOT NULL,"
	"  path TEXT NOT NULL, worker TEXT, status INTEGER NOT NULL, result TEXT);",
	/* 1 -> 2: restarts say which unit or service they went through and
	 * which worker came back. */
	"ALTER TABLE instances ADD COLUMN target TEXT;"
	"ALTER TABLE instances ADD COLUMN new_worker TEXT;",
};

static int migrate(sqlite3 *h, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int version = 0;
	const int latest = (int)(sizeof(MIGRATIONS) / sizeof(MIGRATIONS[0]));
	char *msg = NULL;

	if (sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (version > latest) {
		snprintf(err, errlen,
			 "the database has schema version %d, newer than this nprofd's %d; "
			 "run a newer nprofd or move the state directory aside", version, latest);
		return -EPROTO;
	}
	for (; version < latest; version++) {
		char bump[64];

		snprintf(bump, sizeof(bump), "PRAGMA user_version = %d;", version + 1);
		if (sqlite3_exec(h, "BEGIN", NULL, NULL, &msg) != SQLITE_OK ||
		    sqlite3_exec(h, MIGRATIONS[version], NULL, NULL, &msg) != SQLITE_OK ||
		    sqlite3_exec(h, bump, NULL, NULL, &msg) != SQLITE_OK ||
		    sqlite3_exec(h, "COMMIT", NULL, NULL, &msg) != SQLITE_OK) {
			snprintf(err, errlen, "migrating the database to schema version %d: %s",
				 version + 1, msg ? msg : sqlite3_errmsg(h));
			sqlite3_free(msg);
			sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
			return -EIO;
		}
	}
	return 0;
}

struct db *db_open(const char *path, char *err, size_t errlen)
{
	struct db *db = calloc(1, sizeof(*db));
	int r;

	if (!db) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&db->lock, NULL);
	r = sqlite3_open_v2(path, &db->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
			    SQLITE_OPEN_FULLMUTEX, NULL);
	if (r != SQLITE_OK) {
		snprintf(err, errlen, "cannot open the database %s: %s", path,
			 db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(r));
		goto fail;
	}
	sqlite3_busy_timeout(db->h, 5000);
	if (sqlite3_exec(db->h, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
			 "PRAGMA foreign_keys=ON;", NULL, NULL, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "cannot set up the database %s: %s; is it a SQLite file?",
			 path, sqlite3_errmsg(db->h));
		goto fail;
	}
	if (migrate(db->h, err, errlen) < 0)
		goto fail;
	return db;
fail:
	db_close(db);
	errno = EIO;
	return NULL;
}

void db_close(struct db *db)
{
	if (!db)
		return;
	sqlite3_close(db->h);
	pthread_mutex_destroy(&db->lock);
	free(db);
}

static int bind_all(sqlite3_stmt *st, const char *types, va_list ap)
{
	for (int i = 0; types && types[i]; i++) {
		int r;

		switch (types[i]) {
		case 'i':
			r = sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t));
			break;
		case 'u':
			r = sqlite3_bind_int64(st, i + 1, va_arg(ap, unsigned));
			break;
		case 't': {
			const char *s = va_arg(ap, const char *);

			r = s ? sqlite3_bind_text(st, i + 1, s, -1, SQLITE_TRANSIENT)
			      : sqlite3_bind_null(st, i + 1);
			break;
		}
		default:
			return -EINVAL;
		}
		if (r != SQLITE_OK)
			return -EIO;
	}
	return 0;
}

static sqlite3_stmt *prepare(struct db *db, const char *sql, const char *types, va_list ap)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) {
		log_error("database: %s in: %s", sqlite3_errmsg(db->h), sql);
		return NULL;
	}
	if (bind_all(st, types, ap) < 0) {
		log_error("database: cannot bind the parameters of: %s", sql);
		sqlite3_finalize(st);
		return NULL;
	}
	return st;
}

int db_exec(struct db *db, int64_t *ret_id, const char *sql, const char *types, ...)
{
	sqlite3_stmt *st;
	va_list ap;
	int r = -EIO, s;

	pthread_mutex_lock(&db->lock);
	va_start(ap, types);
	st = prepare(db, sql, types, ap);
	va_end(ap);
	if (!st)
		goto out;
	while ((s = sqlite3_step(st)) == SQLITE_ROW)
		;
	if (s != SQLITE_DONE) {
		log_error("database: %s in: %s", sqlite3_errmsg(db->h), sql);
		goto out;
	}
	if (ret_id)
		*ret_id = sqlite3_last_insert_rowid(db->h);
	r = 0;
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&db->lock);
	return r;
}

static json_t *column_json(sqlite3_stmt *st, int i)
{
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_INTEGER:
		return json_integer(sqlite3_column_int64(st, i));
	case SQLITE_FLOAT:
		return json_real(sqlite3_column_double(st, i));
	case SQLITE_TEXT: {
		const char *s = (const char *)sqlite3_column_text(st, i);
		json_t *v = json_stringn(s, (size_t)sqlite3_column_bytes(st, i));

		/* Text from a process (a command line, say) may not be UTF-8. */
		return v ? v : json_string("?");
	}
	default:
		return json_null();
	}
}

static json_t *query_locked(struct db *db, const char *sql, const char *types, va_list ap)
{
	sqlite3_stmt *st = prepare(db, sql, types, ap);
	json_t *rows;
	int s;

	if (!st)
		return NULL;
	rows = json_array();
	while (rows && (s = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *row = json_object();

		for (int i = 0; row && i < sqlite3_column_count(st); i++)
			json_object_set_new(row, sqlite3_column_name(st, i), column_json(st, i));
		json_array_append_new(rows, row);
	}
	if (rows && s != SQLITE_DONE) {
		log_error("database: %s in: %s", sqlite3_errmsg(db->h), sql);
		json_decref(rows);
		rows = NULL;
	}
	sqlite3_finalize(st);
	return rows;
}

json_t *db_query(struct db *db, const char *sql, const char *types, ...)
{
	json_t *rows;
	va_list ap;

	pthread_mutex_lock(&db->lock);
	va_start(ap, types);
	rows = query_locked(db, sql, types, ap);
	va_end(ap);
	pthread_mutex_unlock(&db->lock);
	return rows;
}

int64_t db_query_int(struct db *db, int64_t fallback, const char *sql, const char *types, ...)
{
	sqlite3_stmt *st;
	va_list ap;
	int64_t v = fallback;

	pthread_mutex_lock(&db->lock);
	va_start(ap, types);
	st = prepare(db, sql, types, ap);
	va_end(ap);
	if (st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	pthread_mutex_unlock(&db->lock);
	return v;
}

bool db_integrity_ok(struct db *db)
{
	json_t *rows = db_query(db, "PRAGMA integrity_check", "");
	const char *s = rows ? json_string_value(json_object_get(json_array_get(rows, 0),
							       "integrity_check")) : NULL;
	bool ok = s && !strcmp(s, "ok");

	json_decref(rows);
	return ok;
}
