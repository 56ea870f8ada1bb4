/* daemon_retention: [artifacts] max_count, max_bytes and max_age, and
 * [instances] history_per_worker (src/daemon/store/artifacts.c) on a real
 * index and state directory — the oldest settled artifacts go first (a
 * schedule's before those made on demand),
 * with their files; one still being written and the newest one never
 * go; a file the job left empty goes with its row at settling; a
 * partial one stays, marked. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/core/config.h"
#include "daemon/core/nouns.h"
#include "daemon/core/wall_time.h"
#include "daemon/store/artifacts.h"
#include "daemon/store/db.h"
#include "test.h"

static struct daemon d;

/* An instance of worker with one artifact of size bytes created at
 * created_ms, in state complete: the artifact's id. */
static int64_t add(const char *worker, const char *status, size_t size, int64_t created_ms,
		   enum artifact_state complete)
{
	int64_t inst = -1, art = -1;
	char file[64], path[PATH_MAX * 2];
	int fd;

	db_exec(d.db, &inst, "INSERT INTO instances(kind, worker, pid, worker_uid, user, uid, status, "
		"created) VALUES('profile', ?, 1, 0, 'root', 0, ?, ?)", "tti", worker, status,
		created_ms);
	snprintf(file, sizeof(file), "%lld.pb.gz", (long long)inst);
	snprintf(path, sizeof(path), "%s/%s", d.artifacts_dir, file);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	for (size_t i = 0; i < size; i++)
		(void)!write(fd, "x", 1);
	close(fd);
	db_exec(d.db, &art, "INSERT INTO artifacts(instance, worker, worker_uid, name, format, file, "
		"size, created, complete) VALUES(?, ?, 0, 'p', 'pprof', ?, ?, ?, ?)", "ittiii", inst,
		worker, file, (int64_t)size, created_ms, (int64_t)complete);
	return art;
}

static bool file_there(int64_t art)
{
	char path[PATH_MAX * 2];
	int64_t inst = db_value(d.db, "SELECT instance FROM artifacts WHERE id = ?", "i", art);
	struct stat st;

	snprintf(path, sizeof(path), "%s/%lld.pb.gz", d.artifacts_dir, (long long)inst);
	return inst >= 0 && stat(path, &st) == 0;
}

static int64_t count(void)
{
	return db_value(d.db, "SELECT COUNT(*) FROM artifacts", "");
}

static void reset(void)
{
	char cmd[PATH_MAX + 32];

	db_exec(d.db, NULL, "DELETE FROM artifacts", "");
	db_exec(d.db, NULL, "DELETE FROM instances", "");
	snprintf(cmd, sizeof(cmd), "rm -f %s/*", d.artifacts_dir);
	(void)!system(cmd);
	config_defaults(&d.cfg);
}

static void check_count(void)
{
	int64_t now = (int64_t)now_ms(), a[4];

	reset();
	d.cfg.max_count = 2;
	for (int i = 0; i < 4; i++)
		a[i] = add("1-1", "FINISHED", 10, now - 4000 + i, ARTIFACT_COMPLETE);
	artifacts_retain(&d);
	CHECK_INT(count(), ==, 2, "max_count = 2: two artifacts left");
	CHECK(!file_there(a[0]) && !file_there(a[1]) && file_there(a[2]) && file_there(a[3]),
	      "the two oldest went, with their files; the two newest stayed");
}

/* A schedule's recordings go before what was made on demand, older or
 * not. */
static void check_continuous_first(void)
{
	int64_t now = (int64_t)now_ms(), demand, cont[2], newest;

	reset();
	d.cfg.max_count = 2;
	demand = add("1-1", "FINISHED", 10, now - 4000, ARTIFACT_COMPLETE);
	cont[0] = add("1-1", "FINISHED", 10, now - 3000, ARTIFACT_COMPLETE);
	cont[1] = add("1-1", "FINISHED", 10, now - 2000, ARTIFACT_COMPLETE);
	newest = add("1-1", "FINISHED", 10, now - 1000, ARTIFACT_COMPLETE);
	db_exec(d.db, NULL, "UPDATE instances SET schedule = 5 WHERE id IN (SELECT instance FROM "
		"artifacts WHERE id IN (?, ?))", "ii", cont[0], cont[1]);
	artifacts_retain(&d);
	CHECK(count() == 2 && file_there(demand) && file_there(newest) && !file_there(cont[0]) &&
	      !file_there(cont[1]), "max_count = 2: a schedule's two went, the older on-demand one "
	      "stayed");
}

static void check_writing_and_newest_stay(void)
{
	int64_t now = (int64_t)now_ms(), writing, newest;

	reset();
	d.cfg.max_count = 1;
	writing = add("1-1", "RUNNING", 10, now - 3000, ARTIFACT_WRITING);
	add("1-1", "FINISHED", 10, now - 2000, ARTIFACT_COMPLETE);
	newest = add("1-1", "FINISHED", 10, now - 1000, ARTIFACT_COMPLETE);
	artifacts_retain(&d);
	CHECK(file_there(writing) &&
	      db_value(d.db, "SELECT COUNT(*) FROM artifacts WHERE id = ?", "i", writing) == 1,
	      "an artifact still being written stays, however old");
	CHECK(file_there(newest) && count() == 2,
	      "the newest stays; the settled older one went (%lld left)", (long long)count());
	d.cfg.max_count = 0;
	artifacts_retain(&d);
	CHECK(file_there(newest), "the newest stays even past max_count = 0");
}

static void check_bytes_and_age(void)
{
	int64_t now = (int64_t)now_ms(), a, b, c;

	reset();
	d.cfg.max_bytes = 250;
	a = add("1-1", "FINISHED", 100, now - 3000, ARTIFACT_COMPLETE);
	b = add("1-1", "FAILED", 100, now - 2000, ARTIFACT_PARTIAL);
	c = add("1-1", "FINISHED", 100, now - 1000, ARTIFACT_COMPLETE);
	artifacts_retain(&d);
	CHECK(!file_there(a) && file_there(b) && file_there(c),
	      "max_bytes = 250 of 300: the oldest went, then 200 fit");
	CHECK(!artifacts_full(&d), "no longer over max_bytes");

	reset();
	d.cfg.max_age_ns = 60ull * 1000000000ull;
	a = add("1-1", "FINISHED", 10, now - 120000, ARTIFACT_COMPLETE);
	b = add("1-1", "FINISHED", 10, now - 90000, ARTIFACT_PARTIAL);
	c = add("1-1", "FINISHED", 10, now - 1000, ARTIFACT_COMPLETE);
	artifacts_retain(&d);
	CHECK(!file_there(a) && !file_there(b) && file_there(c),
	      "max_age = 1 min: the two older than a minute went, complete or partial");
}

static void check_history(void)
{
	int64_t now = (int64_t)now_ms();

	reset();
	d.cfg.history_per_worker = 2;
	for (int i = 0; i < 4; i++) {
		add("1-1", "FINISHED", 10, now - 5000 + i, ARTIFACT_COMPLETE);
		add("2-2", "FINISHED", 10, now - 5000 + i, ARTIFACT_COMPLETE);
	}
	add("1-1", "RUNNING", 10, now - 9000, ARTIFACT_WRITING);
	artifacts_retain(&d);
	CHECK_INT(db_value(d.db, "SELECT COUNT(*) FROM instances WHERE worker = '1-1' AND "
			       "status != 'RUNNING'", ""), ==, 2,
		  "history_per_worker = 2: worker 1-1 keeps its two newest ended instances");
	CHECK_INT(db_value(d.db, "SELECT COUNT(*) FROM instances WHERE worker = '2-2'", ""),
		  ==, 2, "and worker 2-2 its own two");
	CHECK_INT(db_value(d.db, "SELECT COUNT(*) FROM instances WHERE status = 'RUNNING'",
			       ""), ==, 1, "a running instance is not history");
	CHECK_INT(count(), ==, 5, "the instances' artifacts went with them (5 left)");
}

static void check_settle(void)
{
	int64_t now = (int64_t)now_ms(), full, empty;
	char path[PATH_MAX * 2];

	reset();
	full = add("1-1", "RUNNING", 10, now, ARTIFACT_WRITING);
	artifacts_settle(&d, db_value(d.db, "SELECT instance FROM artifacts WHERE id = ?",
					  "i", full), false);
	CHECK_INT(db_value(d.db, "SELECT complete FROM artifacts WHERE id = ?", "i", full),
		  ==, ARTIFACT_PARTIAL, "a failed job's file stays, partial");
	empty = add("1-1", "RUNNING", 0, now, ARTIFACT_WRITING);
	snprintf(path, sizeof(path), "%s/%lld.pb.gz", d.artifacts_dir,
		 (long long)db_value(d.db, "SELECT instance FROM artifacts WHERE id = ?", "i",
					 empty));
	artifacts_settle(&d, db_value(d.db, "SELECT instance FROM artifacts WHERE id = ?",
					  "i", empty), true);
	CHECK_INT(db_value(d.db, "SELECT COUNT(*) FROM artifacts WHERE id = ?", "i", empty),
		  ==, 0, "a job that wrote nothing leaves no artifact");
	CHECK(access(path, F_OK) != 0, "nor its empty file");
}

int main(void)
{
	char dir[] = "/tmp/nprof-retention-test.XXXXXX", path[PATH_MAX], err[256] = "";

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/nprofd.db", dir);
	d.db = db_open(path, err, sizeof(err));
	CHECK(d.db != NULL, "the index opens (%s)", err);
	if (!d.db)
		return test_done();
	snprintf(d.artifacts_dir, sizeof(d.artifacts_dir), "%s/artifacts", dir);
	mkdir(d.artifacts_dir, 0700);
	check_count();
	check_continuous_first();
	check_writing_and_newest_stay();
	check_bytes_and_age();
	check_history();
	check_settle();
	db_close(d.db);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	(void)!system(path);
	return test_done();
}
