/* daemon_schedule_rows: the schedules table as typed rows
 * (src/daemon/store/schedule_rows.c) on a real index — a row written is
 * read back field for field; the list is a user's own (an admin's,
 * everyone's), newest first; the due ones are the active ones whose next
 * period has begun, and the next period is the earliest active one's;
 * pausing, a period's end and removal are written; the states' names go
 * both ways; a schedule nprofd.conf declares is found by its name, once,
 * and redeclared in place (its id and its periods' history kept). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/store/db.h"
#include "daemon/store/schedule_rows.h"
#include "test.h"

static int64_t add(struct db *db, uid_t uid, uint64_t next_run_ms)
{
	struct schedule s = { .uid = uid, .duration_ns = 10000000000ull,
			      .every_ns = 60000000000ull, .keep_ns = 86400000000000ull,
			      .budget = 0.01,
			      .status = SCHEDULE_ACTIVE, .created_ms = 1000,
			      .next_run_ms = next_run_ms };
	int64_t id = -1;

	snprintf(s.user, sizeof(s.user), "user%u", (unsigned)uid);
	snprintf(s.selector, sizeof(s.selector), "{\"service\":\"web\"}");
	snprintf(s.modes, sizeof(s.modes), "cpu,alloc");
	CHECK(schedule_insert(db, &s, &id) == 0 && id > 0, "schedule of uid %u written (id %lld)",
	      (unsigned)uid, (long long)id);
	return id;
}

static void check_rows(struct db *db)
{
	int64_t a = add(db, 1001, 5000), b = add(db, 1002, 9000), c = add(db, 1001, 7000);
	struct schedule s, *list;
	size_t n;

	CHECK(schedule_get(db, a, &s) == 0 && s.id == a && s.uid == 1001 &&
	      !strcmp(s.user, "user1001") && !strcmp(s.selector, "{\"service\":\"web\"}") &&
	      !strcmp(s.modes, "cpu,alloc") && s.duration_ns == 10000000000ull &&
	      s.every_ns == 60000000000ull && s.keep_ns == 86400000000000ull &&
	      s.status == SCHEDULE_ACTIVE && s.created_ms == 1000 && s.next_run_ms == 5000 &&
	      !s.last_run_ms && !s.message[0] && s.budget > 0.0099 && s.budget < 0.0101 &&
	      s.interval_ns == s.every_ns && s.cost == 0, "read back field for field");
	CHECK(schedule_get(db, 999, &s) == -ENOENT, "no such schedule: ENOENT");
	CHECK(schedules_list(db, false, 1001, &list, &n) == 0 && n == 2 && list[0].id == c &&
	      list[1].id == a, "uid 1001's list: its two, newest first");
	free(list);
	CHECK(schedules_list(db, true, 1001, &list, &n) == 0 && n == 3, "an admin's: all three");
	free(list);
	CHECK(schedules_due(db, 7000, &list, &n) == 0 && n == 2 && list[0].id == a &&
	      list[1].id == c, "due at 7000: the two whose period began, earliest first");
	free(list);
	CHECK_INT(schedules_next_run(db), ==, 5000, "the next period: the earliest");
	CHECK(schedule_set_status(db, a, SCHEDULE_PAUSED, 5000) == 0 &&
	      schedule_get(db, a, &s) == 0 && s.status == SCHEDULE_PAUSED, "paused");
	CHECK(schedules_due(db, 7000, &list, &n) == 0 && n == 1 && list[0].id == c,
	      "a paused one is not due");
	free(list);
	CHECK_INT(schedules_next_run(db), ==, 7000, "nor the next period");
	CHECK(schedule_ran(db, c, 7000, 127000, 120000000000ull, 0.02, "1 worker matched") == 0 &&
	      schedule_get(db, c, &s) == 0 && s.last_run_ms == 7000 && s.next_run_ms == 127000 &&
	      s.interval_ns == 120000000000ull && s.cost > 0.0199 && s.cost < 0.0201 &&
	      !strcmp(s.message, "1 worker matched"), "a period's end written, the governor's "
	      "interval and the cost measured with it");
	CHECK(schedule_delete(db, b) == 0 && schedule_get(db, b, &s) == -ENOENT, "removed");
	CHECK(schedule_set_status(db, c, SCHEDULE_PAUSED, 0) == 0 && schedules_next_run(db) == 0,
	      "none active: the next period is 0");
	CHECK(schedule_state_parse("ACTIVE") == SCHEDULE_ACTIVE &&
	      schedule_state_parse("PAUSED") == SCHEDULE_PAUSED && schedule_state_parse("DONE") < 0 &&
	      !strcmp(schedule_state_name(SCHEDULE_PAUSED), "PAUSED"), "the states' names");
	CHECK(db_exec(db, NULL, "UPDATE schedules SET status = 'DONE'", "") < 0,
	      "the index refuses any other state");
}

static void check_declared(struct db *db)
{
	struct schedule s = { .uid = 0, .duration_ns = 10000000000ull, .every_ns = 60000000000ull,
			      .keep_ns = 86400000000000ull, .budget = 0.01,
			      .status = SCHEDULE_ACTIVE, .created_ms = 1000, .next_run_ms = 2000 }, got;
	int64_t id = -1, other = -1;

	snprintf(s.name, sizeof(s.name), "web-cpu");
	snprintf(s.user, sizeof(s.user), "nprofd.conf");
	snprintf(s.selector, sizeof(s.selector), "{\"service\":\"nginx*\"}");
	snprintf(s.modes, sizeof(s.modes), "cpu");
	CHECK(schedule_insert(db, &s, &id) == 0 && schedule_get_declared(db, "web-cpu", &got) == 0 &&
	      got.id == id && !strcmp(got.name, "web-cpu") && !strcmp(got.user, "nprofd.conf"),
	      "a declared schedule is found by its name");
	CHECK(schedule_get_declared(db, "db-cpu", &got) == -ENOENT, "another name: ENOENT");
	CHECK(schedule_insert(db, &s, &other) < 0, "a name is declared once (the index's unique "
	      "index)");
	CHECK(schedule_ran(db, id, 3000, 63000, 60000000000ull, 0.005, "1 worker matched") == 0,
	      "it ran a period");
	snprintf(s.modes, sizeof(s.modes), "cpu,wall");
	s.every_ns = 120000000000ull;
	s.next_run_ms = 4000;
	CHECK(schedule_redeclare(db, id, &s) == 0 && schedule_get(db, id, &got) == 0 &&
	      !strcmp(got.modes, "cpu,wall") && got.every_ns == 120000000000ull &&
	      got.interval_ns == 120000000000ull && got.next_run_ms == 4000 &&
	      got.last_run_ms == 3000 && got.created_ms == 1000, "redeclared: its fields now, "
	      "its next period, the same id, its last period kept");
	CHECK(schedule_get(db, id - 1 > 0 ? id - 1 : id, &got) == 0 &&
	      (got.id == id || !got.name[0]), "one made through the API has no name");
}

int main(void)
{
	char dir[] = "/tmp/nprof-schedules-XXXXXX", path[64], err[256];
	struct db *db;

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/index.db", dir);
	db = db_open(path, err, sizeof(err));
	CHECK(db, "the index opens: %s", db ? "" : err);
	if (db) {
		check_rows(db);
		check_declared(db);
		db_close(db);
	}
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	(void)!system(path);
	return test_done();
}
