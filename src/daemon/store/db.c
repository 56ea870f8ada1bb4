/* db: SQLite in WAL mode — one connection that writes, a few that only
 * read (WAL lets them read while it writes); schema migrations by
 * user_version. */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/array.h"
#include "daemon/store/db.h"
#include "daemon/core/log.h"

/* Readers: enough that requests on 2-8 CPUs seldom queue for one; each
 * keeps a small page cache of its own. */
#define DB_READERS 4
#define DB_READER_CACHE_KIB 256

/* Statements stay prepared on their connection: parsing SQL was a
 * fifth of a busy daemon's time. nprofd has a few dozen, all fixed. */
#define STATEMENTS_KEPT 48

struct connection {
	sqlite3 *h;
	pthread_mutex_t lock;
	sqlite3_stmt *kept[STATEMENTS_KEPT];
	unsigned n_kept, next_evicted;
};

struct db {
	struct connection writer;
	struct connection readers[DB_READERS];
	unsigned next_reader;	/* atomic: where the search for a free one starts */
	uint64_t generation;	/* atomic: writes committed */
	pthread_mutex_t changed_lock; /* with changed: a write was committed */
	pthread_cond_t changed;
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
	/* 2 -> 3: a browser's sign-in is a token too, of kind 'session',
	 * sent as a cookie, with the CSRF token its page must echo. */
	"ALTER TABLE tokens ADD COLUMN kind TEXT NOT NULL DEFAULT 'api';"
	"ALTER TABLE tokens ADD COLUMN csrf TEXT;"
	"CREATE INDEX tokens_uid ON tokens(uid, kind);",
	/* 3 -> 4: an id is never handed out twice (a bookmark or an audit
	 * line naming artifact 1 named the next one's file after the first
	 * was removed): the tables whose ids users see become AUTOINCREMENT,
	 * each going on above the largest id its rows and the audit log's
	 * successful requests still name (a refusal can name any number). */
	"CREATE TABLE instances4("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, worker TEXT NOT NULL,"
	"  pid INTEGER NOT NULL, worker_uid INTEGER NOT NULL, service TEXT,"
	"  user TEXT NOT NULL, uid INTEGER NOT NULL, mode TEXT,"
	"  duration_ns INTEGER, interval TEXT, format TEXT,"
	"  status TEXT NOT NULL, message TEXT NOT NULL DEFAULT '',"
	"  created INTEGER NOT NULL, finished INTEGER, child_pid INTEGER,"
	"  target TEXT, new_worker TEXT);"
	"INSERT INTO instances4 SELECT id, kind, worker, pid, worker_uid, service, user, uid, mode,"
	"  duration_ns, interval, format, status, message, created, finished, child_pid, target,"
	"  new_worker FROM instances;"
	"DROP TABLE instances;"
	"ALTER TABLE instances4 RENAME TO instances;"
	"CREATE INDEX instances_worker ON instances(worker, id);"
	"CREATE INDEX instances_status ON instances(status);"
	"CREATE TABLE artifacts4("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT, instance INTEGER NOT NULL, worker TEXT NOT NULL,"
	"  worker_uid INTEGER NOT NULL, name TEXT NOT NULL, format TEXT NOT NULL,"
	"  file TEXT NOT NULL, size INTEGER NOT NULL DEFAULT 0,"
	"  created INTEGER NOT NULL, complete INTEGER NOT NULL DEFAULT 0);"
	"INSERT INTO artifacts4 SELECT id, instance, worker, worker_uid, name, format, file, size,"
	"  created, complete FROM artifacts;"
	"DROP TABLE artifacts;"
	"ALTER TABLE artifacts4 RENAME TO artifacts;"
	"CREATE INDEX artifacts_instance ON artifacts(instance);"
	"CREATE TABLE tokens4("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT, uid INTEGER NOT NULL, user TEXT NOT NULL,"
	"  name TEXT NOT NULL, hash TEXT NOT NULL UNIQUE, created INTEGER NOT NULL,"
	"  expires INTEGER NOT NULL, revoked INTEGER, kind TEXT NOT NULL DEFAULT 'api', csrf TEXT);"
	"INSERT INTO tokens4 SELECT id, uid, user, name, hash, created, expires, revoked, kind, csrf"
	"  FROM tokens;"
	"DROP TABLE tokens;"
	"ALTER TABLE tokens4 RENAME TO tokens;"
	"CREATE INDEX tokens_uid ON tokens(uid, kind);"
	"CREATE TABLE audit4("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT, time INTEGER NOT NULL, user TEXT NOT NULL,"
	"  uid INTEGER NOT NULL, via TEXT NOT NULL, method TEXT NOT NULL,"
	"  path TEXT NOT NULL, worker TEXT, status INTEGER NOT NULL, result TEXT);"
	"INSERT INTO audit4 SELECT id, time, user, uid, via, method, path, worker, status, result"
	"  FROM audit;"
	"DROP TABLE audit;"
	"ALTER TABLE audit4 RENAME TO audit;"
	/* The copies set each sequence to its table's largest id; an empty
	 * table has none yet. */
	"INSERT INTO sqlite_sequence(name, seq) SELECT t, 0 FROM (SELECT 'instances' AS t"
	"  UNION ALL SELECT 'artifacts' UNION ALL SELECT 'tokens' UNION ALL SELECT 'audit')"
	"  WHERE t NOT IN (SELECT name FROM sqlite_sequence);"
	"UPDATE sqlite_sequence SET seq = MAX(seq,"
	"  IFNULL((SELECT MAX(instance) FROM artifacts), 0),"
	"  IFNULL((SELECT MAX(CAST(substr(path, 19) AS INTEGER)) FROM audit WHERE status < 400"
	"    AND path LIKE '/api/v1/instances/%'), 0),"
	"  IFNULL((SELECT MAX(CAST(substr(result, 10) AS INTEGER)) FROM audit WHERE status < 400"
	"    AND result LIKE 'instance %'), 0)) WHERE name = 'instances';"
	"UPDATE sqlite_sequence SET seq = MAX(seq,"
	"  IFNULL((SELECT MAX(CAST(substr(path, 19) AS INTEGER)) FROM audit WHERE status < 400"
	"    AND path LIKE '/api/v1/artifacts/%'), 0)) WHERE name = 'artifacts';"
	"UPDATE sqlite_sequence SET seq = MAX(seq,"
	"  IFNULL((SELECT MAX(CAST(substr(path, 16) AS INTEGER)) FROM audit WHERE status < 400"
	"    AND path LIKE '/api/v1/tokens/%'), 0)) WHERE name = 'tokens';",
	/* 4 -> 5: the database holds only the states daemon/core/nouns.h names:
	 * an instance's status, an artifact's completeness (0 being
	 * written, 1 complete, 2 partial). Each table is copied into one
	 * with the CHECK, its id sequence carried over (a removed row's id
	 * stays used). */
	"CREATE TABLE instances5("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, worker TEXT NOT NULL,"
	"  pid INTEGER NOT NULL, worker_uid INTEGER NOT NULL, service TEXT,"
	"  user TEXT NOT NULL, uid INTEGER NOT NULL, mode TEXT,"
	"  duration_ns INTEGER, interval TEXT, format TEXT,"
	"  status TEXT NOT NULL CHECK(status IN ('RUNNING', 'FINISHED', 'STOPPED', 'FAILED')),"
	"  message TEXT NOT NULL DEFAULT '',"
	"  created INTEGER NOT NULL, finished INTEGER, child_pid INTEGER,"
	"  target TEXT, new_worker TEXT);"
	"INSERT INTO instances5 SELECT * FROM instances;"
	"CREATE TABLE artifacts5("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT, instance INTEGER NOT NULL, worker TEXT NOT NULL,"
	"  worker_uid INTEGER NOT NULL, name TEXT NOT NULL, format TEXT NOT NULL,"
	"  file TEXT NOT NULL, size INTEGER NOT NULL DEFAULT 0,"
	"  created INTEGER NOT NULL,"
	"  complete INTEGER NOT NULL DEFAULT 0 CHECK(complete IN (0, 1, 2)));"
	"INSERT INTO artifacts5 SELECT * FROM artifacts;"
	"INSERT INTO sqlite_sequence(name, seq) SELECT t, 0 FROM (SELECT 'instances5' AS t"
	"  UNION ALL SELECT 'artifacts5') WHERE t NOT IN (SELECT name FROM sqlite_sequence);"
	"UPDATE sqlite_sequence SET seq = MAX(seq, IFNULL((SELECT seq FROM sqlite_sequence"
	"  WHERE name = 'instances'), 0)) WHERE name = 'instances5';"
	"UPDATE sqlite_sequence SET seq = MAX(seq, IFNULL((SELECT seq FROM sqlite_sequence"
	"  WHERE name = 'artifacts'), 0)) WHERE name = 'artifacts5';"
	"DROP TABLE instances;"
	"DROP TABLE artifacts;"
	"ALTER TABLE instances5 RENAME TO instances;"
	"ALTER TABLE artifacts5 RENAME TO artifacts;"
	"CREATE INDEX instances_worker ON instances(worker, id);"
	"CREATE INDEX instances_status ON instances(status);"
	"CREATE INDEX artifacts_instance ON artifacts(instance);",
	/* 5 -> 6: schedules (continuous profiling) and the instances each
	 * started (an instance started on demand has no schedule); the CPU
	 * each instance's process used, which a schedule's budget counts. */
	"CREATE TABLE schedules("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT, user TEXT NOT NULL, uid INTEGER NOT NULL,"
	"  selector TEXT NOT NULL, modes TEXT NOT NULL, duration_ns INTEGER NOT NULL,"
	"  every_ns INTEGER NOT NULL, keep_ns INTEGER NOT NULL,"
	"  status TEXT NOT NULL CHECK(status IN ('ACTIVE', 'PAUSED')),"
	"  created INTEGER NOT NULL, last_run INTEGER NOT NULL DEFAULT 0,"
	"  next_run INTEGER NOT NULL DEFAULT 0, message TEXT NOT NULL DEFAULT '',"
	"  budget REAL NOT NULL, interval_ns INTEGER NOT NULL DEFAULT 0,"
	"  cost REAL NOT NULL DEFAULT 0);"
	"ALTER TABLE instances ADD COLUMN schedule INTEGER;"
	"ALTER TABLE instances ADD COLUMN cpu_ns INTEGER;"
	"CREATE INDEX instances_schedule ON instances(schedule, id);",
	/* 6 -> 7: a schedule nprofd.conf declares ([schedule NAME]) is
	 * found again by its name at each start, and keeps its id (and so
	 * its recordings) while the section stays; one made through the API
	 * has none. */
	"ALTER TABLE schedules ADD COLUMN name TEXT;"
	"CREATE UNIQUE INDEX schedules_name ON schedules(name) WHERE name IS NOT NULL;",
	/* 7 -> 8: a profile of every worker a selector takes: the group's
	 * instance (its selector, how many members it started) and each
	 * member's, which names the group as its parent. */
	"ALTER TABLE instances ADD COLUMN parent INTEGER;"
	"ALTER TABLE instances ADD COLUMN selector TEXT;"
	"ALTER TABLE instances ADD COLUMN members INTEGER;"
	"CREATE INDEX instances_parent ON instances(parent);",
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

static int connection_open(struct connection *c, const char *path, int flags, const char *setup,
			   char *err, size_t errlen)
{
	int r;

	pthread_mutex_init(&c->lock, NULL);
	r = sqlite3_open_v2(path, &c->h, flags | SQLITE_OPEN_NOMUTEX, NULL);
	if (r != SQLITE_OK) {
		snprintf(err, errlen, "cannot open the database %s: %s", path,
			 c->h ? sqlite3_errmsg(c->h) : sqlite3_errstr(r));
		return -EIO;
	}
	sqlite3_busy_timeout(c->h, 5000);
	if (sqlite3_exec(c->h, setup, NULL, NULL, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "cannot set up the database %s: %s; is it a SQLite file?",
			 path, sqlite3_errmsg(c->h));
		return -EIO;
	}
	return 0;
}

static void connection_close(struct connection *c)
{
	for (unsigned i = 0; i < c->n_kept; i++)
		sqlite3_finalize(c->kept[i]);
	sqlite3_close(c->h);
	pthread_mutex_destroy(&c->lock);
}

struct db *db_open(const char *path, char *err, size_t errlen)
{
	struct db *db = calloc(1, sizeof(*db));
	pthread_condattr_t ca;
	char reader_setup[64];

	if (!db) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(reader_setup, sizeof(reader_setup), "PRAGMA cache_size = -%d;",
		 DB_READER_CACHE_KIB);
	pthread_mutex_init(&db->changed_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&db->changed, &ca);
	pthread_condattr_destroy(&ca);
	if (connection_open(&db->writer, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
			    "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
			    "PRAGMA foreign_keys=ON;", err, errlen) < 0 ||
	    migrate(db->writer.h, err, errlen) < 0)
		goto fail;
	/* Opened after the writer made the file WAL and its schema current. */
	for (int i = 0; i < DB_READERS; i++)
		if (connection_open(&db->readers[i], path, SQLITE_OPEN_READONLY, reader_setup,
				    err, errlen) < 0)
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
	connection_close(&db->writer);
	for (int i = 0; i < DB_READERS; i++)
		if (db->readers[i].h)
			connection_close(&db->readers[i]);
	pthread_cond_destroy(&db->changed);
	pthread_mutex_destroy(&db->changed_lock);
	free(db);
}

/* A reader, locked: the first free one, else wait for one. */
static struct connection *reader_take(struct db *db)
{
	unsigned first = __atomic_fetch_add(&db->next_reader, 1, __ATOMIC_RELAXED);

	for (unsigned i = 0; i < DB_READERS; i++) {
		struct connection *c = &db->readers[(first + i) % DB_READERS];

		if (pthread_mutex_trylock(&c->lock) == 0)
			return c;
	}
	pthread_mutex_lock(&db->readers[first % DB_READERS].lock);
	return &db->readers[first % DB_READERS];
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
		case 'd':
			r = sqlite3_bind_double(st, i + 1, va_arg(ap, double));
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

/* sql as a statement of c, kept prepared, with the parameters bound:
 * give it back with done(). NULL with the reason logged. */
static sqlite3_stmt *prepare(struct connection *c, const char *sql, const char *types, va_list ap)
{
	sqlite3_stmt *st = NULL;

	for (unsigned i = 0; i < c->n_kept && !st; i++)
		if (!strcmp(sqlite3_sql(c->kept[i]), sql))
			st = c->kept[i];
	if (!st) {
		if (sqlite3_prepare_v3(c->h, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) !=
		    SQLITE_OK) {
			log_error("database: %s in: %s", sqlite3_errmsg(c->h), sql);
			sqlite3_finalize(st);
			return NULL;
		}
		if (c->n_kept < STATEMENTS_KEPT) {
			c->kept[c->n_kept++] = st;
		} else {
			sqlite3_finalize(c->kept[c->next_evicted]);
			c->kept[c->next_evicted] = st;
			c->next_evicted = (c->next_evicted + 1) % STATEMENTS_KEPT;
		}
	}
	if (bind_all(st, types, ap) < 0) {
		log_error("database: cannot bind the parameters of: %s", sql);
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		return NULL;
	}
	return st;
}

/* Ready for its next use; ends the read transaction a query held open. */
static void done(sqlite3_stmt *st)
{
	if (st) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
	}
}

int db_exec(struct db *db, int64_t *ret_id, const char *sql, const char *types, ...)
{
	sqlite3_stmt *st;
	va_list ap;
	int r = -EIO, s;

	pthread_mutex_lock(&db->writer.lock);
	va_start(ap, types);
	st = prepare(&db->writer, sql, types, ap);
	va_end(ap);
	if (!st)
		goto out;
	while ((s = sqlite3_step(st)) == SQLITE_ROW)
		;
	if (s != SQLITE_DONE) {
		log_error("database: %s in: %s", sqlite3_errmsg(db->writer.h), sql);
		goto out;
	}
	if (ret_id)
		*ret_id = sqlite3_last_insert_rowid(db->writer.h);
	/* after the commit: a reader that saw the old generation may have
	 * seen the old rows, never the reverse */
	pthread_mutex_lock(&db->changed_lock);
	__atomic_add_fetch(&db->generation, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&db->changed);
	pthread_mutex_unlock(&db->changed_lock);
	r = 0;
out:
	done(st);
	pthread_mutex_unlock(&db->writer.lock);
	return r;
}

struct db_row {
	sqlite3_stmt *st;
};

int64_t db_int(const struct db_row *r, int col)
{
	return sqlite3_column_int64(r->st, col);
}

double db_real(const struct db_row *r, int col)
{
	return sqlite3_column_double(r->st, col);
}

const char *db_text(const struct db_row *r, int col)
{
	return (const char *)sqlite3_column_text(r->st, col);
}

bool db_null(const struct db_row *r, int col)
{
	return sqlite3_column_type(r->st, col) == SQLITE_NULL;
}

static int each_row(struct db *db, int (*each)(void *ctx, const struct db_row *r), void *ctx,
		    const char *sql, const char *types, va_list ap)
{
	struct connection *c = reader_take(db);
	struct db_row row;
	int r = 0, s;

	row.st = prepare(c, sql, types, ap);
	if (!row.st) {
		r = -EIO;
		goto out;
	}
	while ((s = sqlite3_step(row.st)) == SQLITE_ROW)
		if ((r = each(ctx, &row)))
			break;
	if (!r && s != SQLITE_DONE) {
		log_error("database: %s in: %s", sqlite3_errmsg(c->h), sql);
		r = -EIO;
	}
	done(row.st);
out:
	pthread_mutex_unlock(&c->lock);
	return r;
}

int db_each(struct db *db, int (*each)(void *ctx, const struct db_row *r), void *ctx,
	    const char *sql, const char *types, ...)
{
	va_list ap;
	int r;

	va_start(ap, types);
	r = each_row(db, each, ctx, sql, types, ap);
	va_end(ap);
	return r;
}

/* db_rows' rows, as they come. */
struct gather {
	void (*read)(const struct db_row *r, void *elem);
	size_t size;
	char *list;
	size_t n, cap;
};

static int gather_row(void *ctx, const struct db_row *r)
{
	struct gather *g = ctx;

	if (array_reserve(&g->list, &g->cap, g->n + 1, g->size) < 0)
		return -ENOMEM;
	memset(g->list + g->n * g->size, 0, g->size);
	g->read(r, g->list + g->n++ * g->size);
	return 0;
}

int db_rows(struct db *db, size_t size, void (*read)(const struct db_row *r, void *elem),
	    void *ret, size_t *n, const char *sql, const char *types, ...)
{
	struct gather g = { .read = read, .size = size };
	va_list ap;
	int r;

	va_start(ap, types);
	r = each_row(db, gather_row, &g, sql, types, ap);
	va_end(ap);
	if (r < 0) {
		free(g.list);
		return r;
	}
	*(void **)ret = g.list;
	*n = g.n;
	return 0;
}

static int first_int(void *ctx, const struct db_row *r)
{
	*(int64_t *)ctx = db_int(r, 0);
	return 1;
}

int64_t db_value(struct db *db, const char *sql, const char *types, ...)
{
	int64_t v = 0;
	va_list ap;
	int r;

	va_start(ap, types);
	r = each_row(db, first_int, &v, sql, types, ap);
	va_end(ap);
	return r < 0 ? r : v;
}

bool db_wait_change(struct db *db, uint64_t since, uint64_t until_ns)
{
	struct timespec until = { (time_t)(until_ns / 1000000000ull),
				  (long)(until_ns % 1000000000ull) };
	bool changed;

	pthread_mutex_lock(&db->changed_lock);
	while (db_generation(db) == since &&
	       pthread_cond_timedwait(&db->changed, &db->changed_lock, &until) != ETIMEDOUT)
		;
	changed = db_generation(db) != since;
	pthread_mutex_unlock(&db->changed_lock);
	return changed;
}

uint64_t db_generation(struct db *db)
{
	return __atomic_load_n(&db->generation, __ATOMIC_ACQUIRE);
}

/* The first row says "ok", or what is wrong. */
static int says_ok(void *ctx, const struct db_row *r)
{
	*(bool *)ctx = db_text(r, 0) && !strcmp(db_text(r, 0), "ok");
	return 1;
}

bool db_integrity_ok(struct db *db)
{
	bool ok = false;

	return db_each(db, says_ok, &ok, "PRAGMA integrity_check", "") > 0 && ok;
}
