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
#include "daemon/store/artifact_rows.h"
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

/* The artifact's file and row: 0, or -EIO when the row stays (the
 * index refused; the log says why). */
static int remove_artifact(struct daemon *d, const struct artifact *a)
{
	remove_file(d, a->file);
	return artifact_delete(d->db, a->id);
}

/* The artifacts of instance id (every user's): 0 and *ret (free it). */
static int instance_artifacts(struct daemon *d, int64_t id, struct artifact **ret, size_t *n)
{
	return artifacts_list(d->db, &(struct artifact_filter){ .instance = id, .all_users = true,
								 .limit = -1 }, ret, n);
}

void artifacts_settle(struct daemon *d, int64_t id, bool ok)
{
	struct artifact *arts;
	size_t n;

	if (instance_artifacts(d, id, &arts, &n) < 0) {
		log_error("instance %lld: its artifacts stay unsettled: the index cannot be read",
			  (long long)id);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const char *file = arts[i].file;
		char path[PATH_MAX * 2];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", d->artifacts_dir, file);
		if (!file[0] || strchr(file, '/') || stat(path, &st) < 0 || st.st_size == 0) {
			remove_artifact(d, &arts[i]);
			continue;
		}
		/* A partial file of a failed job stays listed (complete false):
		 * what it holds may still help, and it is never orphaned. */
		if (artifact_settled(d->db, arts[i].id, (uint64_t)st.st_size,
				     ok ? ARTIFACT_COMPLETE : ARTIFACT_PARTIAL) < 0)
			log_error("artifact %lld stays marked as being written: the index refused",
				  (long long)arts[i].id);
	}
	free(arts);
}

bool artifacts_full(struct daemon *d)
{
	uint64_t count, bytes;

	/* unreadable, it is not known to be full: retention runs again at
	 * every instance's end */
	return artifacts_totals(d->db, &count, &bytes) == 0 && bytes > d->cfg.max_bytes;
}

static void trim_history(struct daemon *d)
{
	int64_t *ids = NULL;
	size_t n = 0;

	if (instances_beyond_history(d->db, d->cfg.history_per_worker, &ids, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		artifacts_remove_instance(d, ids[i]);
	free(ids);
}

int artifacts_remove_instance(struct daemon *d, int64_t id)
{
	struct artifact *arts;
	size_t k, m;
	int r = instance_artifacts(d, id, &arts, &m);

	if (r < 0)
		return r;
	for (k = 0; k < m && remove_artifact(d, &arts[k]) == 0; k++)
		;
	free(arts);
	/* an instance goes once its artifacts have gone: none is orphaned */
	return k < m ? -EIO : instance_delete(d->db, id);
}

void artifacts_retain(struct daemon *d)
{
	uint64_t age_limit = d->cfg.max_age_ns ? now_ms() - d->cfg.max_age_ns / 1000000 : 0;
	struct artifact a;
	uint64_t count, bytes;

	trim_history(d);
	while (artifact_oldest_settled(d->db, &a) == 0 &&
	       artifacts_totals(d->db, &count, &bytes) == 0) {
		if (count <= d->cfg.max_count && bytes <= d->cfg.max_bytes &&
		    !(age_limit && a.created_ms < age_limit))
			break;
		log_info("retention: removing artifact %lld", (long long)a.id);
		/* the same oldest would come back: stop until the next end */
		if (remove_artifact(d, &a) < 0)
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
	struct artifact art;
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
		art = (struct artifact){ .instance = id, .worker_uid = in->worker_uid,
					 .size = (uint64_t)st.st_size, .created_ms = now_ms(),
					 .complete = ARTIFACT_WRITING };
		snprintf(art.worker, sizeof(art.worker), "%s", in->worker);
		snprintf(art.name, sizeof(art.name), "%s", shown);
		snprintf(art.format, sizeof(art.format), "file");
		snprintf(art.file, sizeof(art.file), "%s", dst);
		if (artifact_insert(d->db, &art, NULL) < 0) {
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
