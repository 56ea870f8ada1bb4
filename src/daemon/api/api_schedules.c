/* api_schedules: /api/v1/schedules — continuous profiling. A user
 * schedules their own workers, an admin any (a schedule acts as the user
 * who made it: schedule_runner.c); modes are switched on per mode in
 * nprofd.conf as for instances. A body is read into a struct
 * schedule_spec and checked by schedule_spec_check, as nprofd.conf's
 * [schedule NAME] sections are, which schedules_declare puts in the
 * index at start; those only the file changes (PATCH, DELETE: 409). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"
#include "daemon/api/api.h"
#include "daemon/api/schedule_runner.h"
#include "daemon/api/schedule_selector.h"
#include "daemon/core/log.h"
#include "daemon/store/db.h"
#include "daemon/store/schedule_rows.h"
#include "profile/events.h"

/* A duration field: "10s", "2m", or a number of seconds; absent,
 * fallback. Its bounds are schedule_spec_check's: what is not a
 * duration is 0, which no bound takes. */
static uint64_t span_field(json_t *body, const char *key, uint64_t fallback)
{
	json_t *v = json_object_get(body, key);
	uint64_t ns = 0;

	if (!v || json_is_null(v))
		return fallback;
	if (json_is_number(v) && json_number_value(v) > 0 && json_number_value(v) < 1e9)
		ns = (uint64_t)(json_number_value(v) * 1e9);
	else if (!json_is_string(v) ||
		 units_parse_duration_ns(json_string_value(v), 1000000000ull, &ns) < 0)
		ns = 0;
	return ns;
}

/* The budget field, a share of one CPU: "1%", "0.5%", or a number of
 * percent; absent, [continuous] cpu_budget. What is neither is -1,
 * which schedule_spec_check refuses. */
static double budget_field(const struct daemon *d, json_t *v)
{
	char *end = NULL;
	double x = json_is_number(v) ? json_number_value(v)
		   : json_is_string(v) ? strtod(json_string_value(v), &end) : -1;

	if (!v || json_is_null(v))
		return d->cfg.cpu_budget;
	if (end && (end == json_string_value(v) || (*end && strcmp(end, "%"))))
		return -1;
	return x / 100;
}

/* The modes field into spec->modes: false when it replied 400. */
static bool modes_field(json_t *v, struct reply *rp, struct schedule_spec *spec)
{
	char why[512];
	size_t i;
	json_t *m;

	if (!json_is_array(v) || !json_array_size(v) || json_array_size(v) > EVENT_COUNT) {
		reply_error(rp, 400, "modes", "modes must be a list of modes, such as [\"cpu\", "
			    "\"alloc\"]");
		return false;
	}
	json_array_foreach(v, i, m)
		if (schedule_spec_add_mode(spec, json_is_string(m) ? json_string_value(m) : "", why,
					   sizeof(why)) < 0) {
			reply_error(rp, 400, "modes", "%s", why);
			return false;
		}
	return true;
}

/* A schedule as the API shows it. */
static json_t *schedule_json(const struct schedule *s)
{
	json_error_t jerr;
	json_t *selector = json_loads(s->selector, 0, &jerr), *modes = json_array();
	char buf[SCHEDULE_MODES_MAX], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s->modes);
	for (char *m = strtok_r(buf, ",", &save); m; m = strtok_r(NULL, ",", &save))
		json_array_append_new(modes, json_string(m));
	return json_pack("{sI ss ss sI so so sf sf sf so so so ss sf sf sf ss so}",
		"id", (json_int_t)s->id,
		"status", schedule_state_name(s->status),
		"user", s->user,
		"uid", (json_int_t)s->uid,
		"selector", selector ? selector : json_object(),
		"modes", modes,
		"duration", (double)s->duration_ns / 1e9,
		"every", (double)s->every_ns / 1e9,
		"keep", (double)s->keep_ns / 1e9,
		"created", api_time_json(s->created_ms),
		"last_run", api_time_json(s->last_run_ms),
		"next_run", s->status == SCHEDULE_ACTIVE ? api_time_json(s->next_run_ms) : json_null(),
		"message", s->message,
		"budget", s->budget * 100,
		"interval", (double)(s->interval_ns ? s->interval_ns : s->every_ns) / 1e9,
		"cost", s->cost * 100,
		"source", s->name[0] ? SCHEDULE_DECLARED_BY : "api",
		"name", s->name[0] ? json_string(s->name) : json_null());
}

/* The fields a body may have. */
static const char *const BODY_KEYS[] = { "selector", "modes", "duration", "every", "keep",
					  "budget", "host", NULL };

/* The row spec makes (its selector as the index keeps it: JSON): 0, or
 * -E2BIG when that is longer than a row holds. */
static int schedule_of_spec(const struct schedule_spec *spec, struct schedule *ret)
{
	json_t *sel_json = schedule_selector_json(&spec->selector);
	char *text = json_dumps(sel_json, JSON_COMPACT);
	int r = -E2BIG;

	if (text && strlen(text) < sizeof(ret->selector)) {
		snprintf(ret->selector, sizeof(ret->selector), "%s", text);
		snprintf(ret->modes, sizeof(ret->modes), "%s", spec->modes);
		ret->duration_ns = spec->duration_ns;
		ret->every_ns = spec->every_ns;
		ret->keep_ns = spec->keep_ns;
		ret->budget = spec->budget;
		r = 0;
	}
	free(text);
	json_decref(sel_json);
	return r;
}

/* The schedule body (checked for its keys, "host" left out) asks for,
 * made on this host for rq's user. */
static void create_here(struct daemon *d, struct request *rq, struct reply *rp, json_t *body)
{
	struct schedule s = { .uid = rq->user.uid, .status = SCHEDULE_ACTIVE };
	struct schedule_spec spec = { 0 };
	enum schedule_field field;
	struct worker *ws = NULL;
	char why[512];
	size_t matched = 0;
	int64_t id;

	if (schedule_selector_parse(json_object_get(body, "selector"), &spec.selector, why,
				    sizeof(why)) < 0) {
		reply_error(rp, 400, "selector", "%s", why);
		goto out;
	}
	if (!modes_field(json_object_get(body, "modes"), rp, &spec))
		goto out;
	spec.duration_ns = span_field(body, "duration", d->cfg.duration_default_ns);
	spec.every_ns = span_field(body, "every", 0);
	spec.keep_ns = span_field(body, "keep", SCHEDULE_KEEP_DEFAULT_NS);
	spec.budget = budget_field(d, json_object_get(body, "budget"));
	/* (nprofd.conf's [schedule NAME] is held to the same check) */
	if (schedule_spec_check(&d->cfg, &spec, &field, why, sizeof(why)) < 0) {
		reply_error(rp, 400, schedule_field_name(field), "%s", why);
		goto out;
	}
	if (schedule_of_spec(&spec, &s) < 0) {
		reply_error(rp, 400, "selector", "the selector is too long: at most %zu bytes as JSON",
			    sizeof(s.selector) - 1);
		goto out;
	}
	snprintf(s.user, sizeof(s.user), "%s", rq->user.name);
	s.created_ms = s.next_run_ms = now_ms();
	if (schedule_matches(d, &spec.selector, &rq->user, &ws, &matched) == 0 && !matched)
		snprintf(s.message, sizeof(s.message), "matches none of your workers now; it records "
			 "those that appear, from their next period");
	if (schedule_insert(d->db, &s, &id) < 0) {
		reply_error(rp, 500, NULL, "cannot write the schedule to the index (see nprofd's log)");
		goto out;
	}
	s.id = id;
	rp->status = 201;
	rp->json = schedule_json(&s);
	json_object_set_new(rp->json, "matches", json_integer((json_int_t)matched));
	snprintf(rp->result, sizeof(rp->result), "schedule %lld", (long long)id);
out:
	free(ws);
}

/* host "*": the schedule made on this host, then on every other (each
 * daemon checks it and the user by its own rules). A body this host
 * refuses is refused for all, before any other is asked. 201 with what
 * each host made, each with its host; hosts that did not are named in
 * unanswered (host "*" when the others could not be asked at all: the
 * registry unread), and the reply is partial. */
static void create_everywhere(struct daemon *d, struct request *rq, struct reply *rp, json_t *body)
{
	struct gathered *g = NULL;
	json_t *hosts = NULL, *made = json_array(), *unanswered = json_array(), *j;
	char self_buf[256], *text;
	const char *self = api_cluster_self(d, self_buf, sizeof(self_buf));
	size_t n = 0;

	json_object_del(body, "host");
	if (!(text = json_dumps(body, JSON_COMPACT)) || !made || !unanswered) {
		reply_error(rp, 500, NULL, "out of memory");
		goto out;
	}
	create_here(d, rq, rp, body);
	if (rp->status != 201)
		goto out;
	/* this host's, into the list of every host's */
	json_object_set_new(rp->json, "host", json_string(self));
	json_array_append_new(made, rp->json);
	rp->json = NULL;
	if (api_cluster_gather(d, rq, rp, NULL, NULL, 0, text, strlen(text), &g, &n, &hosts) < 0) {
		/* made here already: said, with why no other host was asked */
		json_array_append_new(unanswered, json_pack("{ss ss}", "host", "*", "error",
			json_string_value(json_object_get(rp->json, "error")) ?: "?"));
		json_decref(rp->json);
		rp->json = NULL;
		n = 0;
	}
	for (size_t i = 0; i < n; i++) {
		j = g[i].status == 201 ? json_loadb(g[i].body, g[i].len, 0, NULL) : NULL;
		if (json_is_object(j)) {
			json_object_set_new(j, "host", json_string(g[i].name));
			json_array_append_new(made, j);
		} else {
			json_decref(j);
			json_array_append_new(unanswered, json_pack("{ss ss}", "host", g[i].name,
				"error", g[i].error[0] ? g[i].error : "not nprofd's schedule"));
		}
	}
	rp->status = 201;
	rp->json = json_pack("{sO sO sb}", "schedules", made, "unanswered", unanswered, "partial",
			     json_array_size(unanswered) > 0);
	snprintf(rp->result, sizeof(rp->result), "schedules on %zu of %zu hosts",
		 json_array_size(made), n + 1);
out:
	api_gathered_free(g, n, hosts);
	json_decref(made);
	json_decref(unanswered);
	free(text);
}

void api_schedule_create(struct daemon *d, struct request *rq, struct reply *rp)
{
	json_error_t jerr;
	json_t *body = json_loadb(rq->body, rq->body_len, JSON_REJECT_DUPLICATES, &jerr);
	const char *query_host = rq->query(rq, "host"), *host;

	if (!json_is_object(body)) {
		reply_error(rp, 400, NULL, "the body must be a JSON object such as {\"selector\": "
			    "{\"service\": \"nginx.service\"}, \"modes\": [\"cpu\"], \"duration\": "
			    "\"10s\", \"every\": \"60s\"}");
		goto out;
	}
	if (!api_known_keys(body, BODY_KEYS, rp))
		goto out;
	/* where: "host" in the body, as ?host= says it (one host's is passed
	 * on by the route, or here when the body says it) */
	host = json_string_value(json_object_get(body, "host"));
	if (json_object_get(body, "host") && (!host || !host[0] ||
	    (query_host && strcmp(query_host, host)))) {
		reply_error(rp, 400, "host", "host must be a host's name or \"*\" (every host), and "
			    "what ?host= says when both are given; give one GET /api/v1/hosts lists");
		goto out;
	}
	if (!host)
		host = query_host;
	if (host && !strcmp(host, "*") && !strcmp(rq->user.via, "cluster")) {
		/* (?host=NAME passes the body on: its "*" is asked of NAME) */
		reply_error(rp, 400, "host", "host \"*\" in a request from another daemon; each "
			    "daemon asks each host itself: send it to one daemon without ?host=");
		goto out;
	}
	if (host && !strcmp(host, "*")) {
		create_everywhere(d, rq, rp, body);
	} else if (host && !api_cluster_is_self(d, host)) {
		api_cluster_forward(d, rq, rp, host);
	} else {
		json_object_del(body, "host");
		create_here(d, rq, rp, body);
	}
out:
	json_decref(body);
}

void api_schedules_list(struct daemon *d, struct request *rq, struct reply *rp)
{
	struct schedule *list;
	json_t *shown;
	size_t n;

	if (schedules_list(d->db, rq->user.admin, rq->user.uid, &list, &n) < 0) {
		reply_error(rp, 500, NULL, "cannot read the schedules from the index (see nprofd's "
			    "log)");
		return;
	}
	shown = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(shown, schedule_json(&list[i]));
	free(list);
	rp->json = json_pack("{so}", "schedules", shown);
}

/* The schedule the path names, if rq's user may see it (their own; an
 * admin's, any): false when it replied 400, 404 or 500. */
static bool find_schedule(struct daemon *d, const struct request *rq, struct reply *rp,
			  struct schedule *ret)
{
	const char *seg = rq->param[0];
	char *end;
	long long id = strtoll(seg, &end, 10);
	int r = *end || id <= 0 ? -ENOENT : schedule_get(d->db, id, ret);

	if (r == -EIO) {
		reply_error(rp, 500, NULL, "cannot read schedule %lld from the index (see nprofd's "
			    "log)", id);
		return false;
	}
	if (r < 0 || !user_may_see(&rq->user, ret->uid)) {
		reply_error(rp, 404, "id", "no schedule %.32s of yours (GET /api/v1/schedules)", seg);
		return false;
	}
	return true;
}

void api_schedule_get(struct daemon *d, struct request *rq, struct reply *rp)
{
	struct schedule s;

	if (find_schedule(d, rq, rp, &s))
		rp->json = schedule_json(&s);
}

/* Whether s is nprofd.conf's, which only the file changes: then a 409
 * naming the section. */
static bool declared(const struct schedule *s, struct reply *rp)
{
	if (!s->name[0])
		return false;
	reply_error(rp, 409, "id", "schedule %lld is declared in nprofd.conf [schedule %s]; change "
		    "it there and restart nprofd", (long long)s->id, s->name);
	return true;
}

/* PATCH: {"status": "PAUSED"} pauses it, "ACTIVE" resumes it (its next
 * period begins now). */
void api_schedule_update(struct daemon *d, struct request *rq, struct reply *rp)
{
	json_error_t jerr;
	json_t *body = json_loadb(rq->body, rq->body_len, JSON_REJECT_DUPLICATES, &jerr);
	const char *status = json_string_value(json_object_get(body, "status"));
	int state = status ? schedule_state_parse(status) : -1;
	struct schedule s;

	if (!json_is_object(body) || json_object_size(body) != 1 || state < 0) {
		reply_error(rp, 400, "status", "the body must be {\"status\": \"PAUSED\"} or "
			    "{\"status\": \"ACTIVE\"}; to change anything else, delete the schedule "
			    "and create another");
	} else if (find_schedule(d, rq, rp, &s) && !declared(&s, rp)) {
		uint64_t next = state == SCHEDULE_ACTIVE && s.status != SCHEDULE_ACTIVE ? now_ms()
											 : s.next_run_ms;

		if (schedule_set_status(d->db, s.id, (enum schedule_state)state, next) < 0 ||
		    schedule_get(d->db, s.id, &s) < 0) {
			reply_error(rp, 500, NULL, "cannot write schedule %lld to the index (see "
				    "nprofd's log)", (long long)s.id);
		} else {
			rp->json = schedule_json(&s);
			snprintf(rp->result, sizeof(rp->result), "schedule %lld %s", (long long)s.id,
				 status);
		}
	}
	json_decref(body);
}

void api_schedule_delete(struct daemon *d, struct request *rq, struct reply *rp)
{
	struct schedule s;

	if (!find_schedule(d, rq, rp, &s) || declared(&s, rp))
		return;
	if (schedule_delete(d->db, s.id) < 0) {
		reply_error(rp, 500, NULL, "cannot delete schedule %lld from the index (see nprofd's "
			    "log)", (long long)s.id);
		return;
	}
	rp->json = json_pack("{sI}", "deleted", (json_int_t)s.id);
	snprintf(rp->result, sizeof(rp->result), "deleted schedule %lld", (long long)s.id);
}

/* Whether a and b do the same (their spec and who they act as). */
static bool same_schedule(const struct schedule *a, const struct schedule *b)
{
	return !strcmp(a->selector, b->selector) && !strcmp(a->modes, b->modes) &&
	       a->duration_ns == b->duration_ns && a->every_ns == b->every_ns &&
	       a->keep_ns == b->keep_ns && a->budget == b->budget && !strcmp(a->user, b->user) &&
	       a->uid == b->uid;
}

/* Whether the configuration declares a schedule named name. */
static bool still_declared(const struct daemon_config *c, const char *name)
{
	for (size_t i = 0; i < c->n_schedules; i++)
		if (!strcmp(c->schedules[i].name, name))
			return true;
	return false;
}

int schedules_declare(struct daemon *d, char *err, size_t errlen)
{
	struct schedule *all = NULL;
	size_t n = 0;
	int ret = 0;

	for (size_t i = 0; i < d->cfg.n_schedules && !ret; i++) {
		const struct schedule_config *sc = &d->cfg.schedules[i];
		/* root's authority: any user's workers, as an admin's schedule */
		struct schedule s = { .uid = 0, .status = SCHEDULE_ACTIVE }, had;
		int r;

		snprintf(s.name, sizeof(s.name), "%s", sc->name);
		snprintf(s.user, sizeof(s.user), "%s", SCHEDULE_DECLARED_BY);
		snprintf(s.message, sizeof(s.message), "declared in nprofd.conf [schedule %s]", sc->name);
		s.created_ms = s.next_run_ms = now_ms();
		if (schedule_of_spec(&sc->spec, &s) < 0) {
			snprintf(err, errlen, "nprofd.conf [schedule %s]: its selector is longer than "
				 "the index keeps (%zu bytes as JSON); select fewer workers", sc->name,
				 sizeof(s.selector) - 1);
			ret = -E2BIG;
		} else if ((r = schedule_get_declared(d->db, sc->name, &had)) == -ENOENT) {
			int64_t id;

			if (schedule_insert(d->db, &s, &id) < 0)
				ret = -EIO;
			else
				log_info("schedule %lld: nprofd.conf [schedule %s], new", (long long)id,
					 sc->name);
		} else if (r < 0) {
			ret = -EIO;
		} else if (!same_schedule(&had, &s)) {
			if (schedule_redeclare(d->db, had.id, &s) < 0)
				ret = -EIO;
			else
				log_info("schedule %lld: nprofd.conf [schedule %s], changed: its next "
					 "period begins now", (long long)had.id, sc->name);
		}
	}
	if (!ret && schedules_list(d->db, true, 0, &all, &n) < 0)
		ret = -EIO;
	for (size_t i = 0; i < n && !ret; i++) {
		if (!all[i].name[0] || still_declared(&d->cfg, all[i].name))
			continue;
		if (schedule_delete(d->db, all[i].id) < 0)
			ret = -EIO;
		else
			log_info("schedule %lld: [schedule %s] is no longer in nprofd.conf: removed; "
				 "what it recorded stays until its retention", (long long)all[i].id,
				 all[i].name);
	}
	if (ret == -EIO)
		snprintf(err, errlen, "cannot put nprofd.conf's schedules in the index (see the "
			 "lines above); check the state directory's disk");
	free(all);
	return ret;
}
