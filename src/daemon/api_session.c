/* api_session: signing in to the web UI with a user's own password
 * (PAM), which makes a session — a token sent back as an HttpOnly,
 * SameSite=Strict cookie, with a CSRF token the page echoes in
 * X-CSRF-Token on every change — and signing out. */
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon/api.h"
#include "daemon/db.h"
#include "daemon/pam_auth.h"
#include "daemon/signin_limit.h"
#include "daemon/tokens.h"

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
	while (db_query_int(d->db, 0, "SELECT COUNT(*) FROM tokens WHERE uid = ? AND kind = "
			    "'session' AND revoked IS NULL AND expires > ?", "ui", (unsigned)uid,
			    (int64_t)now_ms()) >= (int64_t)d->cfg.max_sessions) {
		int64_t oldest = db_query_int(d->db, 0, "SELECT id FROM tokens WHERE uid = ? AND "
					      "kind = 'session' AND revoked IS NULL AND expires > ? "
					      "ORDER BY id LIMIT 1", "ui", (unsigned)uid,
					      (int64_t)now_ms());

		if (!oldest || token_revoke(d->db, oldest) < 0)
			break;
	}
}

void api_signin(struct daemon *d, struct request *rq, struct reply *rp, const char *addr,
		bool tls)
{
	json_t *body = json_loads(rq->body, 0, NULL);
	json_t *name_v = json_object_get(body, "user"), *pw_v = json_object_get(body, "password");
	const char *name = json_string_value(name_v), *pw = json_string_value(pw_v);
	char why[256], token[TOKEN_LEN + 1], csrf[TOKEN_LEN + 1];
	uint64_t wait_s, delay_us = 0, ttl_ms = d->cfg.session_lifetime_ns / 1000000;
	struct passwd pwd, *p = NULL;
	char buf[4096];
	int64_t id;

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
	if (signin_limit_refused(d->signin_limit, name, addr, &wait_s)) {
		reply_error(rp, 429, NULL, "too many failed sign-ins for %s or from %s; try again in "
			    "%llu s", name, addr, (unsigned long long)wait_s);
		snprintf(rp->result, sizeof(rp->result), "refused: too many failures");
		goto out;
	}
	if (pam_auth(d->cfg.pam_service, name, pw, &delay_us, why, sizeof(why)) < 0 ||
	    getpwnam_r(name, &pwd, buf, sizeof(buf), &p) != 0 || !p) {
		signin_limit_failed(d->signin_limit, name, addr);
		/* One answer for a wrong password and an unknown user: the
		 * reason is for the audit log, not for a guesser. */
		reply_error(rp, 401, NULL, "wrong user name or password");
		snprintf(rp->result, sizeof(rp->result), "failed: %.200s", why);
		if (delay_us)
			usleep((useconds_t)delay_us);
		goto out;
	}
	rq->user.uid = p->pw_uid;
	if (!user_complete(d, &rq->user)) {
		reply_error(rp, 401, NULL, "wrong user name or password");
		goto out;
	}
	signin_limit_succeeded(d->signin_limit, name);
	bound_sessions(d, rq->user.uid);
	if (token_create(d->db, &rq->user, TOKEN_SESSION, "web sign-in", ttl_ms, token,
			 sizeof(token), csrf, &id) < 0) {
		reply_error(rp, 500, NULL, "cannot write the session to the index (see nprofd's log)");
		goto out;
	}
	set_cookie(rp, token, ttl_ms / 1000, tls);
	rp->json = session_json(&rq->user, csrf, now_ms() + ttl_ms);
	snprintf(rp->result, sizeof(rp->result), "signed in: session %lld", (long long)id);
out:
	json_decref(body);
}

void api_session(struct daemon *d, const struct request *rq, struct reply *rp)
{
	if (!rq->user.session) {
		reply_error(rp, strcmp(rq->method, "POST") ? 404 : 400, NULL,
			    "this request is not signed in with a session (you are %s by %s); a "
			    "browser signs in with POST /api/v1/session over HTTP", rq->user.name,
			    rq->user.via);
	} else if (!strcmp(rq->method, "GET")) {
		rp->json = session_json(&rq->user, rq->user.csrf, rq->user.session_expires_ms);
	} else if (!strcmp(rq->method, "DELETE")) {
		token_revoke(d->db, rq->user.session);
		snprintf(rp->set_cookie, sizeof(rp->set_cookie),
			 "%s=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict", SESSION_COOKIE);
		rp->json = json_pack("{sb}", "signed_out", 1);
		snprintf(rp->result, sizeof(rp->result), "signed out: session %lld",
			 (long long)rq->user.session);
	} else {
		reply_error(rp, 405, NULL, "use GET or DELETE on /api/v1/session (POST signs in)");
	}
}
