/* daemon_tokens: API tokens and sessions (src/daemon/auth/tokens.c) on a real
 * index — a token lets in who it was made for, as its kind only, until
 * it expires or is revoked; the index holds its hash, never the token;
 * two tokens differ; a malformed one is refused before any query; the
 * rows (store/token_rows.c) list, count and find a user's live tokens
 * of one kind. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/auth/tokens.h"
#include "daemon/store/db.h"
#include "daemon/store/token_rows.h"
#include "test.h"

static void check_tokens(struct db *db)
{
	struct user alice = { .uid = 1001, .name = "alice" };
	char api[TOKEN_LEN + 1], api2[TOKEN_LEN + 1], session[TOKEN_LEN + 1], csrf[TOKEN_LEN + 1];
	char bad[TOKEN_LEN + 1];
	struct token_info info;
	int64_t id = -1, id2 = -1, sid = -1;

	CHECK(token_create(db, &alice, TOKEN_API, "ci", 60000, api, sizeof(api), NULL, &id) == 0 &&
	      id > 0, "an API token is made (id %lld)", (long long)id);
	CHECK(strlen(api) == TOKEN_LEN && !strncmp(api, "nprof_", 6) &&
	      strspn(api + 6, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") ==
		      TOKEN_LEN - 6,
	      "it is nprof_ and 43 characters of base64url: %s", api);
	CHECK(token_create(db, &alice, TOKEN_API, "ci2", 60000, api2, sizeof(api2), NULL, &id2) == 0 &&
	      strcmp(api, api2) && id2 != id, "a second one differs");
	CHECK(token_create(db, &alice, TOKEN_API, "x", 60000, bad, TOKEN_LEN, NULL, &id2) < 0,
	      "a buffer without room for the NUL is refused");

	memset(&info, 0, sizeof(info));
	CHECK(token_check(db, api, TOKEN_API, &info) == 0 && info.uid == 1001 &&
	      !strcmp(info.user, "alice") && info.id == id && info.csrf[0] == '\0',
	      "it stands for alice (uid %u, %s), no CSRF token", (unsigned)info.uid, info.user);
	CHECK(token_check(db, api, TOKEN_SESSION, &info) == -EACCES,
	      "an API token is no session cookie");
	CHECK_INT(db_value(db, "SELECT COUNT(*) FROM tokens WHERE hash = ? OR name = ? AND "
			       "hash LIKE 'nprof_%'", "tt", api, "ci"), ==, 0,
		  "the index holds its hash, not the token");

	snprintf(bad, sizeof(bad), "%s", api);
	bad[TOKEN_LEN - 1] = bad[TOKEN_LEN - 1] == 'A' ? 'B' : 'A';
	CHECK(token_check(db, bad, TOKEN_API, &info) == -EACCES, "one character changed: refused");
	CHECK(token_check(db, "nprof_short", TOKEN_API, &info) == -EACCES &&
	      token_check(db, "", TOKEN_API, &info) == -EACCES,
	      "a token of the wrong length is refused");
	memcpy(bad, "xprof_", 6);
	CHECK(token_check(db, bad, TOKEN_API, &info) == -EACCES, "one without the prefix too");

	CHECK(token_create(db, &alice, TOKEN_SESSION, "browser", 60000, session, sizeof(session),
			   csrf, &sid) == 0, "a session is made");
	CHECK(token_check(db, session, TOKEN_SESSION, &info) == 0 && !strcmp(info.csrf, csrf) &&
	      strlen(csrf) == TOKEN_LEN && strcmp(csrf, session),
	      "it carries its own CSRF token, which is not the session's");
	CHECK(token_check(db, session, TOKEN_API, &info) == -EACCES,
	      "a session is no API token");

	CHECK(token_revoke(db, id) == 0 && token_check(db, api, TOKEN_API, &info) == -EACCES,
	      "revoked: refused");
	CHECK(token_check(db, api2, TOKEN_API, &info) == 0, "the other one still lets in");
}

static void check_expiry(struct db *db)
{
	struct user bob = { .uid = 1002, .name = "bob" };
	char tok[TOKEN_LEN + 1];
	struct token_info info;
	struct timespec pause = { 0, 20 * 1000000 };
	int64_t id;

	CHECK(token_create(db, &bob, TOKEN_API, "brief", 1, tok, sizeof(tok), NULL, &id) == 0,
	      "a token valid for 1 ms");
	nanosleep(&pause, NULL);
	CHECK(token_check(db, tok, TOKEN_API, &info) == -EACCES, "20 ms later: expired, refused");
}

static void check_rows(struct db *db)
{
	struct user carol = { .uid = 1003, .name = "carol" }, dave = { .uid = 1004, .name = "dave" };
	char tok[TOKEN_LEN + 1], csrf[TOKEN_LEN + 1];
	int64_t first = -1, second = -1, theirs = -1, sid = -1;
	struct token_filter mine = { .kind = TOKEN_API, .uid = 1003, .limit = 10 };
	struct token_filter all = { .kind = TOKEN_API, .all_users = true, .limit = 10 };
	struct token_row *rows = NULL, one;
	size_t n = 0;
	uint64_t now;

	token_create(db, &carol, TOKEN_API, "first", 60000, tok, sizeof(tok), NULL, &first);
	token_create(db, &carol, TOKEN_API, "second", 60000, tok, sizeof(tok), NULL, &second);
	token_create(db, &dave, TOKEN_API, "theirs", 60000, tok, sizeof(tok), NULL, &theirs);
	token_create(db, &carol, TOKEN_SESSION, "web", 60000, tok, sizeof(tok), csrf, &sid);
	now = (uint64_t)time(NULL) * 1000;
	CHECK_INT(token_rows_live_count(db, 1003, TOKEN_API, now), ==, 2,
		  "carol holds two live API tokens (her session is of another kind)");
	CHECK_INT(token_row_oldest_live(db, 1003, TOKEN_API, now), ==, first,
		  "the oldest of them is the first made");
	CHECK(token_rows_list(db, &mine, &rows, &n) == 0 && n == 2 && rows[0].id == second &&
	      rows[1].id == first && !strcmp(rows[1].name, "first") && !strcmp(rows[1].user, "carol") &&
	      rows[1].uid == 1003 && !strcmp(rows[1].kind, TOKEN_API) && !rows[1].revoked_ms &&
	      rows[1].expires_ms > rows[1].created_ms,
	      "her list: hers, newest first, every column read");
	free(rows);
	CHECK(token_rows_list(db, &all, &rows, &n) == 0 && n >= 3 && rows[0].id == theirs,
	      "an admin's list has everyone's (%zu)", n);
	free(rows);
	CHECK(token_row_get(db, sid, TOKEN_SESSION, &one) == 0 && !strcmp(one.csrf, csrf) &&
	      token_row_get(db, sid, TOKEN_API, &one) == -ENOENT &&
	      token_row_get(db, 999999, TOKEN_API, &one) == -ENOENT,
	      "one token by id and kind, its CSRF token with it; another kind's or none is ENOENT");
	CHECK(token_revoke(db, first) == 0 && token_row_get(db, first, TOKEN_API, &one) == 0 &&
	      one.revoked_ms >= now - 1000 &&
	      token_rows_live_count(db, 1003, TOKEN_API, now) == 1 &&
	      token_row_oldest_live(db, 1003, TOKEN_API, now) == second,
	      "revoked: its time kept, no longer counted, the next is the oldest");
	CHECK_INT(token_row_oldest_live(db, 1005, TOKEN_API, now), ==, 0, "no token: 0");
}

static void check_equal(void)
{
	CHECK(token_equal("abc", "abc") && !token_equal("abc", "abd") && !token_equal("abc", "ab") &&
	      !token_equal("", "a") && token_equal("", ""),
	      "token_equal says equal for equal strings only");
}

int main(void)
{
	char dir[] = "/tmp/nprof-tokens-test.XXXXXX", path[128], err[256] = "";
	struct db *db;

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/nprofd.db", dir);
	db = db_open(path, err, sizeof(err));
	CHECK(db != NULL, "the index opens (%s)", err);
	if (db) {
		check_tokens(db);
		check_expiry(db);
		check_rows(db);
		db_close(db);
	}
	check_equal();
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	(void)!system(path);
	return test_done();
}
