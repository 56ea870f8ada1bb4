/* api_profiles: GET /api/v1/profiles — a service's continuous profiles
 * (what its schedules recorded) in one mode over a time range, merged
 * into one profile by nprof convert --parts, run as the workers' owner
 * (the stored files are theirs to have written), in any format. */
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

/* The most recordings one answer merges: a day of one a minute, of a
 * few workers. */
#define MERGE_MAX 20000
/* A range without from: the hour before until. */
#define DEFAULT_RANGE_MS (3600ull * 1000)

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

void api_profiles(struct daemon *d, struct request *rq, struct reply *rp)
{
	const char *service = rq->query(rq, "service"), *mode = rq->query(rq, "mode"),
		   *from_text = rq->query(rq, "from"), *until_text = rq->query(rq, "until"),
		   *format = rq->query(rq, "format"), *user = rq->query(rq, "user"),
		   *inl = rq->query(rq, "inline");
	struct profile_range r = { .service = service, .mode = mode, .all_users = rq->user.admin,
				   .uid = rq->user.uid, .owner = -1, .limit = MERGE_MAX + 1 };
	char *argv[] = { d->nprof, "convert", "--parts", "-", "-", "-o", NULL, NULL };
	struct artifact *arts = NULL;
	char what[160], base[160], targets[256];
	size_t n = 0;
	int parts = -1, out;

	if (!format)
		format = "pprof";
	if (!service || !service[0]) {
		reply_error(rp, 400, "service", "service is required: a service's name, as GET "
			    "/api/v1/workers shows it");
		goto out;
	}
	if (!mode || !event_find(mode)) {
		reply_error(rp, 400, "mode", "mode is required: one of the modes its schedules "
			    "record (cpu, alloc, ...)");
		goto out;
	}
	r.until_ms = now_ms();
	if (until_text && !parse_time(until_text, &r.until_ms)) {
		reply_error(rp, 400, "until", "until=%.40s: give an RFC 3339 time "
			    "(2026-12-02T14:05:00Z) or Unix seconds", until_text);
		goto out;
	}
	r.from_ms = r.until_ms > DEFAULT_RANGE_MS ? r.until_ms - DEFAULT_RANGE_MS : 0;
	if (from_text && !parse_time(from_text, &r.from_ms)) {
		reply_error(rp, 400, "from", "from=%.40s: give an RFC 3339 time "
			    "(2026-12-02T14:00:00Z) or Unix seconds", from_text);
		goto out;
	}
	if (r.from_ms >= r.until_ms) {
		reply_error(rp, 400, "from", "from must be before until");
		goto out;
	}
	if (!format_converts("pprof", format)) {
		reply_error(rp, 400, "format", "a merged profile is written as %s",
			    format_targets("pprof", targets, sizeof(targets)));
		goto out;
	}
	if (!api_inline_valid(inl, rp))
		goto out;
	if (user) {
		struct passwd pw, *p = NULL;
		char buf[4096];

		if (getpwnam_r(user, &pw, buf, sizeof(buf), &p) != 0 || !p) {
			reply_error(rp, 400, "user", "user=%.32s: no such user", user);
			goto out;
		}
		r.owner = p->pw_uid;
	}
	if (artifacts_of_range(d->db, &r, &arts, &n) < 0) {
		reply_error(rp, 500, NULL, "cannot read the index (see nprofd's log)");
		goto out;
	}
	if (!n) {
		reply_error(rp, 404, "service", "no continuous profile of service %.64s in mode %.16s "
			    "in that range that you may see (a schedule records them: POST "
			    "/api/v1/schedules)", service, mode);
		goto out;
	}
	if (n > MERGE_MAX) {
		reply_error(rp, 400, "from", "more than %d recordings in that range: ask for a "
			    "shorter one", MERGE_MAX);
		goto out;
	}
	for (size_t i = 1; i < n; i++)
		if (arts[i].worker_uid != arts[0].worker_uid) {
			reply_error(rp, 400, "user", "the service's recordings in that range are of "
				    "workers of different users (uid %u and %u): ask for one's with "
				    "user=NAME", (unsigned)arts[0].worker_uid,
				    (unsigned)arts[i].worker_uid);
			goto out;
		}
	if ((parts = api_parts_file(d, arts, NULL, n)) < 0) {
		reply_error(rp, 500, NULL, "cannot gather the recordings to merge: %s",
			    strerror(-parts));
		goto out;
	}
	argv[6] = (char *)format;
	snprintf(what, sizeof(what), "merging %zu recordings of %.64s", n, service);
	out = api_run_nprof_streamed(d, argv, arts[0].worker_uid, parts, -1, what, rp);
	if (out < 0)
		goto out;
	snprintf(base, sizeof(base), "%.64s-%.16s", service, mode);
	for (char *c = base; *c; c++)
		if (*c == '/' || *c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
			*c = '_';
	api_reply_file(rp, out, format, base, inl);
	snprintf(rp->result, sizeof(rp->result), "merged %zu recordings as %s", n, format);
out:
	if (parts >= 0)
		close(parts);
	free(arts);
}
