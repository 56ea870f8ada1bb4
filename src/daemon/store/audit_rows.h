/* audit_rows: the index's audit log as C structs — every statement that
 * reads or writes it is here (what is worth a line is the door's, in
 * door/server.c). */
#ifndef NPROF_DAEMON_AUDIT_ROWS_H
#define NPROF_DAEMON_AUDIT_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/core/workers.h"

struct db;

/* One line. */
struct audit_row {
	int64_t id;
	uint64_t time_ms;
	char user[64];			/* "-": no one signed in */
	int64_t uid;			/* -1: no one */
	char via[16];			/* how they came: socket, token, session, ... */
	char method[16];
	char path[512];
	char worker[WORKER_ID_MAX];	/* "": none */
	unsigned status;
	char result[256];
};

/* A new line from a (its id ignored). 0 or -EIO. */
int audit_insert(struct db *db, const struct audit_row *a);

/* Which lines a list shows: NULL fields do not filter. */
struct audit_filter {
	const char *user;
	const char *worker;
	long limit;
};

/* The newest first, at most f->limit: 0 and *ret (n of them; free it),
 * or -EIO (-ENOMEM). */
int audit_list(struct db *db, const struct audit_filter *f, struct audit_row **ret, size_t *n);

#endif
