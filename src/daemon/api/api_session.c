/* api_session: signing in to the web UI with a user's own password
 * (PAM), which makes a session — a token sent back as an HttpOnly,
 * SameSite=Strict cookie, with a CSRF token the page echoes in
 * X-CSRF-Token on every change — and signing out. */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "daemon/api/api.h"
#include "daemon/auth/pam_auth.h"
#include "daemon/auth/signin_limit.h"
#include "daemon/auth/tokens.h"
#include "daemon/store/token_rows.h"

#define PASSWORD_MAX 1024

static json_t *session_json(const struct user *u, const char *csrf, uint64_t expires_ms)
{
	char when[40];

	return json_pack("{ss si sb ss ss}", "user", u->name, "uid", (int)u->uid, "admin", u->admin,
			 "csrf", csrf, "expires", iso_time(expires_ms, when, sizeof(when)));
}

/* The session cookie: the browser sends it back to this daemon only,
 * never to script, never with a request another site started. */
static void set_cookie(struct reply *rp, const char *token, uint64_t max_age_s, bool tls)
{
	snprintf(rp->set_cookie, sizeof(rp->set_cookie),
		 "%s=%s; Path=/; Max-Age=%llu; HttpOnly; SameSite=Strict%s", SESSION_COOKIE, token,
		 (unsigned long long)max_age_s, tls ? "; Secure" : "");
}

/* Past max_sessions live ones, the user's oldest session ends. */
static void bound_sessions(struct daemon *d, uid_t uid)
{
	while (token_rows_live_count(d->db, uid, TOKEN_SESSION, now_ms()) >=
	       (int64_t)d->cfg.max_sessions) {
		int64_t oldest = token_row_oldest_live(d->db, uid, TOKEN_SESSION, now_ms());

		if (oldest <= 0 || token_revoke(d->db, oldest) < 0)
			break;
	}
}

/* A refused attempt's one line: who waits, why, for how long, and the
 * key that sets it. */
static void refuse(const struct daemon *d, struct reply *rp, const char *name, const char *addr,
		   enum signin_refusal why, uint64_t wait_s)
{
	if (why == SIGNIN_PAIR)
		reply_error(rp, 429, NULL, "too many failed sign-ins as %s from %s (past "
			    "[signin] max_failures = %u, each makes the next wait twice as long); "
			    "try again in %llu s", name, addr, d->cfg.max_failures,
			    (unsigned long long)wait_s);
	else if (why == SIGNIN_ADDRESS)
		reply_error(rp, 429, NULL, "too many failed sign-ins from %s, whatever the name (past "
			    "[signin] max_address_failures = %u); try again in %llu s", addr,
			    d->cfg.max_address_failures, (unsigned long long)wait_s);
	else
		reply_error(rp, 429, NULL, "nprofd takes at most [signin] failures_per_minute = %u "
			    "failed sign-ins a minute, and you failed within its failure_window; try "
			    "again in %llu s", d->cfg.failures_per_minute,
			    (unsigned long long)wait_s);
	snprintf(rp->result, sizeof(rp->result), "refused: %s",
		 why == SIGNIN_PAIR ? "that name from that address failed too often"
		 : why == SIGNIN_ADDRESS ? "that address failed too often"
					 : "the door's rate of failures, and this client failed");
}

/* A request of a user the door knew: there is nothing to sign in to, nor
 * a session to show or end. */
static void not_a_session(const struct request *rq, struct reply *rp, unsigned status)
{
	reply_error(rp, status, NULL, "this request is not signed in with a session (you are %s by "
		    "%s); a browser signs in with POST /api/v1/session over HTTP", rq->user.name,
		    rq->user.via);
}

void api_signin(struct daemon *d, struct request *rq, struct reply *rp)
{
	const char *addr = rq->addr, *peer = rq->peer;
	json_t *body = NULL, *name_v, *pw_v;
	const char *name, *pw;
	char why[256], token[TOKEN_LEN + 1], csrf[TOKEN_LEN + 1];
	uint64_t wait_s, delay_us = 0, ttl_ms = d->cfg.session_lifetime_ns / 1000000;
	struct signin_attempt attempt;
	enum signin_refusal why_refused;
	struct passwd pwd, *p = NULL;
	char buf[4096];
	int64_t id;

	if (rq->user.via) {
		not_a_session(rq, rp, 400);
		return;
	}
	body = json_loads(rq->body, 0, NULL);
	name_v = json_object_get(body, "user");
	pw_v = json_object_get(body, "password");
	name = json_string_value(name_v);
	pw = json_string_value(pw_v);
	rq->user.via = "session";
	rq->user.uid = (uid_t)-1; /* no one yet: the audit log says -1 */
	if (!json_is_object(body) || !name || !pw) {
		reply_error(rp, 400, NULL, "the body must be JSON {\"user\": NAME, \"password\": "
			    "PASSWORD}");
		goto out;
	}
	/* the names nprofd.conf takes, so PAM is never asked about odd bytes */
	if (json_string_length(name_v) != strlen(name) || strlen(name) >= CONFIG_NAME_MAX ||
	    !config_valid_name(name)) {
		reply_error(rp, 400, "user", "user must be a user name: 1 to %d of A-Z a-z 0-9 _ . @ $ -",
			    CONFIG_NAME_MAX - 1);
		goto out;
	}
	/* named in the audit log, whatever comes of it */
	snprintf(rq->user.name, sizeof(rq->user.name), "%s", name);
	if (!pw[0] || json_string_length(pw_v) > PASSWORD_MAX || strlen(pw) != json_string_length(pw_v)) {
		reply_error(rp, 400, "password", "password must be 1 to %d bytes", PASSWORD_MAX);
		goto out;
	}
	if (signin_limit_try(d->signin_limit, name, addr, peer, clock_ns(CLOCK_MONOTONIC), &attempt,
			     &why_refused, &wait_s) < 0) {
		refuse(d, rp, name, addr, why_refused, wait_s);
		goto out;
	}
	if (pam_auth(d->cfg.pam_service, name, pw, &delay_us, why, sizeof(why)) < 0 ||
	    getpwnam_r(name, &pwd, buf, sizeof(buf), &p) != 0 || !p) {
		/* One answer for a wrong password and an unknown user: the
		 * reason is for the audit log, not for a guesser. */
		reply_error(rp, 401, NULL, "wrong user name or password");
		snprintf(rp->result, sizeof(rp->result), "failed: %.200s", why);
		if (delay_us)
			usleep((useconds_t)delay_us);
		/* dated now, after PAM's delay: the next wait runs from the reply */
		signin_limit_failed(d->signin_limit, &attempt, clock_ns(CLOCK_MONOTONIC));
		goto out;
	}
	rq->user.uid = p->pw_uid;
	if (!user_complete(d, &rq->user)) {
		reply_error(rp, 401, NULL, "wrong user name or password");
		signin_limit_failed(d->signin_limit, &attempt, clock_ns(CLOCK_MONOTONIC));
		goto out;
	}
	signin_limit_succeeded(d->signin_limit, &attempt, clock_ns(CLOCK_MONOTONIC));
	bound_sessions(d, rq->user.uid);
	if (token_create(d->db, &rq->user, TOKEN_SESSION, "web sign-in", ttl_ms, token,
			 sizeof(token), csrf, &id) < 0) {
		reply_error(rp, 500, NULL, "cannot write the session to the index (see nprofd's log)");
		goto out;
	}
	set_cookie(rp, token, ttl_ms / 1000, rq->tls);
	rp->json = session_json(&rq->user, csrf, now_ms() + ttl_ms);
	snprintf(rp->result, sizeof(rp->result), "signed in: session %lld", (long long)id);
out:
	json_decref(body);
}

void api_session_get(struct daemon *d, struct request *rq, struct reply *rp)
{
	(void)d;
	if (!rq->user.session)
		not_a_session(rq, rp, 404);
	else
		rp->json = session_json(&rq->user, rq->user.csrf, rq->user.session_expires_ms);
}

void api_session_end(struct daemon *d, struct request *rq, struct reply *rp)
{
	if (!rq->user.session) {
		not_a_session(rq, rp, 404);
		return;
	}
	if (token_revoke(d->db, rq->user.session) < 0) {
		reply_error(rp, 500, NULL, "your session could not be ended in the index (see "
			    "nprofd's log); sign out again");
		return;
	}
	snprintf(rp->set_cookie, sizeof(rp->set_cookie),
		 "%s=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict", SESSION_COOKIE);
	rp->json = json_pack("{sb}", "signed_out", 1);
	snprintf(rp->result, sizeof(rp->result), "signed out: session %lld",
		 (long long)rq->user.session);
}
