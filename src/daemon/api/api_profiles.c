/* api_profiles: a service's continuous profiles (what its schedules
 * recorded) in one mode over a time range, read by nprof convert --parts
 * run as the workers' owner (the stored files are theirs to have
 * written): GET /api/v1/profiles merges them into one profile, in any
 * format; GET /api/v1/profiles/series sums their samples over time, for
 * a timeline; GET /api/v1/profiles/diff compares two ranges of them
 * with nprof diff --parts. Each takes a range and chooses the
 * recordings alike (range_query). */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/api/api.h"
#include "daemon/core/nouns.h"
#include "daemon/store/artifact_rows.h"
#include "profile/events.h"
#include "profile/merge.h"
#include "profile/profile.h"

/* The most recordings one answer merges: a day of one a minute, of a
 * few workers. */
#define MERGE_MAX 20000
/* A range without from: the hour before until. */
#define DEFAULT_RANGE_MS (3600ull * 1000)
/* A series' buckets at most, with a step given: a day by the second
 * is 86400, past what a timeline draws. */
#define SERIES_MAX_POINTS 10000
/* What nprof --series writes, read back at most: 10000 numbers. */
#define SERIES_JSON_MAX (1u << 20)

/* A time of the query: RFC 3339 ("2026-12-02T14:05:00Z", a fraction and
 * an offset allowed) or Unix seconds, as ms. false when it is neither. */
static bool parse_time(const char *s, uint64_t *ret_ms)
{
	struct tm tm = { 0 };
	const char *p;
	char *end;
	double secs = strtod(s, &end);
	long offset = 0, ms = 0;

	if (end != s && !*end && secs >= 0 && secs < 1e11) {
		*ret_ms = (uint64_t)(secs * 1000);
		return true;
	}
	if (!(p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)))
		return false;
	if (*p == '.') {
		long scale = 100;

		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
			ms += scale ? (*p - '0') * scale : 0;
	}
	if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
		offset = (strtol(p + 1, NULL, 10) * 60 + strtol(p + 4, NULL, 10)) * 60;
		offset = *p == '-' ? -offset : offset;
	} else if (strcmp(p, "Z") && strcmp(p, "z")) {
		return false;
	}
	*ret_ms = (uint64_t)(timegm(&tm) - offset) * 1000 + (uint64_t)ms;
	return true;
}

/* The recordings' files as nprof convert --parts reads them
 * (api_parts_file): its fd, or -1 after the 500. */
static int parts_file(struct daemon *d, const struct artifact *arts, size_t n, struct reply *rp)
{
	int fd = api_parts_file(d, arts, NULL, n);

	if (fd < 0)
		reply_error(rp, 500, NULL, "cannot gather the recordings to merge: %s",
			    strerror(-fd));
	return fd < 0 ? -1 : fd;
}

/* The query every endpoint here shares: service, mode, from, until (by
 * the names given: a comparison has two ranges), user,
 * checked (400 naming the one at fault), and the recordings of the
 * range into *ret_arts (n of them, maybe 0; free it), all of one
 * owner's workers. false after replying the error. */
static bool range_query(struct daemon *d, struct request *rq, struct reply *rp,
			const char *from_key, const char *until_key, struct profile_range *r,
			struct artifact **ret_arts, size_t *ret_n)
{
	const char *service = rq->query(rq, "service"), *mode = rq->query(rq, "mode"),
		   *from_text = rq->query(rq, from_key), *until_text = rq->query(rq, until_key),
		   *user = rq->query(rq, "user");
	struct artifact *arts = NULL;
	size_t n = 0;

	*r = (struct profile_range){ .service = service, .mode = mode, .all_users = rq->user.admin,
				     .uid = rq->user.uid, .owner = -1, .limit = MERGE_MAX + 1 };
	if (!service || !service[0]) {
		reply_error(rp, 400, "service", "service is required: a service's name, as GET "
			    "/api/v1/workers shows it");
		return false;
	}
	if (!mode || !event_find(mode)) {
		reply_error(rp, 400, "mode", "mode is required: one of the modes its schedules "
			    "record (cpu, alloc, ...)");
		return false;
	}
	r->until_ms = now_ms();
	if (until_text && !parse_time(until_text, &r->until_ms)) {
		reply_error(rp, 400, until_key, "%s=%.40s: give an RFC 3339 time "
			    "(2026-12-02T14:05:00Z) or Unix seconds", until_key, until_text);
		return false;
	}
	r->from_ms = r->until_ms > DEFAULT_RANGE_MS ? r->until_ms - DEFAULT_RANGE_MS : 0;
	if (from_text && !parse_time(from_text, &r->from_ms)) {
		reply_error(rp, 400, from_key, "%s=%.40s: give an RFC 3339 time "
			    "(2026-12-02T14:00:00Z) or Unix seconds", from_key, from_text);
		return false;
	}
	if (r->from_ms >= r->until_ms) {
		reply_error(rp, 400, from_key, "%s must be before %s", from_key, until_key);
		return false;
	}
	if (user) {
		struct passwd pw, *p = NULL;
		char buf[4096];

		if (getpwnam_r(user, &pw, buf, sizeof(buf), &p) != 0 || !p) {
			reply_error(rp, 400, "user", "user=%.32s: no such user", user);
			return false;
		}
		r->owner = p->pw_uid;
	}
	if (artifacts_of_range(d->db, r, &arts, &n) < 0) {
		reply_error(rp, 500, NULL, "cannot read the index (see nprofd's log)");
		return false;
	}
	if (n > MERGE_MAX) {
		reply_error(rp, 400, from_key, "more than %d recordings in that range: ask for a "
			    "shorter one", MERGE_MAX);
		goto fail;
	}
	for (size_t i = 1; i < n; i++)
		if (arts[i].worker_uid != arts[0].worker_uid) {
			reply_error(rp, 400, "user", "the service's recordings in that range are of "
				    "workers of different users (uid %u and %u): ask for one's with "
				    "user=NAME", (unsigned)arts[0].worker_uid,
				    (unsigned)arts[i].worker_uid);
			goto fail;
		}
	*ret_arts = arts;
	*ret_n = n;
	return true;
fail:
	free(arts);
	return false;
}

/* A download's name: PREFIX-SERVICE-MODE, without what a
 * Content-Disposition's quoted name cannot hold. */
static void file_base(char *base, size_t len, const char *prefix, const struct profile_range *r)
{
	snprintf(base, len, "%s%.64s-%.16s", prefix, r->service, r->mode);
	for (char *c = base; *c; c++)
		if (*c == '/' || *c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
			*c = '_';
}

/* The 404 of a range without a recording, naming key. */
static void reply_none(struct reply *rp, const char *key, const struct profile_range *r,
		       const char *range)
{
	reply_error(rp, 404, key, "no continuous profile of service %.64s in mode %.16s in %s "
		    "that you may see (a schedule records them: POST /api/v1/schedules)",
		    r->service, r->mode, range);
}

/* GET /api/v1/profiles?host=*: this host's merge and every other's
 * (api_cluster_gather), each under its root "[host NAME]", merged in
 * turn. A host that has none in that range adds nothing; one that
 * does not answer fails the whole, naming it: a profile of the cluster
 * without a host would look whole. The final merge reads only what
 * this daemon hands it, as nobody. */
static void every_host(struct daemon *d, struct request *rq, struct reply *rp,
		       const char *format, const char *inl, const struct profile_range *r,
		       const struct artifact *arts, size_t n)
{
	char *argv[] = { d->nprof, "convert", "--parts", "-", "-", "-o", "pprof", NULL };
	struct gathered *g = NULL;
	json_t *hosts = NULL;
	char self_buf[256], root[PARTS_LINE_MAX], what[160], base[160];
	const char *self = api_cluster_self(d, self_buf, sizeof(self_buf));
	static const char *const keys[] = { "format", "inline" }, *const values[] = { "pprof", "0" };
	size_t ng = 0, merged = 0;
	int parts = -1, mine = -1, all = -1, out, err;

	if (api_cluster_gather(d, rq, rp, keys, values, 2, NULL, 0, &g, &ng, &hosts) < 0)
		return;
	for (size_t i = 0; i < ng; i++)
		if (g[i].status != 200 && g[i].status != 404) {
			reply_error(rp, 502, "host", "host %.64s: %s; ask each host (host=NAME) or "
				    "try again", g[i].name, g[i].error);
			goto out;
		}
	if ((all = open(d->artifacts_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)) < 0) {
		reply_error(rp, 500, NULL, "cannot gather the hosts' profiles: %s", strerror(errno));
		goto out;
	}
	if (n) {
		if ((parts = parts_file(d, arts, n, rp)) < 0)
			goto out;
		snprintf(what, sizeof(what), "merging %zu recordings of %.64s", n, r->service);
		if ((mine = api_run_nprof(d, argv, arts[0].worker_uid, parts, -1, what, rp)) < 0)
			goto out;
		profile_host_root_name(root, sizeof(root), self);
		if ((err = api_parts_append(all, root, mine, NULL, 0)) < 0)
			goto fail;
		merged++;
	}
	for (size_t i = 0; i < ng; i++) {
		if (g[i].status != 200)
			continue;
		profile_host_root_name(root, sizeof(root), g[i].name);
		if ((err = api_parts_append(all, root, -1, g[i].body ? g[i].body : "", g[i].len)) < 0)
			goto fail;
		merged++;
	}
	if (!merged) {
		reply_none(rp, "service", r, "that range on any host");
		goto out;
	}
	lseek(all, 0, SEEK_SET);
	argv[6] = (char *)format;
	snprintf(what, sizeof(what), "merging %zu hosts' profiles of %.64s", merged, r->service);
	if ((out = api_run_nprof_streamed(d, argv, user_reader_uid(0), all, -1, what, rp)) < 0)
		goto out;
	file_base(base, sizeof(base), "", r);
	api_reply_file(rp, out, format, base, inl);
	snprintf(rp->result, sizeof(rp->result), "merged %zu hosts' profiles as %s", merged, format);
	goto out;
fail:
	reply_error(rp, 500, NULL, "cannot gather the hosts' profiles: %s", strerror(-err));
out:
	if (parts >= 0)
		close(parts);
	if (mine >= 0)
		close(mine);
	if (all >= 0)
		close(all);
	api_gathered_free(g, ng, hosts);
}

void api_profiles(struct daemon *d, struct request *rq, struct reply *rp)
{
	const char *format = rq->query(rq, "format"), *inl = rq->query(rq, "inline"),
		   *host = rq->query(rq, "host");
	struct profile_range r;
	char *argv[] = { d->nprof, "convert", "--parts", "-", "-", "-o", NULL, NULL };
	struct artifact *arts = NULL;
	char what[160], base[160], targets[256];
	size_t n = 0;
	int parts = -1, out;

	if (!format)
		format = "pprof";
	if (!range_query(d, rq, rp, "from", "until", &r, &arts, &n))
		goto out;
	if (!format_converts("pprof", format)) {
		reply_error(rp, 400, "format", "a merged profile is written as %s",
			    format_targets("pprof", targets, sizeof(targets)));
		goto out;
	}
	if (!api_inline_valid(inl, rp))
		goto out;
	if (host && !strcmp(host, "*")) {
		every_host(d, rq, rp, format, inl, &r, arts, n);
		goto out;
	}
	if (!n) {
		reply_none(rp, "service", &r, "that range");
		goto out;
	}
	if ((parts = parts_file(d, arts, n, rp)) < 0)
		goto out;
	argv[6] = (char *)format;
	snprintf(what, sizeof(what), "merging %zu recordings of %.64s", n, r.service);
	out = api_run_nprof_streamed(d, argv, arts[0].worker_uid, parts, -1, what, rp);
	if (out < 0)
		goto out;
	file_base(base, sizeof(base), "", &r);
	api_reply_file(rp, out, format, base, inl);
	snprintf(rp->result, sizeof(rp->result), "merged %zu recordings as %s", n, format);
out:
	if (parts >= 0)
		close(parts);
	free(arts);
}

/* The step of a range without one: the shortest of these that draws
 * it in at most 300 buckets (an hour by 15 s, a day by 5 min), so that
 * a timeline has 120 to 300 bars whatever its length. */
static uint64_t default_step_s(uint64_t range_ms)
{
	static const uint64_t steps[] = { 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800,
					  3600, 7200, 10800, 21600, 43200, 86400 };
	size_t i = 0;

	while (i + 1 < sizeof(steps) / sizeof(steps[0]) && range_ms > steps[i] * 1000 * 300)
		i++;
	return steps[i];
}

/* What nprof --series wrote (out, a file it filled), checked and laid
 * out as the API's points from from_ms by step_s; false after the 500. */
static bool series_points(int out, uint64_t first_ms, uint64_t step_s, size_t want,
			  json_t *reply, struct reply *rp)
{
	struct stat st;
	char *buf = NULL;
	json_t *j = NULL, *values, *points;
	ssize_t got = 0;
	bool ok = false;
	size_t i;

	if (fstat(out, &st) < 0 || st.st_size > SERIES_JSON_MAX ||
	    !(buf = malloc((size_t)st.st_size + 1)))
		goto out;
	while (got < st.st_size) {
		ssize_t k = pread(out, buf + got, (size_t)(st.st_size - got), got);

		if (k <= 0)
			goto out;
		got += k;
	}
	/* nprof ran as the workers' owner: its output is checked, not trusted */
	j = json_loadb(buf, (size_t)got, 0, NULL);
	values = json_object_get(j, "values");
	if (!json_is_array(values) || json_array_size(values) != want)
		goto out;
	points = json_array();
	json_object_set_new(reply, "points", points);
	for (i = 0; i < want; i++) {
		json_t *v = json_array_get(values, i);
		double x = json_number_value(v);
		char when[40];

		/* (a number past int64's range is refused before the cast, which
		 * it would make undefined) */
		if (!json_is_number(v) || !(x >= 0 && x < 9e18))
			goto out;
		json_array_append_new(points, json_pack("{ss so}", "t",
			iso_time(first_ms + i * step_s * 1000, when, sizeof(when)),
			"value", x == (double)(int64_t)x ? json_integer((json_int_t)x) : json_real(x)));
	}
	json_object_set(reply, "spread", json_object_get(j, "spread"));
	json_object_set(reply, "outside", json_object_get(j, "outside"));
	ok = true;
out:
	if (!ok)
		reply_error(rp, 500, NULL, "nprof convert --series wrote no series of %zu steps", want);
	json_decref(j);
	free(buf);
	return ok;
}

/* add's points (another host's series of the same range and step) added
 * into to's, which may have none yet: false when they do not line up. */
static bool add_points(json_t *to, json_t *add)
{
	json_t *a = json_object_get(add, "points"), *t = json_object_get(to, "points");
	size_t i;

	if (!json_is_array(a))
		return false;
	if (!json_array_size(t)) {
		json_object_set(to, "points", a);
		return true;
	}
	if (json_array_size(a) && json_array_size(a) != json_array_size(t))
		return false;
	for (i = 0; i < json_array_size(a); i++) {
		json_t *x = json_array_get(t, i), *y = json_array_get(a, i);
		const char *tx = json_string_value(json_object_get(x, "t"));
		const char *ty = json_string_value(json_object_get(y, "t"));
		double v = json_number_value(json_object_get(x, "value")) +
			   json_number_value(json_object_get(y, "value"));

		if (!tx || !ty || strcmp(tx, ty) || !json_is_number(json_object_get(y, "value")) ||
		    !(v >= 0 && v < 9e18))
			return false;
		json_object_set_new(x, "value", v == (double)(int64_t)v ? json_integer((json_int_t)v)
									: json_real(v));
	}
	return true;
}

/* series?host=*: every other host's series of the same range and step
 * (given to each explicitly, so that their steps line up) added into
 * reply's; a host with none adds nothing, one that does not answer or
 * whose series does not line up fails the whole, naming it. */
static bool series_every_host(struct daemon *d, struct request *rq, struct reply *rp,
			      const struct profile_range *r, uint64_t step_s, json_t *reply)
{
	static const char *const keys[] = { "from", "until", "step" };
	char from_arg[32], until_arg[32], step_arg[32];
	const char *values[] = { from_arg, until_arg, step_arg };
	struct gathered *g = NULL;
	json_t *hosts = NULL, *names = json_array(), *j = NULL;
	char self_buf[256];
	size_t ng = 0;
	bool ok = false;

	snprintf(from_arg, sizeof(from_arg), "%.3f", (double)r->from_ms / 1000);
	snprintf(until_arg, sizeof(until_arg), "%.3f", (double)r->until_ms / 1000);
	snprintf(step_arg, sizeof(step_arg), "%llu", (unsigned long long)step_s);
	if (!names || api_cluster_gather(d, rq, rp, keys, values, 3, NULL, 0, &g, &ng, &hosts) < 0)
		goto out;
	if (json_integer_value(json_object_get(reply, "recordings")))
		json_array_append_new(names, json_string(api_cluster_self(d, self_buf,
									    sizeof(self_buf))));
	for (size_t i = 0; i < ng; i++) {
		const char *sum[] = { "recordings", "spread", "outside" };

		if (g[i].status != 200) {
			reply_error(rp, 502, "host", "host %.64s: %s; ask each host (host=NAME) or "
				    "try again", g[i].name, g[i].error);
			goto out;
		}
		json_decref(j);
		j = json_loadb(g[i].body, g[i].len, 0, NULL);
		if (!add_points(reply, j)) {
			reply_error(rp, 502, "host", "host %.64s sent a series that does not line up "
				    "with this host's (%llu s steps from %s): try again", g[i].name,
				    (unsigned long long)step_s, from_arg);
			goto out;
		}
		for (size_t k = 0; k < sizeof(sum) / sizeof(sum[0]); k++)
			if (json_is_integer(json_object_get(j, sum[k])))
				json_object_set_new(reply, sum[k], json_integer(
					json_integer_value(json_object_get(reply, sum[k])) +
					json_integer_value(json_object_get(j, sum[k]))));
		if (json_integer_value(json_object_get(j, "recordings")))
			json_array_append_new(names, json_string(g[i].name));
	}
	json_object_set(reply, "hosts", names);
	ok = true;
out:
	json_decref(j);
	json_decref(names);
	api_gathered_free(g, ng, hosts);
	return ok;
}

void api_profiles_series(struct daemon *d, struct request *rq, struct reply *rp)
{
	const char *host = rq->query(rq, "host");
	const char *step_text = rq->query(rq, "step");
	const struct event_def *ev;
	struct profile_range r;
	struct artifact *arts = NULL;
	char step_arg[32], from_arg[32], until_arg[32], what[160];
	char *argv[] = { d->nprof, "convert", "--parts", "--series", step_arg, "--from", from_arg,
			 "--until", until_arg, "-", "-", NULL };
	uint64_t step_s, first_ms;
	size_t n = 0, want;
	json_t *reply = NULL;
	int parts = -1, out = -1;

	if (!range_query(d, rq, rp, "from", "until", &r, &arts, &n))
		goto out;
	ev = event_find(r.mode);
	step_s = default_step_s(r.until_ms - r.from_ms);
	if (step_text) {
		char *end;
		unsigned long long v = strtoull(step_text, &end, 10);

		if (end == step_text || *end || step_text[0] == '-' || !v || v > 86400) {
			reply_error(rp, 400, "step", "step=%.32s: give whole seconds, 1 to 86400",
				    step_text);
			goto out;
		}
		step_s = v;
	}
	first_ms = r.from_ms / (step_s * 1000) * step_s * 1000;
	want = (size_t)((r.until_ms + step_s * 1000 - 1) / (step_s * 1000) - first_ms / (step_s * 1000));
	if (want > SERIES_MAX_POINTS) {
		reply_error(rp, 400, "step", "step=%llu draws that range in %zu steps, more than %d: "
			    "give a longer step or a shorter range", (unsigned long long)step_s, want,
			    SERIES_MAX_POINTS);
		goto out;
	}
	reply = json_pack("{ss ss so so sI ss? ss? sI}", "service", r.service, "mode", r.mode,
			  "from", api_time_json(r.from_ms), "until", api_time_json(r.until_ms),
			  "step", (json_int_t)step_s, "type", ev->values[0].type,
			  "unit", ev->values[0].unit, "recordings", (json_int_t)n);
	if (!reply) {
		reply_error(rp, 500, NULL, "out of memory");
		goto out;
	}
	/* A timeline of nothing is drawn empty, not refused: a schedule made
	 * a minute ago has nothing yet, and its page polls on. */
	if (!n) {
		json_object_set_new(reply, "points", json_array());
		goto done;
	}
	if ((parts = parts_file(d, arts, n, rp)) < 0)
		goto out;
	snprintf(step_arg, sizeof(step_arg), "%llus", (unsigned long long)step_s);
	snprintf(from_arg, sizeof(from_arg), "%.3f", (double)r.from_ms / 1000);
	snprintf(until_arg, sizeof(until_arg), "%.3f", (double)r.until_ms / 1000);
	snprintf(what, sizeof(what), "the series of %zu recordings of %.64s", n, r.service);
	out = api_run_nprof(d, argv, arts[0].worker_uid, parts, -1, what, rp);
	if (out < 0 || !series_points(out, first_ms, step_s, want, reply, rp))
		goto out;
done:
	if (host && !strcmp(host, "*") && !series_every_host(d, rq, rp, &r, step_s, reply))
		goto out;
	rp->json = reply;
	reply = NULL;
	snprintf(rp->result, sizeof(rp->result), "series of %zu recordings", n);
out:
	json_decref(reply);
	if (out >= 0)
		close(out);
	if (parts >= 0)
		close(parts);
	free(arts);
}

void api_profiles_diff(struct daemon *d, struct request *rq, struct reply *rp)
{
	const char *format = rq->query(rq, "format"), *inl = rq->query(rq, "inline");
	struct profile_range rb, ra;
	struct artifact *before = NULL, *after = NULL;
	size_t nb = 0, na = 0;
	int pb = -1, pa = -1, out;
	char title[256], base[160];
	char *argv[] = { d->nprof, "diff", "--parts", "-", "/dev/fd/3", "-o", NULL, "--title",
			 title, NULL };

	format = format ? format : "flamegraph";
	if (!format_find(format) || !format_find(format)->diff) {
		char names[128];

		reply_error(rp, 400, "format", "format=%.32s: a diff is %s", format,
			    format_diff_list(names, sizeof(names)));
		return;
	}
	if (!api_inline_valid(inl, rp) ||
	    !range_query(d, rq, rp, "before_from", "before_until", &rb, &before, &nb) ||
	    !range_query(d, rq, rp, "after_from", "after_until", &ra, &after, &na))
		goto out;
	if (!nb || !na) {
		reply_none(rp, nb ? "after_from" : "before_from", &rb,
			   nb ? "the after range" : "the before range");
		goto out;
	}
	if (before[0].worker_uid != after[0].worker_uid) {
		reply_error(rp, 400, "user", "the two ranges' recordings are of workers of different "
			    "users: ask for one's with user=NAME");
		goto out;
	}
	if ((pb = parts_file(d, before, nb, rp)) < 0 || (pa = parts_file(d, after, na, rp)) < 0)
		goto out;
	argv[6] = (char *)format;
	snprintf(title, sizeof(title), "%.64s %.16s: %zu recordings \u2192 %zu recordings",
		 rb.service, rb.mode, nb, na);
	out = api_run_nprof_streamed(d, argv, before[0].worker_uid, pb, pa,
				     "comparing the two ranges", rp);
	if (out < 0)
		goto out;
	file_base(base, sizeof(base), "diff-", &rb);
	api_reply_file(rp, out, format, base, inl);
	snprintf(rp->result, sizeof(rp->result), "compared %zu with %zu recordings", nb, na);
out:
	if (pb >= 0)
		close(pb);
	if (pa >= 0)
		close(pa);
	free(before);
	free(after);
}
