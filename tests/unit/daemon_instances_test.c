/* daemon_instances: the instances table as typed rows
 * (src/daemon/store/instances.c) on a real index — a row written is read
 * back field for field, absent text stays NULL (not ""), the list
 * filters by worker, status and owner, newest first, within its limit;
 * ending keeps a restart's new worker unless one is given; the running
 * ones are counted and named; a schedule's instances are listed by it,
 * left out of the per-worker history and found past their keep. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/store/db.h"
#include "daemon/store/instances.h"
#include "test.h"

static struct db *db;

static int64_t add(const char *worker, uid_t owner, const char *kind, const char *mode,
		   uint64_t created_ms)
{
	struct instance in = { .kind = kind, .pid = 42, .worker_uid = owner, .user = "alice",
			       .uid = 1000, .mode = mode, .duration_ns = 5000000000,
			       .created_ms = created_ms };
	int64_t id = -1;

	snprintf(in.worker, sizeof(in.worker), "%s", worker);
	CHECK(instance_insert(db, &in, &id) == 0 && id > 0, "instance %s/%s written", worker, kind);
	return id;
}

static void read_back(void)
{
	struct instance in = { .kind = "profile", .pid = 4242, .worker_uid = 1000,
			       .service = "web.service", .user = "alice", .uid = 1001,
			       .mode = "cpu", .duration_ns = 30000000000, .interval = "10ms",
			       .format = "flamegraph", .created_ms = 1764000000123 };
	struct instance *got = NULL;
	int64_t id = 0;

	snprintf(in.worker, sizeof(in.worker), "4242-99");
	CHECK(instance_insert(db, &in, &id) == 0, "a full row is written");
	CHECK(instance_get(db, id, &got) == 0 && got, "and read back");
	if (!got)
		return;
	CHECK_INT(got->id, ==, id, "its id");
	CHECK_STR(got->kind, "profile", "kind");
	CHECK_STR(got->worker, "4242-99", "worker");
	CHECK_INT(got->pid, ==, 4242, "pid");
	CHECK_INT(got->worker_uid, ==, 1000, "worker_uid");
	CHECK_STR(got->service, "web.service", "service");
	CHECK_STR(got->user, "alice", "user");
	CHECK_INT(got->uid, ==, 1001, "uid");
	CHECK_STR(got->mode, "cpu", "mode");
	CHECK_INT(got->duration_ns, ==, 30000000000, "duration_ns");
	CHECK_STR(got->interval, "10ms", "interval");
	CHECK_STR(got->format, "flamegraph", "format");
	CHECK(got->status == INSTANCE_RUNNING, "a new row runs");
	CHECK_STR(got->message, "", "with no message");
	CHECK_INT(got->created_ms, ==, 1764000000123, "created");
	CHECK_INT(got->finished_ms, ==, 0, "not finished");
	CHECK_INT(got->child_pid, ==, 0, "no child yet");
	CHECK(!got->target && !got->new_worker, "no target, no new worker: NULL, not \"\"");
	instance_free(got);

	CHECK(instance_set_child(db, id, 777) == 0 && instance_set_message(db, id, "half way") == 0,
	      "child and message written");
	CHECK(instance_get(db, id, &got) == 0 && got->child_pid == 777 &&
	      !strcmp(got->message, "half way") && got->status == INSTANCE_RUNNING,
	      "and read: still running");
	instance_free(got);
	CHECK(instance_get(db, 999999, &got) == -ENOENT && !got, "no such instance: -ENOENT");
}

static void absent_text(void)
{
	struct instance in = { .kind = "stacks", .pid = 7, .user = "bob" };
	struct instance *got = NULL;
	int64_t id = 0;

	snprintf(in.worker, sizeof(in.worker), "7-1");
	CHECK(instance_insert(db, &in, &id) == 0, "a row with no mode, service, interval, format");
	CHECK(instance_get(db, id, &got) == 0, "read back");
	CHECK(got && !got->mode && !got->service && !got->interval && !got->format,
	      "each absent text is NULL");
	instance_free(got);
}

static void ending(void)
{
	int64_t id = add("9-9", 0, "restart", "command", 10);
	struct instance *got = NULL;

	CHECK(instance_end(db, id, INSTANCE_FINISHED, "restarted", 20, "10-10") == 0,
	      "a restart ends with its new worker");
	CHECK(instance_end(db, id, INSTANCE_FINISHED, "restarted again", 30, NULL) == 0,
	      "ended again without one");
	CHECK(instance_get(db, id, &got) == 0 && got->status == INSTANCE_FINISHED &&
	      got->finished_ms == 30 && !strcmp(got->message, "restarted again") &&
	      got->new_worker && !strcmp(got->new_worker, "10-10"),
	      "the new worker is kept, the rest is the last word");
	instance_free(got);
}

static void listing(void)
{
	struct instance **list = NULL;
	size_t n = 0;
	int64_t a1 = add("100-1", 1000, "profile", "cpu", 100);
	int64_t b1 = add("200-1", 2000, "profile", "wall", 101);
	int64_t a2 = add("100-1", 1000, "stacks", NULL, 102);
	int64_t *ids = NULL;
	int64_t running_before;

	CHECK(instance_running_on(db, "100-1", "profile", "cpu") == a1, "cpu runs on 100-1");
	CHECK(instance_running_on(db, "100-1", "stacks", NULL) == a2, "stacks (no mode) runs there");
	CHECK(instance_running_on(db, "100-1", "profile", "wall") == 0, "wall does not");
	running_before = instances_running_count(db);
	CHECK(running_before >= 3, "the running are counted (%lld)", (long long)running_before);
	instance_end(db, a1, INSTANCE_STOPPED, "", 200, NULL);
	CHECK_INT(instances_running_count(db), ==, running_before - 1, "one fewer once it ends");

	CHECK(instances_list(db, &(struct instance_filter){ .worker = "100-1", .all_users = true,
							     .limit = 10 }, &list, &n) == 0 &&
	      n == 2 && list[0]->id == a2 && list[1]->id == a1,
	      "a worker's instances, newest first");
	instances_free(list, n);
	CHECK(instances_list(db, &(struct instance_filter){ .uid = 2000, .limit = 10 }, &list,
			     &n) == 0 && n == 1 && list[0]->id == b1,
	      "a user sees only their workers' instances");
	instances_free(list, n);
	CHECK(instances_list(db, &(struct instance_filter){ .status = "STOPPED", .all_users = true,
							     .limit = 10 }, &list, &n) == 0 &&
	      n == 1 && list[0]->id == a1, "by status");
	instances_free(list, n);
	CHECK(instances_list(db, &(struct instance_filter){ .all_users = true, .limit = 2 }, &list,
			     &n) == 0 && n == 2 && list[0]->id == a2, "within the limit");
	instances_free(list, n);

	CHECK(instances_running_ids(db, &ids, &n) == 0 && (int64_t)n == running_before - 1,
	      "the running ones are named");
	for (size_t i = 0; i < n; i++)
		CHECK(ids[i] != a1, "not the one that ended");
	free(ids);
}

static void scheduled(void)
{
	struct instance in = { .kind = "profile", .pid = 43, .worker_uid = 0, .user = "root",
			       .mode = "cpu", .duration_ns = 1000000000, .created_ms = 1000,
			       .schedule = 77 };
	struct instance **list, *one = NULL;
	int64_t id = -1, on_demand, *ids;
	size_t n;

	snprintf(in.worker, sizeof(in.worker), "43-1");
	CHECK(instance_insert(db, &in, &id) == 0 && instance_end(db, id, INSTANCE_FINISHED, "",
								  2000, NULL) == 0,
	      "a schedule's instance is written and ends");
	on_demand = add("43-1", 0, "profile", "cpu", 3000);
	instance_end(db, on_demand, INSTANCE_FINISHED, "", 4000, NULL);
	CHECK(instances_list(db, &(struct instance_filter){ .schedule = 77, .all_users = true,
							    .limit = 10 }, &list, &n) == 0 &&
	      n == 1 && list[0]->id == id && list[0]->schedule == 77,
	      "?schedule=77 lists it alone, its schedule read back");
	instances_free(list, n);
	CHECK(instance_get(db, on_demand, &one) == 0 && one->schedule == 0,
	      "one made on demand has no schedule (0)");
	instance_free(one);
	CHECK(instances_beyond_history(db, 0, &ids, &n) == 0, "the history past 0 per worker");
	for (size_t i = 0; i < n; i++)
		CHECK(ids[i] != id, "leaves the schedule's instance out");
	free(ids);
	CHECK(instances_of_schedule_before(db, 77, 1001, &ids, &n) == 0 && n == 1 && ids[0] == id,
	      "made before its keep's edge: found");
	free(ids);
	CHECK(instances_of_schedule_before(db, 77, 1000, &ids, &n) == 0 && n == 0,
	      "made at the edge: kept");
	free(ids);
}

int main(void)
{
	char dir[] = "/tmp/nprof-instances-XXXXXX", path[64], err[256];

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/index.db", dir);
	db = db_open(path, err, sizeof(err));
	CHECK(db, "the index opens: %s", db ? "" : err);
	if (db) {
		read_back();
		absent_text();
		ending();
		listing();
		scheduled();
		db_close(db);
	}
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	(void)!system(path);
	return test_done();
}
