/* instances: the instances table as typed rows (instances.h). */
#include "daemon/store/instances.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "daemon/store/db.h"

/* Every read names its columns in this order (read_row's). */
#define COLUMNS "id, kind, worker, pid, worker_uid, service, user, uid, mode, duration_ns, " \
		"interval, format, status, message, created, finished, child_pid, target, " \
		"new_worker, schedule, cpu_ns, selector, members, parent"
enum {
	C_ID, C_KIND, C_WORKER, C_PID, C_WORKER_UID, C_SERVICE, C_USER, C_UID, C_MODE,
	C_DURATION, C_INTERVAL, C_FORMAT, C_STATUS, C_MESSAGE, C_CREATED, C_FINISHED,
	C_CHILD, C_TARGET, C_NEW_WORKER, C_SCHEDULE, C_CPU, C_SELECTOR, C_MEMBERS, C_PARENT
};

/* The row and, after it, the text its pointers point into. */
struct block {
	struct instance in;
	char text[];
};

/* The text columns, with where each goes. */
static const struct {
	int col;
	size_t field;
} TEXT[] = {
	{ C_KIND, offsetof(struct instance, kind) },
	{ C_SERVICE, offsetof(struct instance, service) },
	{ C_USER, offsetof(struct instance, user) },
	{ C_MODE, offsetof(struct instance, mode) },
	{ C_INTERVAL, offsetof(struct instance, interval) },
	{ C_FORMAT, offsetof(struct instance, format) },
	{ C_MESSAGE, offsetof(struct instance, message) },
	{ C_TARGET, offsetof(struct instance, target) },
	{ C_NEW_WORKER, offsetof(struct instance, new_worker) },
	{ C_SELECTOR, offsetof(struct instance, selector) },
};
#define TEXT_COLUMNS (sizeof(TEXT) / sizeof(TEXT[0]))

/* The row r is at, in one allocation; NULL when out of memory. */
static struct instance *read_row(const struct db_row *r)
{
	size_t need = 0, at = 0;
	struct block *b;
	int status;

	for (size_t i = 0; i < TEXT_COLUMNS; i++)
		if (db_text(r, TEXT[i].col))
			need += strlen(db_text(r, TEXT[i].col)) + 1;
	if (!(b = calloc(1, sizeof(*b) + need)))
		return NULL;
	for (size_t i = 0; i < TEXT_COLUMNS; i++) {
		const char *s = db_text(r, TEXT[i].col);
		const char **field = (const char **)((char *)&b->in + TEXT[i].field);

		if (!s)
			continue;
		*field = memcpy(b->text + at, s, strlen(s) + 1);
		at += strlen(s) + 1;
	}
	if (!b->in.kind)
		b->in.kind = "";	/* NOT NULL in the schema */
	if (!b->in.user)
		b->in.user = "";
	if (!b->in.message)
		b->in.message = "";
	b->in.id = db_int(r, C_ID);
	snprintf(b->in.worker, sizeof(b->in.worker), "%s", db_text(r, C_WORKER) ?: "");
	b->in.pid = (pid_t)db_int(r, C_PID);
	b->in.worker_uid = (uid_t)db_int(r, C_WORKER_UID);
	b->in.uid = (uid_t)db_int(r, C_UID);
	b->in.duration_ns = db_null(r, C_DURATION) ? -1 : db_int(r, C_DURATION);
	status = instance_state_parse(db_text(r, C_STATUS) ?: "");
	/* the schema's CHECK allows no other; were one there, it did not run */
	b->in.status = status < 0 ? INSTANCE_FAILED : (enum instance_state)status;
	b->in.created_ms = (uint64_t)db_int(r, C_CREATED);
	b->in.finished_ms = (uint64_t)db_int(r, C_FINISHED);
	b->in.child_pid = (pid_t)db_int(r, C_CHILD);
	b->in.schedule = db_int(r, C_SCHEDULE);
	b->in.cpu_ns = db_null(r, C_CPU) ? -1 : db_int(r, C_CPU);
	b->in.members = db_null(r, C_MEMBERS) ? -1 : db_int(r, C_MEMBERS);
	b->in.parent = db_int(r, C_PARENT);
	return &b->in;
}

void instance_free(struct instance *in)
{
	free(in);	/* the block's first member */
}

/* Rows into a growing list. */
struct gather {
	struct instance **list;
	size_t n, cap;
};

static int gather_row(void *ctx, const struct db_row *r)
{
	struct gather *g = ctx;
	struct instance *in;

	if (array_reserve(&g->list, &g->cap, g->n + 1, sizeof(*g->list)) < 0 ||
	    !(in = read_row(r)))
		return -ENOMEM;
	g->list[g->n++] = in;
	return 0;
}

/* What a query gathered, r its db_each result: the rows into *ret and
 * *n, or freed when it failed. */
static int rows_taken(struct gather *g, int r, struct instance ***ret, size_t *n)
{
	if (r < 0) {
		instances_free(g->list, g->n);
		return r;
	}
	*ret = g->list;
	*n = g->n;
	return 0;
}

int instance_get(struct db *db, int64_t id, struct instance **ret)
{
	struct gather g = { 0 };
	struct instance **list;
	size_t n;
	int r = rows_taken(&g, db_each(db, gather_row, &g, "SELECT " COLUMNS " FROM instances "
				       "WHERE id = ?", "i", id), &list, &n);

	*ret = r == 0 && n ? list[0] : NULL;
	if (r == 0)
		free(list);
	return r < 0 ? r : n ? 0 : -ENOENT;
}

int instances_list(struct db *db, const struct instance_filter *f, struct instance ***ret,
		   size_t *n)
{
	struct gather g = { 0 };

	return rows_taken(&g, db_each(db, gather_row, &g, "SELECT " COLUMNS " FROM instances "
				      "WHERE (? IS NULL OR worker = ?) AND (? IS NULL OR status = ?) "
				      "AND (? = 0 OR schedule = ?) AND (? OR worker_uid = ?) "
				      "AND (? = 0 OR (? < 0 AND parent IS NULL) OR parent = ?) "
				      "ORDER BY id DESC LIMIT ?", "ttttiiiu" "iiii",
				      f->worker, f->worker, f->status, f->status, f->schedule,
				      f->schedule, (int64_t)f->all_users, (unsigned)f->uid,
				      f->parent, f->parent, f->parent, (int64_t)f->limit),
			  ret, n);
}

void instances_free(struct instance **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		instance_free(list[i]);
	free(list);
}

/* Ids into a growing list. */
struct ids {
	int64_t *id;
	size_t n, cap;
};

static int gather_id(void *ctx, const struct db_row *r)
{
	struct ids *ids = ctx;

	if (array_reserve(&ids->id, &ids->cap, ids->n + 1, sizeof(*ids->id)) < 0)
		return -ENOMEM;
	ids->id[ids->n++] = db_int(r, 0);
	return 0;
}

/* What a query of ids gathered, as rows_taken. */
static int ids_taken(struct ids *ids, int r, int64_t **ret, size_t *n)
{
	if (r < 0) {
		free(ids->id);
		return r;
	}
	*ret = ids->id;
	*n = ids->n;
	return 0;
}

int instances_running_ids(struct db *db, int64_t **ret, size_t *n)
{
	struct ids ids = { 0 };

	return ids_taken(&ids, db_each(db, gather_id, &ids, "SELECT id FROM instances WHERE "
				       "status = 'RUNNING'", ""), ret, n);
}

int instances_beyond_history(struct db *db, unsigned per_worker, int64_t **ret, size_t *n)
{
	struct ids ids = { 0 };

	return ids_taken(&ids, db_each(db, gather_id, &ids, "SELECT id FROM (SELECT id, "
				       "ROW_NUMBER() OVER (PARTITION BY worker, selector ORDER BY id DESC) AS n "
				       "FROM instances WHERE status != 'RUNNING' AND schedule IS NULL) "
				       "WHERE n > ?", "u",
				       per_worker), ret, n);
}

int instance_delete(struct db *db, int64_t id)
{
	return db_exec(db, NULL, "DELETE FROM instances WHERE id = ?", "i", id);
}

int64_t instance_running_on(struct db *db, const char *worker, const char *kind, const char *mode)
{
	return db_value(db, "SELECT id FROM instances WHERE worker = ? AND kind = ? AND "
			"IFNULL(mode, '') = ? AND status = 'RUNNING'", "ttt", worker, kind,
			mode ? mode : "");
}

int64_t instances_running_count(struct db *db)
{
	return db_value(db, "SELECT COUNT(*) FROM instances WHERE status = 'RUNNING'", "");
}

int instances_of_schedule_before(struct db *db, int64_t schedule, uint64_t before_ms,
				 int64_t **ret, size_t *n)
{
	struct ids ids = { 0 };

	return ids_taken(&ids, db_each(db, gather_id, &ids, "SELECT id FROM instances WHERE "
				       "schedule = ? AND status != 'RUNNING' AND created < ?", "ii",
				       schedule, (int64_t)before_ms), ret, n);
}

int instance_insert(struct db *db, const struct instance *in, int64_t *ret_id)
{
	return db_exec(db, ret_id, "INSERT INTO instances(kind, worker, pid, worker_uid, service, "
		       "user, uid, mode, duration_ns, interval, format, target, status, message, "
		       "created, schedule, selector, parent) "
		       "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,'RUNNING','',?,NULLIF(?, 0),?,NULLIF(?, 0))",
		       "ttiuttutittti" "iti", in->kind, in->worker, (int64_t)in->pid,
		       (unsigned)in->worker_uid, in->service, in->user, (unsigned)in->uid, in->mode,
		       in->duration_ns, in->interval, in->format, in->target,
		       (int64_t)in->created_ms, in->schedule, in->selector, in->parent);
}

int instance_set_child(struct db *db, int64_t id, pid_t child)
{
	return db_exec(db, NULL, "UPDATE instances SET child_pid = ? WHERE id = ?", "ii",
		       (int64_t)child, id);
}

int instance_set_cpu(struct db *db, int64_t id, uint64_t cpu_ns)
{
	return db_exec(db, NULL, "UPDATE instances SET cpu_ns = ? WHERE id = ?", "ii",
		       (int64_t)cpu_ns, id);
}

int64_t instances_cpu_of_schedule(struct db *db, int64_t schedule, uint64_t since_ms,
				  uint64_t before_ms)
{
	return db_value(db, "SELECT IFNULL(SUM(cpu_ns), 0) FROM instances WHERE schedule = ? AND "
			"created >= ? AND created < ?", "iii", schedule, (int64_t)since_ms,
			(int64_t)before_ms);
}

int64_t instances_cpu_per_recording(struct db *db, int64_t schedule, unsigned last)
{
	return db_value(db, "SELECT IFNULL(CAST(AVG(cpu_ns) AS INTEGER), 0) FROM (SELECT cpu_ns "
			"FROM instances WHERE schedule = ? AND cpu_ns IS NOT NULL ORDER BY id DESC "
			"LIMIT ?)", "iu", schedule, last);
}

/* The row r is at, into the struct recorded at elem (db_rows' reader). */
static void read_recorded(const struct db_row *r, void *elem)
{
	struct recorded *x = elem;

	snprintf(x->worker, sizeof(x->worker), "%s", db_text(r, 0) ?: "");
	snprintf(x->mode, sizeof(x->mode), "%s", db_text(r, 1) ?: "");
	x->last_ms = (uint64_t)db_int(r, 2);
}

int instances_recorded_by(struct db *db, int64_t schedule, struct recorded **ret, size_t *n)
{
	return db_rows(db, sizeof(**ret), read_recorded, ret, n, "SELECT worker, mode, "
		       "MAX(created) FROM instances WHERE schedule = ? GROUP BY worker, mode", "i",
		       schedule);
}

int instance_set_message(struct db *db, int64_t id, const char *message)
{
	return db_exec(db, NULL, "UPDATE instances SET message = ? WHERE id = ?", "ti", message, id);
}

int instance_end(struct db *db, int64_t id, enum instance_state status, const char *message,
		 uint64_t ms, const char *new_worker)
{
	return db_exec(db, NULL, "UPDATE instances SET status = ?, message = IFNULL(?, message), "
		       "finished = ?, "
		       "new_worker = IFNULL(?, new_worker) WHERE id = ?", "ttiti",
		       instance_state_name(status), message, (int64_t)ms, new_worker, id);
}

int instance_worker_seen(struct db *db, const struct worker *w, const char *service, uint64_t ms)
{
	return db_exec(db, NULL, "INSERT INTO workers(id, pid, name, uid, user, service, "
		       "first_seen, last_seen) VALUES(?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE "
		       "SET last_seen = excluded.last_seen", "titutt" "ii", w->id, (int64_t)w->pid,
		       w->name, (unsigned)w->uid, w->user, service, (int64_t)ms, (int64_t)ms);
}

/* Members into a growing list. */
struct members {
	struct member *list;
	size_t n, cap;
};

static int gather_member(void *ctx, const struct db_row *r)
{
	struct members *g = ctx;
	struct member *m;
	int status;

	if (array_reserve(&g->list, &g->cap, g->n + 1, sizeof(*g->list)) < 0)
		return -ENOMEM;
	m = &g->list[g->n++];
	m->id = db_int(r, 0);
	snprintf(m->worker, sizeof(m->worker), "%s", db_text(r, 1) ?: "");
	m->pid = (pid_t)db_int(r, 2);
	snprintf(m->name, sizeof(m->name), "%s", db_text(r, 3) ?: "");
	status = instance_state_parse(db_text(r, 4) ?: "");
	m->status = status < 0 ? INSTANCE_FAILED : (enum instance_state)status;
	return 0;
}

int instance_members(struct db *db, int64_t group, struct member **ret, size_t *n)
{
	struct members g = { 0 };
	int r = db_each(db, gather_member, &g, "SELECT i.id, i.worker, i.pid, w.name, i.status "
			"FROM instances i LEFT JOIN workers w ON w.id = i.worker WHERE i.parent = ? "
			"ORDER BY i.id", "i", group);

	if (r < 0) {
		free(g.list);
		return r;
	}
	*ret = g.list;
	*n = g.n;
	return 0;
}

int instance_set_members(struct db *db, int64_t group, int64_t members)
{
	return db_exec(db, NULL, "UPDATE instances SET members = ? WHERE id = ?", "ii", members,
		       group);
}
