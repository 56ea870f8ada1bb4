/* instances: the index's profiling instances and actions as C structs —
 * every statement that reads or writes the instances table is here, and
 * the handlers above see typed rows, never column names. (The workers
 * table, which remembers the workers instances ran on, is written here
 * too: only an instance's start writes it.) */
#ifndef NPROF_DAEMON_INSTANCES_H
#define NPROF_DAEMON_INSTANCES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/core/nouns.h"
#include "daemon/core/workers.h"

struct db;

/* One row. Text that may be absent is NULL then; read from the index,
 * it points into the row's own allocation (instance_free). */
struct instance {
	int64_t id;
	const char *kind;		/* nouns.c's instance kinds: profile, stacks, ... */
	char worker[WORKER_ID_MAX];	/* the worker acted on */
	pid_t pid;
	uid_t worker_uid;		/* its owner, who may see the instance */
	const char *service;		/* its service, unit or cgroup */
	const char *user;		/* who asked */
	uid_t uid;
	const char *mode;		/* a profile's event, an action's method; NULL */
	int64_t duration_ns;		/* -1: none */
	const char *interval, *format;
	enum instance_state status;
	const char *message;
	uint64_t created_ms;
	uint64_t finished_ms;		/* 0 while it runs */
	pid_t child_pid;		/* 0: none yet */
	const char *target;		/* a restart: the unit or [service] */
	const char *new_worker;		/* a restart: the worker that came back */
	int64_t schedule;		/* the schedule that started it; 0: on demand */
	int64_t cpu_ns;			/* the CPU its process used; -1: not known (yet) */
	/* A group (a profile of every worker a selector takes): its
	 * selector (JSON text; NULL: not a group) and the members it
	 * started (-1 while it starts them, and for any other instance);
	 * a member: its group (0: none). */
	const char *selector;
	int64_t members;
	int64_t parent;
};

/* Instance id: 0 and *ret (instance_free it), -ENOENT, or -EIO
 * (-ENOMEM). Every function below that reads fails the same way. */
int instance_get(struct db *db, int64_t id, struct instance **ret);
void instance_free(struct instance *in);

/* Which instances a list shows: NULL/false fields do not filter. */
struct instance_filter {
	const char *worker;
	const char *status;		/* a state's name */
	int64_t schedule;		/* 0: any */
	int64_t parent;			/* 0: any; -1: no member of a group */
	bool all_users;			/* else only uid's workers' */
	uid_t uid;
	long limit;
};

/* The newest instances first, at most f->limit: 0 and *ret (n of them;
 * instances_free it), or -EIO. */
int instances_list(struct db *db, const struct instance_filter *f, struct instance ***ret,
		   size_t *n);
void instances_free(struct instance **list, size_t n);

/* The ids of the instances still RUNNING: 0 and *ret (free it), or -EIO. */
int instances_running_ids(struct db *db, int64_t **ret, size_t *n);

/* The ended instances of each worker (and groups of each selector)
 * past its newest per_worker (on demand only: a schedule's are kept as
 * long as it says): 0 and their
 * ids into *ret (free it), or -EIO. */
int instances_beyond_history(struct db *db, unsigned per_worker, int64_t **ret, size_t *n);

/* The ended instances schedule started before before_ms: 0 and their
 * ids into *ret (free it), or -EIO. */
int instances_of_schedule_before(struct db *db, int64_t schedule, uint64_t before_ms,
				 int64_t **ret, size_t *n);

/* The row removed (its artifacts are the caller's). 0 or -EIO. */
int instance_delete(struct db *db, int64_t id);

/* The running instance of kind and mode (NULL: none) on worker: its id,
 * 0 when there is none, or -EIO. */
int64_t instance_running_on(struct db *db, const char *worker, const char *kind, const char *mode);

/* How many instances run: their number, or -EIO. */
int64_t instances_running_count(struct db *db);

/* A new RUNNING row from in (its id, status, message, finished and
 * child_pid ignored): 0 and its id into *ret_id, or -EIO. */
int instance_insert(struct db *db, const struct instance *in, int64_t *ret_id);

/* The instance's child process. 0 or -EIO. */
int instance_set_child(struct db *db, int64_t id, pid_t child);

/* The CPU its process used, once it has ended. 0 or -EIO. */
int instance_set_cpu(struct db *db, int64_t id, uint64_t cpu_ns);

/* The CPU the processes of the instances schedule started in [since,
 * before) used (those still running count nothing yet): ns, or -EIO. */
int64_t instances_cpu_of_schedule(struct db *db, int64_t schedule, uint64_t since_ms,
				  uint64_t before_ms);

/* What one of schedule's recordings costs: the mean CPU of its last
 * ended ones (at most last of them), ns; 0 when none has ended yet, or
 * -EIO. */
int64_t instances_cpu_per_recording(struct db *db, int64_t schedule, unsigned last);

/* When schedule last recorded each worker in each mode. */
struct recorded {
	char worker[WORKER_ID_MAX];
	char mode[32];
	uint64_t last_ms;
};

/* Those of schedule: 0 and *ret (n of them; free it), or -EIO (-ENOMEM). */
int instances_recorded_by(struct db *db, int64_t schedule, struct recorded **ret, size_t *n);

/* A member of a group, with what its worker was called. */
struct member {
	int64_t id;
	char worker[WORKER_ID_MAX];
	pid_t pid;
	char name[64];			/* the worker's name when it started; "" */
	enum instance_state status;
};

/* The members of group: 0 and *ret (n of them, oldest first; free it),
 * or -EIO. */
int instance_members(struct db *db, int64_t group, struct member **ret, size_t *n);

/* A group's members, now that they are all started. 0 or -EIO. */
int instance_set_members(struct db *db, int64_t group, int64_t members);

/* Its message, the instance still running. 0 or -EIO. */
int instance_set_message(struct db *db, int64_t id, const char *message);

/* The instance ended at ms as status with message (and, a restart, the
 * worker that came back; either NULL keeps what the row has). 0 or
 * -EIO. */
int instance_end(struct db *db, int64_t id, enum instance_state status, const char *message,
		 uint64_t ms, const char *new_worker);

/* The worker an instance starts on, remembered (first and last seen at
 * ms). 0 or -EIO. */
int instance_worker_seen(struct db *db, const struct worker *w, const char *service, uint64_t ms);

#endif
