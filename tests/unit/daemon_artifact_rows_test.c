/* daemon_artifact_rows: the artifacts table as typed rows
 * (src/daemon/store/artifact_rows.c) on a real index — a row written is
 * read back field for field; lists filter by worker, instance and owner,
 * newest first, within their limit; the artifacts of several instances
 * come in one read; settling, the oldest settled one (never the newest),
 * the totals and removal. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/store/artifact_rows.h"
#include "daemon/store/db.h"
#include "test.h"

static struct db *db;

static int64_t add(int64_t instance, const char *worker, uid_t owner, uint64_t size,
		   enum artifact_state complete)
{
	struct artifact a = { .instance = instance, .worker_uid = owner, .size = size,
			      .created_ms = 1000 + (uint64_t)instance, .complete = complete };
	int64_t id = -1;

	snprintf(a.worker, sizeof(a.worker), "%s", worker);
	snprintf(a.name, sizeof(a.name), "cpu-%lld.pb.gz", (long long)instance);
	snprintf(a.format, sizeof(a.format), "pprof");
	snprintf(a.file, sizeof(a.file), "%lld.pb.gz", (long long)instance);
	CHECK(artifact_insert(db, &a, &id) == 0 && id > 0, "artifact of instance %lld written",
	      (long long)instance);
	return id;
}

int main(void)
{
	char dir[] = "/tmp/nprof-artifact-rows-XXXXXX", path[64], err[256];
	struct artifact a, *list = NULL;
	size_t n = 0;
	int64_t ids[2], first, second, third, other;
	uint64_t count = 0, bytes = 0;

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/index.db", dir);
	db = db_open(path, err, sizeof(err));
	CHECK(db, "the index opens: %s", db ? "" : err);
	if (!db)
		return test_done();

	CHECK(artifact_oldest_settled(db, &a) == -ENOENT, "none settled in an empty index");
	first = add(1, "10-1", 1000, 100, ARTIFACT_COMPLETE);
	second = add(2, "10-1", 1000, 200, ARTIFACT_PARTIAL);
	other = add(3, "20-1", 2000, 300, ARTIFACT_COMPLETE);
	third = add(2, "10-1", 1000, 0, ARTIFACT_WRITING);

	CHECK(artifact_get(db, second, &a) == 0, "read back");
	CHECK(a.id == second && a.instance == 2 && !strcmp(a.worker, "10-1") &&
	      a.worker_uid == 1000 && !strcmp(a.name, "cpu-2.pb.gz") && !strcmp(a.format, "pprof") &&
	      !strcmp(a.file, "2.pb.gz") && a.size == 200 && a.created_ms == 1002 &&
	      a.complete == ARTIFACT_PARTIAL, "field for field");
	CHECK(artifact_get(db, 99999, &a) == -ENOENT, "no such artifact: -ENOENT");

	CHECK(artifacts_list(db, &(struct artifact_filter){ .all_users = true, .limit = 10 }, &list,
			     &n) == 0 && n == 4 && list[0].id == third && list[3].id == first,
	      "all of them, newest first");
	free(list);
	CHECK(artifacts_list(db, &(struct artifact_filter){ .uid = 2000, .limit = 10 }, &list,
			     &n) == 0 && n == 1 && list[0].id == other,
	      "a user sees only their workers' artifacts");
	free(list);
	CHECK(artifacts_list(db, &(struct artifact_filter){ .instance = 2, .all_users = true,
							     .limit = 10 }, &list, &n) == 0 &&
	      n == 2, "by instance");
	free(list);
	CHECK(artifacts_list(db, &(struct artifact_filter){ .worker = "10-1", .all_users = true,
							     .limit = 2 }, &list, &n) == 0 &&
	      n == 2 && list[0].id == third, "by worker, within the limit");
	free(list);
	CHECK(artifacts_list(db, &(struct artifact_filter){ .instance = -1, .all_users = true,
							     .limit = 10 }, &list, &n) == 0 &&
	      n == 0, "an instance no artifact has: none");
	free(list);

	ids[0] = 1;
	ids[1] = 3;
	CHECK(artifacts_of_instances(db, ids, 2, &list, &n) == 0 && n == 2 && list[0].id == first &&
	      list[1].id == other, "two instances' artifacts in one read, by id");
	free(list);
	CHECK(artifacts_of_instances(db, ids, 0, &list, &n) == 0 && n == 0, "of no instance: none");
	free(list);

	CHECK(artifacts_totals(db, &count, &bytes) == 0 && count == 4 && bytes == 600,
	      "totals: %llu artifacts, %llu bytes", (unsigned long long)count,
	      (unsigned long long)bytes);
	CHECK(artifact_settled(db, third, 50, ARTIFACT_COMPLETE) == 0 &&
	      artifact_get(db, third, &a) == 0 && a.size == 50 && a.complete == ARTIFACT_COMPLETE,
	      "settled: its size and state");
	CHECK(artifact_oldest_settled(db, &a) == 0 && a.id == first, "the oldest settled one");
	CHECK(artifact_delete(db, first) == 0 && artifact_get(db, first, &a) == -ENOENT,
	      "removed");
	CHECK(artifact_delete(db, second) == 0 && artifact_delete(db, other) == 0 &&
	      artifact_oldest_settled(db, &a) == -ENOENT, "the newest is never the oldest settled");

	db_close(db);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	(void)!system(path);
	return test_done();
}
