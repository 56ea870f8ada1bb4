/* artifact_rows: the index's artifacts table as C structs — every
 * statement that reads or writes it is here (the files themselves and
 * retention are artifacts.c's; the handlers above see typed rows, never
 * column names). */
#ifndef NPROF_DAEMON_ARTIFACT_ROWS_H
#define NPROF_DAEMON_ARTIFACT_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/core/nouns.h"
#include "daemon/core/workers.h"

struct db;

/* One row (every column is NOT NULL in the schema). */
struct artifact {
	int64_t id;
	int64_t instance;		/* the instance or action that made it */
	char worker[WORKER_ID_MAX];
	uid_t worker_uid;		/* the worker's owner: who may see it, and whose
					   uid converts it */
	char name[256];			/* what a download is called */
	char format[16];		/* nouns.c's stored formats */
	char file[96];			/* its bare name in state_dir/artifacts */
	uint64_t size;
	uint64_t created_ms;
	enum artifact_state complete;
};

/* Artifact id: 0 and *ret, -ENOENT, or -EIO. The lists below fail with
 * -EIO (or -ENOMEM). */
int artifact_get(struct db *db, int64_t id, struct artifact *ret);

/* Which artifacts a list shows: NULL/false fields do not filter. */
struct artifact_filter {
	const char *worker;
	int64_t instance;		/* 0: any */
	bool all_users;			/* else only uid's workers' */
	uid_t uid;
	long limit;
};

/* The newest first, at most f->limit: 0 and *ret (n of them; free it),
 * or the error. */
int artifacts_list(struct db *db, const struct artifact_filter *f, struct artifact **ret,
		   size_t *n);

/* The artifacts of the n instances ids, by id: 0 and *ret (m of them;
 * free it), or the error. */
int artifacts_of_instances(struct db *db, const int64_t *ids, size_t n, struct artifact **ret,
			   size_t *m);

/* Which continuous profiles a merge takes (GET /api/v1/profiles): those
 * schedules recorded of service in mode, ended, made in [from, until]. */
struct profile_range {
	const char *service, *mode;
	uint64_t from_ms, until_ms;
	bool all_users;			/* else only uid's workers' */
	uid_t uid;
	int64_t owner;			/* -1: any owner's; else only this uid's */
	long limit;
};

/* Their settled artifacts, oldest first, at most r->limit: 0 and *ret (n
 * of them; free it), or -EIO (-ENOMEM). */
int artifacts_of_range(struct db *db, const struct profile_range *r, struct artifact **ret,
		       size_t *n);

/* A new row from a (its id ignored; size and complete as given): 0 and
 * its id into *ret_id (NULL: not wanted), or -EIO. */
int artifact_insert(struct db *db, const struct artifact *a, int64_t *ret_id);

/* Its size and state once its job ended. 0 or -EIO. */
int artifact_settled(struct db *db, int64_t id, uint64_t size, enum artifact_state complete);

/* The row removed (not its file). 0 or -EIO. */
int artifact_delete(struct db *db, int64_t id);

/* The oldest settled artifact that is not the newest one, a schedule's
 * before any made on demand (continuous data goes first): 0 and *ret,
 * -ENOENT when there is none, or -EIO. */
int artifact_oldest_settled(struct db *db, struct artifact *ret);

/* How many artifacts there are, and their bytes: 0, or -EIO. */
int artifacts_totals(struct db *db, uint64_t *count, uint64_t *bytes);

#endif
