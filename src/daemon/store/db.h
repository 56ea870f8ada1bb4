/* db: nprofd's index in SQLite (WAL) — workers seen, profiling
 * instances and actions, artifacts, API tokens and the audit log,
 * schedules. The
 * schema is versioned (PRAGMA user_version) and migrates forward at
 * open. Every statement is short (files hold the bulk). Writes go
 * through one connection, in turn; queries through a few read-only
 * ones, which WAL lets read while a write is under way, each seeing
 * every write committed before it began.
 *
 * Ids never come back: the tables whose ids a user sees (instances,
 * artifacts, tokens, the audit log) are AUTOINCREMENT, so an id of a
 * row removed is never given to another.
 *
 * Statements take their parameters by a type string, one letter per
 * '?': 'i' int64_t, 't' const char * (NULL binds NULL), 'u' unsigned,
 * 'd' double. */
#ifndef NPROF_DAEMON_DB_H
#define NPROF_DAEMON_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct db;

/* Opens (creating) path and brings its schema to the current version.
 * NULL with errno set and the reason in err. */
struct db *db_open(const char *path, char *err, size_t errlen);
void db_close(struct db *db);

/* Runs a statement that returns no rows. 0, or -EIO with the reason
 * logged. When ret_id is not NULL, the row id it inserted. */
int db_exec(struct db *db, int64_t *ret_id, const char *sql, const char *types, ...);

/* A row db_each is at: its columns read by position, as the query's
 * SELECT lists them (valid until the callback returns). */
struct db_row;
int64_t db_int(const struct db_row *r, int col);	/* NULL: 0 */
double db_real(const struct db_row *r, int col);	/* NULL: 0 */
const char *db_text(const struct db_row *r, int col);	/* NULL: NULL */
bool db_null(const struct db_row *r, int col);

/* Runs a query and calls each(ctx, row) for every row, until it returns
 * non-zero. 0 (every row seen), each's non-zero value, or -EIO with the
 * reason logged. For the model (instances.c, ...), which reads rows
 * into C structs. */
int db_each(struct db *db, int (*each)(void *ctx, const struct db_row *r), void *ctx,
	    const char *sql, const char *types, ...);

/* The same, every row read by read(row, element) into a new array of
 * elements of size bytes (each zeroed first): 0 and *(T **)ret (free it)
 * with *n of them, or -EIO / -ENOMEM. For a table whose rows are small
 * structs of their own (artifact_rows.c, token_rows.c, ...). */
int db_rows(struct db *db, size_t size, void (*read)(const struct db_row *r, void *elem),
	    void *ret, size_t *n, const char *sql, const char *types, ...);

/* The first column of the first row as an integer (0 when there is no
 * row or it is NULL), or -EIO: for a count, an id or a uid, which are
 * never negative. */
int64_t db_value(struct db *db, const char *sql, const char *types, ...);

/* A number that grows with every write: what was read from the index
 * after it was taken is current while it is unchanged. Take it before
 * the queries whose result it is to label. */
uint64_t db_generation(struct db *db);

/* Waits until the generation is no longer since (a write was committed
 * since it was taken) or CLOCK_MONOTONIC reaches until_ns: whether it
 * changed. For a reply that waits for what it shows to change. */
bool db_wait_change(struct db *db, uint64_t since, uint64_t until_ns);

/* PRAGMA integrity_check says "ok". */
bool db_integrity_ok(struct db *db);

/* The schema version this build writes. */
#define DB_SCHEMA_VERSION 8

#endif
