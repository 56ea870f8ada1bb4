/* schedule_rows: the schedules table as typed rows (schedule_rows.h). */
#include "daemon/store/schedule_rows.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/store/db.h"

static const char *const STATES[] = { [SCHEDULE_ACTIVE] = "ACTIVE", [SCHEDULE_PAUSED] = "PAUSED" };

const char *schedule_state_name(enum schedule_state s)
{
	return STATES[s];
}

int schedule_state_parse(const char *name)
{
	for (int i = 0; i < (int)(sizeof(STATES) / sizeof(STATES[0])); i++)
		if (!strcmp(STATES[i], name))
			return i;
	return -1;
}

/* Every read names its columns in this order (read_row's). */
#define COLUMNS "id, user, uid, selector, modes, duration_ns, every_ns, keep_ns, status, " \
		"created, last_run, next_run, message, budget, interval_ns, cost, name"
enum { C_ID, C_USER, C_UID, C_SELECTOR, C_MODES, C_DURATION, C_EVERY, C_KEEP, C_STATUS,
       C_CREATED, C_LAST, C_NEXT, C_MESSAGE, C_BUDGET, C_INTERVAL, C_COST, C_NAME };

/* The row r is at, into the struct schedule at elem (db_rows' reader). */
static void read_row(const struct db_row *r, void *elem)
{
	struct schedule *s = elem;
	int status = schedule_state_parse(db_text(r, C_STATUS) ?: "");

	*s = (struct schedule){
		.id = db_int(r, C_ID),
		.uid = (uid_t)db_int(r, C_UID),
		.duration_ns = (uint64_t)db_int(r, C_DURATION),
		.every_ns = (uint64_t)db_int(r, C_EVERY),
		.keep_ns = (uint64_t)db_int(r, C_KEEP),
		/* the schedule's CHECK allows the two alone */
		.status = status == SCHEDULE_ACTIVE ? SCHEDULE_ACTIVE : SCHEDULE_PAUSED,
		.created_ms = (uint64_t)db_int(r, C_CREATED),
		.last_run_ms = (uint64_t)db_int(r, C_LAST),
		.next_run_ms = (uint64_t)db_int(r, C_NEXT),
		.budget = db_real(r, C_BUDGET),
		.interval_ns = (uint64_t)db_int(r, C_INTERVAL),
		.cost = db_real(r, C_COST),
	};
	snprintf(s->user, sizeof(s->user), "%s", db_text(r, C_USER) ?: "");
	snprintf(s->selector, sizeof(s->selector), "%s", db_text(r, C_SELECTOR) ?: "");
	snprintf(s->modes, sizeof(s->modes), "%s", db_text(r, C_MODES) ?: "");
	snprintf(s->message, sizeof(s->message), "%s", db_text(r, C_MESSAGE) ?: "");
	snprintf(s->name, sizeof(s->name), "%s", db_text(r, C_NAME) ?: "");
}

static int one_row(void *ctx, const struct db_row *r)
{
	read_row(r, ctx);
	return 1;
}

int schedule_insert(struct db *db, const struct schedule *s, int64_t *ret_id)
{
	return db_exec(db, ret_id, "INSERT INTO schedules(user, uid, selector, modes, duration_ns, "
		       "every_ns, keep_ns, status, created, next_run, message, budget, interval_ns, "
		       "name) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)", "tuttiiitiit" "dit", s->user,
		       (unsigned)s->uid, s->selector, s->modes, (int64_t)s->duration_ns,
		       (int64_t)s->every_ns, (int64_t)s->keep_ns, schedule_state_name(s->status),
		       (int64_t)s->created_ms, (int64_t)s->next_run_ms, s->message, s->budget,
		       (int64_t)s->every_ns, s->name[0] ? s->name : NULL);
}

int schedule_get_declared(struct db *db, const char *name, struct schedule *ret)
{
	int r = db_each(db, one_row, ret, "SELECT " COLUMNS " FROM schedules WHERE name = ?", "t",
			name);

	return r < 0 ? -EIO : r ? 0 : -ENOENT;
}

int schedule_redeclare(struct db *db, int64_t id, const struct schedule *s)
{
	/* (its interval starts again from every: the governor learns the
	 * new cost as it did the first) */
	return db_exec(db, NULL, "UPDATE schedules SET user = ?, uid = ?, selector = ?, modes = ?, "
		       "duration_ns = ?, every_ns = ?, keep_ns = ?, budget = ?, next_run = ?, "
		       "interval_ns = ?, message = ? WHERE id = ?", "tuttiiidiiti", s->user,
		       (unsigned)s->uid, s->selector, s->modes, (int64_t)s->duration_ns,
		       (int64_t)s->every_ns, (int64_t)s->keep_ns, s->budget,
		       (int64_t)s->next_run_ms, (int64_t)s->every_ns, s->message, id);
}

int schedule_get(struct db *db, int64_t id, struct schedule *ret)
{
	int r = db_each(db, one_row, ret, "SELECT " COLUMNS " FROM schedules WHERE id = ?", "i", id);

	return r < 0 ? -EIO : r ? 0 : -ENOENT;
}

int schedules_list(struct db *db, bool all_users, uid_t uid, struct schedule **ret, size_t *n)
{
	return db_rows(db, sizeof(**ret), read_row, ret, n, "SELECT " COLUMNS " FROM schedules "
		       "WHERE ? OR uid = ? ORDER BY id DESC", "iu", (int64_t)all_users,
		       (unsigned)uid);
}

int schedules_due(struct db *db, uint64_t now_ms, struct schedule **ret, size_t *n)
{
	return db_rows(db, sizeof(**ret), read_row, ret, n, "SELECT " COLUMNS " FROM schedules "
		       "WHERE status = 'ACTIVE' AND next_run <= ? ORDER BY next_run", "i",
		       (int64_t)now_ms);
}

int64_t schedules_next_run(struct db *db)
{
	return db_value(db, "SELECT MIN(next_run) FROM schedules WHERE status = 'ACTIVE'", "");
}

int schedule_set_status(struct db *db, int64_t id, enum schedule_state status,
			uint64_t next_run_ms)
{
	return db_exec(db, NULL, "UPDATE schedules SET status = ?, next_run = ? WHERE id = ?", "tii",
		       schedule_state_name(status), (int64_t)next_run_ms, id);
}

int schedule_ran(struct db *db, int64_t id, uint64_t last_ms, uint64_t next_ms,
		 uint64_t interval_ns, double cost, const char *message)
{
	return db_exec(db, NULL, "UPDATE schedules SET last_run = ?, next_run = ?, "
		       "interval_ns = ?, cost = ?, message = ? WHERE id = ?", "iiidti",
		       (int64_t)last_ms, (int64_t)next_ms, (int64_t)interval_ns, cost, message, id);
}

int schedule_delete(struct db *db, int64_t id)
{
	return db_exec(db, NULL, "DELETE FROM schedules WHERE id = ?", "i", id);
}
