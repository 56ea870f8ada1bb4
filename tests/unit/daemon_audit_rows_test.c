/* daemon_audit_rows: the audit log's rows (src/daemon/store/audit_rows.c)
 * on a real index — a line goes in and comes back column by column, a
 * line without a worker has none, the list is newest first and filters
 * by user and by worker, and its limit holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/store/audit_rows.h"
#include "daemon/store/db.h"
#include "test.h"

static int64_t line(struct db *db, const char *user, const char *worker, unsigned status)
{
	struct audit_row a = { .time_ms = 1700000000000ull, .uid = 1001, .status = status };

	snprintf(a.user, sizeof(a.user), "%s", user);
	snprintf(a.via, sizeof(a.via), "socket");
	snprintf(a.method, sizeof(a.method), "POST");
	snprintf(a.path, sizeof(a.path), "/api/v1/workers/%s/actions", worker);
	snprintf(a.worker, sizeof(a.worker), "%s", worker);
	snprintf(a.result, sizeof(a.result), "action by %s", user);
	return audit_insert(db, &a);
}

static void check_audit(struct db *db)
{
	struct audit_filter every = { .limit = 100 }, alice = { .user = "alice", .limit = 100 },
			    on_w2 = { .worker = "2-2", .limit = 100 }, two = { .limit = 2 };
	struct audit_row *rows = NULL;
	size_t n = 0;

	CHECK(line(db, "alice", "1-1", 200) == 0 && line(db, "bob", "2-2", 403) == 0 &&
	      line(db, "alice", "", 404) == 0 && line(db, "alice", "2-2", 201) == 0,
	      "four lines go in");
	CHECK(audit_list(db, &every, &rows, &n) == 0 && n == 4 && rows[0].status == 201 &&
	      rows[3].status == 200 && rows[3].id < rows[0].id, "newest first (%zu)", n);
	CHECK(n == 4 && !strcmp(rows[3].user, "alice") && rows[3].uid == 1001 &&
	      rows[3].time_ms == 1700000000000ull && !strcmp(rows[3].via, "socket") &&
	      !strcmp(rows[3].method, "POST") &&
	      !strcmp(rows[3].path, "/api/v1/workers/1-1/actions") &&
	      !strcmp(rows[3].worker, "1-1") && !strcmp(rows[3].result, "action by alice"),
	      "every column comes back");
	CHECK(n == 4 && rows[1].worker[0] == '\0' &&
	      db_value(db, "SELECT COUNT(*) FROM audit WHERE worker IS NULL", "") == 1,
	      "a line without a worker has none (NULL in the index)");
	free(rows);
	CHECK(audit_list(db, &alice, &rows, &n) == 0 && n == 3, "alice's lines: 3 (%zu)", n);
	free(rows);
	CHECK(audit_list(db, &on_w2, &rows, &n) == 0 && n == 2 && !strcmp(rows[1].user, "bob"),
	      "worker 2-2's lines: 2 (%zu)", n);
	free(rows);
	CHECK(audit_list(db, &two, &rows, &n) == 0 && n == 2, "the limit holds (%zu)", n);
	free(rows);
}

int main(void)
{
	char dir[] = "/tmp/nprof-audit-test.XXXXXX", path[128], err[256] = "";
	struct db *db;

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/nprofd.db", dir);
	db = db_open(path, err, sizeof(err));
	CHECK(db != NULL, "the index opens (%s)", err);
	if (db) {
		check_audit(db);
		db_close(db);
	}
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	(void)!system(path);
	return test_done();
}
