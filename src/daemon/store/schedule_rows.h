/* schedule_rows: the index's schedules (continuous profiling) as C
 * structs — every statement on the schedules table is here. A schedule
 * records the workers its selector matches in its modes, for duration,
 * every period; what it started is kept for keep (core/schedule_spec.c
 * validates, api/api_schedules.c writes them, from a request or from
 * nprofd.conf's [schedule NAME], api/schedule_runner.c runs them). */
#ifndef NPROF_DAEMON_SCHEDULE_ROWS_H
#define NPROF_DAEMON_SCHEDULE_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct db;

enum schedule_state { SCHEDULE_ACTIVE, SCHEDULE_PAUSED };

/* "ACTIVE", "PAUSED"; and back (-1: neither). */
const char *schedule_state_name(enum schedule_state s);
int schedule_state_parse(const char *name);

#define SCHEDULE_SELECTOR_MAX 1024
#define SCHEDULE_MODES_MAX 128

/* One row. */
struct schedule {
	int64_t id;
	char name[64];			/* nprofd.conf's [schedule NAME] that declares it;
					   "" for one made through the API */
	char user[64];			/* who made it: it acts as them */
	uid_t uid;
	char selector[SCHEDULE_SELECTOR_MAX];	/* JSON, as core/selector.c writes it */
	char modes[SCHEDULE_MODES_MAX];	/* "cpu,alloc" */
	uint64_t duration_ns, every_ns;	/* each recording's length, and the period */
	uint64_t keep_ns;		/* what it started is removed past this age */
	enum schedule_state status;
	uint64_t created_ms;
	uint64_t last_run_ms;		/* its last period's start; 0: none yet */
	uint64_t next_run_ms;		/* when the next begins */
	char message[512];		/* what its last period did */
	double budget;			/* the CPU its recordings may take: 0.01, 1 % of one */
	uint64_t interval_ns;		/* the period it keeps now: every, or longer to keep
					   within budget */
	double cost;			/* what its last measured period cost, a share of one
					   CPU over that period */
};

/* A new row from s (its id ignored; its name NULL when ""): 0 and its id into *ret_id, or -EIO. */
int schedule_insert(struct db *db, const struct schedule *s, int64_t *ret_id);

/* The schedule nprofd.conf declared as name: 0 and *ret, -ENOENT, or
 * -EIO. */
int schedule_get_declared(struct db *db, const char *name, struct schedule *ret);

/* Declared schedule id made to do what s says now (its selector,
 * modes, duration, every, keep, budget, user), its next period at
 * s->next_run_ms; what it recorded and when stay. 0 or -EIO. */
int schedule_redeclare(struct db *db, int64_t id, const struct schedule *s);

/* Schedule id: 0 and *ret, -ENOENT, or -EIO. */
int schedule_get(struct db *db, int64_t id, struct schedule *ret);

/* uid's schedules (all_users: everyone's), newest first: 0 and *ret (n
 * of them; free it), or -EIO (-ENOMEM). */
int schedules_list(struct db *db, bool all_users, uid_t uid, struct schedule **ret, size_t *n);

/* The ACTIVE schedules whose next period begins at or before now_ms, as
 * schedules_list. */
int schedules_due(struct db *db, uint64_t now_ms, struct schedule **ret, size_t *n);

/* When the next period of any ACTIVE schedule begins: ms, 0 when none
 * is active, or -EIO. */
int64_t schedules_next_run(struct db *db);

/* Its status (and when its next period begins). 0 or -EIO. */
int schedule_set_status(struct db *db, int64_t id, enum schedule_state status,
			uint64_t next_run_ms);

/* A period began at last_ms and did what message says; the next at
 * next_ms, interval_ns after it, the last measured period having cost
 * cost. 0 or -EIO. */
int schedule_ran(struct db *db, int64_t id, uint64_t last_ms, uint64_t next_ms,
		 uint64_t interval_ns, double cost, const char *message);

/* The row removed (what it started stays, as on-demand instances do). 0
 * or -EIO. */
int schedule_delete(struct db *db, int64_t id);

#endif
