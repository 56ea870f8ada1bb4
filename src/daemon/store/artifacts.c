/* artifacts: files in the state directory, their sizes and retention. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include "daemon/store/artifacts.h"
#include "daemon/core/log.h"
#include "daemon/core/nouns.h"
#include "daemon/core/wall_time.h"
#include "daemon/store/db.h"
#include "daemon/store/instances.h"

int artifacts_create(struct daemon *d, const char *name, uid_t uid)
{
	int dir = open(d->artifacts_dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC), fd;

	if (dir < 0)
		return -errno;
	fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0 && fchown(fd, uid, (gid_t)-1) < 0) {
		int e = errno;

		close(fd);
		unlinkat(dir, name, 0);
		fd = -e;
	} else if (fd < 0) {
		fd = -errno;
	}
	close(dir);
	return fd;
}

static void remove_file(struct daemon *d, const char *name)
{
	char path[PATH_MAX * 2];

	/* name comes from the index, which only the daemon writes; still,
	 * a name with a slash is not one it made. */
	if (!name || strchr(name, '/') || !strcmp(name, "..") || !strcmp(name, "."))
		return;
	snprintf(path, sizeof(path), "%s/%s", d->artifacts_dir, name);
	if (unlink(path) < 0 && errno != ENOENT)
		log_error("cannot remove %s: %s", path, strerror(errno));
}

static void remove_artifact(struct daemon *d, json_t *row)
{
	remove_file(d, json_string_value(json_object_get(row, "file")));
	db_exec(d->db, NULL, "DELETE FROM artifacts WHERE id = ?", "i",
		(int64_t)json_integer_value(json_object_get(row, "id")));
}

void artifacts_settle(struct daemon *d, int64_t id, bool ok)
{
	json_t *rows = db_query(d->db, "SELECT id, file FROM artifacts WHERE instance = ?", "i", id);

	for (size_t i = 0; i < json_array_size(rows); i++) {
		json_t *row = json_array_get(rows, i);
		char path[PATH_MAX * 2];
		struct stat st;
		const char *file = json_string_value(json_object_get(row, "file"));

		snprintf(path, sizeof(path), "%s/%s", d->artifacts_dir, file ? file : "");
		if (!file || strchr(file, '/') || stat(path, &st) < 0 || st.st_size == 0) {
			remove_artifact(d, row);
			continue;
		}
		/* A partial file of a failed job stays listed (complete false):
		 * what it holds may still help, and it is never orphaned. */
		db_exec(d->db, NULL, "UPDATE artifacts SET size = ?, complete = ? WHERE id = ?", "iii",
			(int64_t)st.st_size, (int64_t)(ok ? ARTIFACT_COMPLETE : ARTIFACT_PARTIAL),
			(int64_t)json_integer_value(json_object_get(row, "id")));
	}
	json_decref(rows);
}

static int64_t total_bytes(struct daemon *d)
{
	return db_query_int(d->db, 0, "SELECT SUM(size) FROM artifacts", "");
}

bool artifacts_full(struct daemon *d)
{
	return (uint64_t)total_bytes(d) > d->cfg.max_bytes;
}

/* The oldest settled artifact that is not the newest one, or NULL. */
static json_t *oldest(struct daemon *d)
{
	json_t *rows = db_query(d->db, "SELECT id, file, created FROM artifacts WHERE complete > 0 "
				"AND id < (SELECT MAX(id) FROM artifacts) ORDER BY id LIMIT 1", "");
	json_t *row = json_incref(json_array_get(rows, 0));

	json_decref(rows);
	return row;
}

static void trim_history(struct daemon *d)
{
	json_t *rows = db_query(d->db,
		"SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY worker ORDER BY id DESC) "
		"AS n FROM instances WHERE status != 'RUNNING') WHERE n > ?", "u",
		d->cfg.history_per_worker);

	for (size_t i = 0; i < json_array_size(rows); i++) {
		int64_t id = json_integer_value(json_object_get(json_array_get(rows, i), "id"));
		json_t *arts = db_query(d->db, "SELECT id, file FROM artifacts WHERE instance = ?",
					"i", id);

		for (size_t k = 0; k < json_array_size(arts); k++)
			remove_artifact(d, json_array_get(arts, k));
		json_decref(arts);
		db_exec(d->db, NULL, "DELETE FROM instances WHERE id = ?", "i", id);
	}
	json_decref(rows);
}

void artifacts_retain(struct daemon *d)
{
	uint64_t age_limit = d->cfg.max_age_ns ? now_ms() - d->cfg.max_age_ns / 1000000 : 0;
	json_t *row;

	trim_history(d);
	while ((row = oldest(d))) {
		uint64_t created = (uint64_t)json_integer_value(json_object_get(row, "created"));
		bool over = (uint64_t)db_query_int(d->db, 0, "SELECT COUNT(*) FROM artifacts", "") >
				    d->cfg.max_count ||
			    (uint64_t)total_bytes(d) > d->cfg.max_bytes ||
			    (age_limit && created < age_limit);

		if (over) {
			log_info("retention: removing artifact %lld",
				 (long long)json_integer_value(json_object_get(row, "id")));
			remove_artifact(d, row);
		}
		json_decref(row);
		if (!over)
			break;
	}
}

/* Removes what dirfd holds, never following a link: the tree belongs
 * to a user who may have put anything there. */
static void remove_tree(int dirfd, int depth)
{
	DIR *dir = fdopendir(dirfd);
	struct dirent *e;

	if (!dir) {
		close(dirfd);
		return;
	}
	while ((e = readdir(dir))) {
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth < 16) {
			int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sub >= 0)
				remove_tree(sub, depth + 1);
			unlinkat(dirfd, e->d_name, AT_REMOVEDIR);
		} else {
			unlinkat(dirfd, e->d_name, 0);
		}
	}
	closedir(dir);
}

void artifacts_collect_work(struct daemon *d, int64_t id, uid_t uid)
{
	char name[64], dst[96];
	int dirfd, artfd, job, n = 0;
	struct instance *in = NULL;
	DIR *dir;
	struct dirent *e;

	snprintf(name, sizeof(name), "%lld", (long long)id);
	dirfd = open(d->work_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (instance_get(d->db, id, &in) < 0 || dirfd < 0)
		goto out;
	job = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (job < 0)
		goto out;
	artfd = open(d->artifacts_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dir = fdopendir(dup(job));
	while (dir && artfd >= 0 && (e = readdir(dir)) && n < 64) {
		struct stat st;
		char shown[200];

		if (fstatat(job, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
		    st.st_uid != uid || st.st_nlink != 1)
			continue;
		snprintf(dst, sizeof(dst), "%lld-%d.file", (long long)id, n);
		if (renameat(job, e->d_name, artfd, dst) < 0)
			continue;
		snprintf(shown, sizeof(shown), "%s-%lld-%.150s", in->mode ?: in->kind,
			 (long long)in->pid, e->d_name);
		if (db_exec(d->db, NULL, "INSERT INTO artifacts(instance, worker, worker_uid, name, "
			    "format, file, size, created, complete) VALUES(?,?,?,?,'file',?,?,?,0)",
			    "ituttii", id, in->worker, (unsigned)in->worker_uid, shown, dst,
			    (int64_t)st.st_size, (int64_t)now_ms()) < 0) {
			/* unindexed, the file would be no one's: gone with the rest */
			unlinkat(artfd, dst, 0);
			continue;
		}
		n++;
	}
	if (dir)
		closedir(dir);
	if (artfd >= 0)
		close(artfd);
	remove_tree(job, 0);
	unlinkat(dirfd, name, AT_REMOVEDIR);
out:
	if (dirfd >= 0)
		close(dirfd);
	instance_free(in);
}
