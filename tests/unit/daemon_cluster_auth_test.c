/* cluster_auth: a request signed by one daemon for another passes that
 * one's check once; expired, from the future, replayed, signed with
 * another key, with its method, path, query, body, user, host,
 * destination or address changed, signed for another host or address,
 * by the checking host itself, or before it started, it is refused, as
 * is a malformed header and one no slot can remember. A reply holds
 * only for its request, from its host, as sent (status, type, file
 * name, body or a stream's size). A registration holds only as written,
 * at its own key. URLs' authorities; the key file must be private. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/cluster/cluster_auth.h"
#include "test.h"

#define WINDOW 30000
#define NOW 1764122400000ull

static const char key1[] = "0123456789abcdef0123456789abcdef";
static const char key2[] = "0123456789abcdef0123456789abcdeX";

/* hostB, reached at two addresses, started a minute before NOW */
static const char *const b_at[] = { "10.0.0.2:9700", "b.example:9443" };
static const struct cluster_self self_b = { "hostB", b_at, 2, NOW - 60000 };

static int verify_as(struct cluster_auth *a, const struct cluster_self *self,
		     const struct cluster_request *rq, const char *h, uint64_t now,
		     struct cluster_claim *c, char *why, size_t whylen)
{
	int r = cluster_auth_verify(a, rq, h, self, now, c, why, whylen);

	if (r)
		CHECK(why[0] && !strchr(why, '\n'), "refusal %d says why in one line: %s", r, why);
	return r;
}

static int verify(struct cluster_auth *a, const struct cluster_request *rq, const char *h,
		  uint64_t now, struct cluster_claim *c)
{
	char why[768] = "";

	return verify_as(a, &self_b, rq, h, now, c, why, sizeof(why));
}

/* hostA's request for user alice (uid 1000) to `to` at `at`, at ts */
static int sign_for(struct cluster_auth *a, const struct cluster_request *rq, const char *to,
		    const char *at, uint64_t ts, char h[CLUSTER_HEADER_MAX])
{
	struct cluster_claim c = { .uid = 1000, .ts_ms = ts };

	snprintf(c.host, sizeof(c.host), "hostA");
	snprintf(c.to, sizeof(c.to), "%s", to);
	snprintf(c.at, sizeof(c.at), "%s", at);
	snprintf(c.user, sizeof(c.user), "alice");
	return cluster_auth_sign(a, rq, &c, h);
}

static int sign(struct cluster_auth *a, const struct cluster_request *rq, uint64_t ts,
		char h[CLUSTER_HEADER_MAX])
{
	return sign_for(a, rq, "hostB", "10.0.0.2:9700", ts, h);
}

static void authorities(void)
{
	static const struct { const char *url, *want; } good[] = {
		{ "http://10.0.0.2:9700/", "10.0.0.2:9700" },
		{ "https://DB1.Example.com/", "db1.example.com:443" },
		{ "http://h", "h:80" },
		{ "https://[::1]:9443/x?y", "[::1]:9443" },
		{ "http://127.0.0.3:41234", "127.0.0.3:41234" },
	};
	static const char *const bad[] = {
		"ftp://h:1/", "http://", "http:///x", "http://u@h:1/", "http://h:0/",
		"http://h:99999/", "http://h:12a/", "http://[::1/", "http://a b:1/", "http://[]:1/",
		"http://h:/", "http://:80/", "http://[::1]x/", "http://h;x:1/",
	};
	char out[CLUSTER_AUTHORITY_MAX];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		out[0] = '\0';
		CHECK(cluster_auth_authority(good[i].url, out, sizeof(out)) == 0 &&
		      !strcmp(out, good[i].want), "%s: authority %s (got %s)", good[i].url,
		      good[i].want, out);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_INT(cluster_auth_authority(bad[i], out, sizeof(out)), ==, -EINVAL,
			  "%s: no authority", bad[i]);
}

static void replies(struct cluster_auth *a, struct cluster_auth *other)
{
	static const char nonce[] = "0123456789abcdef0123456789abcdef";
	static const char nonce2[] = "fedcba9876543210fedcba9876543210";
	struct cluster_reply r = { 200, "application/json", "", "{\"workers\":[]}\n", 15, 0 };
	struct cluster_reply t;
	char h[CLUSTER_HEADER_MAX], why[512];

	CHECK_INT(cluster_auth_sign_reply(a, &r, "hostB", nonce, h), ==, 0, "a reply signed");
	CHECK_INT(cluster_auth_verify_reply(a, &r, h, "hostB", nonce, why, sizeof(why)), ==, 0,
		  "it holds for its request, from its host");
	CHECK_INT(cluster_auth_verify_reply(a, &r, h, "hostB", nonce, why, sizeof(why)), ==, 0,
		  "(a reply is checked, not remembered: the request's nonce is)");
	CHECK_INT(cluster_auth_verify_reply(a, &r, NULL, "hostB", nonce, why, sizeof(why)), ==,
		  -EBADMSG, "no signature: refused: %s", why);
	CHECK(strstr(why, "not signed") && !strchr(why, '\n'), "saying so in one line");
	CHECK_INT(cluster_auth_verify_reply(a, &r, h, "hostB", nonce2, why, sizeof(why)), ==,
		  -EBADMSG, "for another request: refused");
	CHECK_INT(cluster_auth_verify_reply(a, &r, h, "hostC", nonce, why, sizeof(why)), ==,
		  -EBADMSG, "from another host than the one asked: refused");
	CHECK_INT(cluster_auth_verify_reply(other, &r, h, "hostB", nonce, why, sizeof(why)), ==,
		  -EBADMSG, "checked with another key: refused");
	t = r;
	t.status = 404;
	CHECK_INT(cluster_auth_verify_reply(a, &t, h, "hostB", nonce, why, sizeof(why)), ==,
		  -EBADMSG, "another status: refused");
	t = r;
	t.content_type = "text/html";
	CHECK_INT(cluster_auth_verify_reply(a, &t, h, "hostB", nonce, why, sizeof(why)), ==,
		  -EBADMSG, "another type: refused");
	t = r;
	t.disposition = "inline; filename=\"x.html\"";
	CHECK_INT(cluster_auth_verify_reply(a, &t, h, "hostB", nonce, why, sizeof(why)), ==,
		  -EBADMSG, "another file name: refused");
	t = r;
	t.body = "{\"workers\":[1]}\n";
	t.body_len = 16;
	CHECK_INT(cluster_auth_verify_reply(a, &t, h, "hostB", nonce, why, sizeof(why)), ==,
		  -EBADMSG, "another body: refused: %s", why);
	t = r;
	t.body = NULL;
	CHECK_INT(cluster_auth_verify_reply(a, &t, h, "hostB", nonce, why, sizeof(why)), ==, 1,
		  "a body signed whole, its headers seen first: 1, the body to check once read");

	/* a file sent as it is read: its size */
	r = (struct cluster_reply){ 200, "text/html", "attachment; filename=\"cpu-1.html\"", NULL, 0,
				    123 };
	CHECK_INT(cluster_auth_sign_reply(a, &r, "hostB", nonce, h), ==, 0, "a stream signed");
	CHECK(strstr(h, "body=stream:123;") != NULL, "by its size: %s", h);
	CHECK_INT(cluster_auth_verify_reply(a, &r, h, "hostB", nonce, why, sizeof(why)), ==, 0,
		  "it holds at its headers");
	t = r;
	t.size = 124;
	CHECK_INT(cluster_auth_verify_reply(a, &t, h, "hostB", nonce, why, sizeof(why)), ==,
		  -EBADMSG, "another size: refused");
	t = r;
	t.body = "x";
	t.body_len = 1;
	CHECK_INT(cluster_auth_verify_reply(a, &t, h, "hostB", nonce, why, sizeof(why)), ==,
		  -EBADMSG, "read whole, another length: refused");
	CHECK_INT(cluster_auth_sign_reply(a, &r, "host;B", nonce, h), ==, -EINVAL,
		  "a host name with ';' is not signed");
}

static void records(struct cluster_auth *a, struct cluster_auth *other)
{
	static const char key[] = "/nprof/v1/hosts/b";
	static const char rec[] = "{\"name\":\"b\",\"url\":\"http://10.0.0.2:9700/\"}";
	char *v = NULL, *w, why[512];
	json_t *j;

	CHECK_INT(cluster_auth_sign_record(a, key, rec, &v), ==, 0, "a registration signed");
	if (!v)
		return;
	j = json_loads(v, JSON_REJECT_DUPLICATES, NULL);
	CHECK(json_is_object(j) && json_string_value(json_object_get(j, "sig")) &&
	      strlen(json_string_value(json_object_get(j, "sig"))) == 64 &&
	      !strcmp(json_string_value(json_object_get(j, "url")), "http://10.0.0.2:9700/"),
	      "it is the record with a last member sig: %s", v);
	json_decref(j);
	CHECK_INT(cluster_auth_check_record(a, key, v, strlen(v), why, sizeof(why)), ==, 0,
		  "it holds at its key");
	CHECK_INT(cluster_auth_check_record(a, "/nprof/v1/hosts/c", v, strlen(v), why,
					    sizeof(why)), ==, -EBADMSG,
		  "moved to another key: refused: %s", why);
	CHECK_INT(cluster_auth_check_record(other, key, v, strlen(v), why, sizeof(why)), ==,
		  -EBADMSG, "checked with another key: refused");
	CHECK_INT(cluster_auth_check_record(a, key, rec, strlen(rec), why, sizeof(why)), ==,
		  -EBADMSG, "unsigned: refused: %s", why);
	CHECK(strstr(why, "not signed") != NULL, "saying it is not signed");
	w = strdup(v);
	*strstr(w, "9700") = '8';
	CHECK_INT(cluster_auth_check_record(a, key, w, strlen(w), why, sizeof(why)), ==, -EBADMSG,
		  "its URL changed: refused");
	strcpy(w, v);
	w[strlen(w) - 3] = w[strlen(w) - 3] == '0' ? '1' : '0';
	CHECK_INT(cluster_auth_check_record(a, key, w, strlen(w), why, sizeof(why)), ==, -EBADMSG,
		  "its signature changed: refused");
	CHECK_INT(cluster_auth_check_record(a, key, v, strlen(v) - 1, why, sizeof(why)), ==,
		  -EBADMSG, "cut short: refused");
	free(w);
	free(v);
	CHECK_INT(cluster_auth_sign_record(a, key, "{}", &v), ==, -EINVAL, "{} is not signed");
	CHECK_INT(cluster_auth_sign_record(a, key, "[1]", &v), ==, -EINVAL, "nor an array");
}

int main(void)
{
	struct cluster_auth *a = cluster_auth_new_key(key1, 32, WINDOW);
	struct cluster_auth *b = cluster_auth_new_key(key1, 32, WINDOW);
	struct cluster_auth *other = cluster_auth_new_key(key2, 32, WINDOW);
	struct cluster_request rq = { "GET", "/api/v1/workers", "1:q=5:split;", "", 0 };
	struct cluster_request t;
	struct cluster_claim c;
	char h[CLUSTER_HEADER_MAX], h2[CLUSTER_HEADER_MAX + 8], tampered[CLUSTER_HEADER_MAX];
	char why[768];

	CHECK(a && b && other, "keys of 32 bytes are taken");
	CHECK(!cluster_auth_new_key(key1, 31, WINDOW) && errno == EINVAL, "31 bytes are not a key");

	CHECK_INT(sign(a, &rq, NOW, h), ==, 0, "signs");
	CHECK(strstr(h, "v=2;host=hostA;to=hostB;at=10.0.0.2:9700;user=alice;") == h,
	      "the header names the signer, the host and address it is for, the user: %s", h);
	CHECK_INT(verify(b, &rq, h, NOW + 5, &c), ==, 0, "valid: accepted by the host it is for");
	CHECK_STR(c.user, "alice", "the claim names the user");
	CHECK_STR(c.host, "hostA", "and the host");
	CHECK_INT(c.uid, ==, 1000, "and the uid");
	CHECK_INT(verify(b, &rq, h, NOW + 6, &c), ==, 401, "replayed: refused");

	sign(a, &rq, NOW, h);
	CHECK_INT(verify(b, &rq, h, NOW + WINDOW + 1, &c), ==, 401, "expired: refused");
	sign(a, &rq, NOW + WINDOW + 1, h);
	CHECK_INT(verify(b, &rq, h, NOW, &c), ==, 401, "from beyond the window ahead: refused");
	sign(a, &rq, NOW - WINDOW, h);
	CHECK_INT(verify(b, &rq, h, NOW, &c), ==, 0, "at the edge of the window: accepted");

	sign(other, &rq, NOW, h);
	CHECK_INT(verify(b, &rq, h, NOW, &c), ==, 401, "wrong key: refused");
	CHECK_INT(cluster_auth_verify(NULL, &rq, h, &self_b, NOW, &c, tampered, sizeof(tampered)),
		  ==, 401, "a daemon without a key refuses every signed request");

	/* what the signature names of the destination */
	sign_for(a, &rq, "hostC", "10.0.0.2:9700", NOW, h);
	CHECK_INT(verify_as(b, &self_b, &rq, h, NOW, &c, why, sizeof(why)), ==, 401,
		  "signed for another host: refused");
	CHECK(strstr(why, "for host hostC") != NULL, "naming the host it was for");
	sign_for(a, &rq, "hostB", "10.0.0.9:9700", NOW, h);
	CHECK_INT(verify_as(b, &self_b, &rq, h, NOW, &c, why, sizeof(why)), ==, 401,
		  "signed for this host at another address (where it was sent instead): refused");
	CHECK(strstr(why, "10.0.0.9:9700") != NULL, "naming that address");
	sign_for(a, &rq, "hostB", "b.example:9443", NOW, h);
	CHECK_INT(verify(b, &rq, h, NOW, &c), ==, 0,
		  "signed for this host at its other address ([cluster] url): accepted");
	{
		static const char *const a_at[] = { "10.0.0.1:9700" };
		const struct cluster_self self_a = { "hostA", a_at, 1, NOW - 60000 };

		sign_for(a, &rq, "hostA", "10.0.0.1:9700", NOW, h);
		CHECK_INT(verify_as(b, &self_a, &rq, h, NOW, &c, why, sizeof(why)), ==, 401,
			  "signed by the checking host itself: refused");
		CHECK(strstr(why, "signed by this host") != NULL, "saying so: %s", why);
	}
	sign(a, &rq, self_b.started_ms - 1, h);
	CHECK_INT(verify_as(b, &self_b, &rq, h, self_b.started_ms + 10, &c, why, sizeof(why)), ==,
		  401, "signed before the checking daemon started (within the window): refused");
	CHECK(strstr(why, "before this daemon started") != NULL, "saying so: %s", why);
	sign(a, &rq, self_b.started_ms, h);
	CHECK_INT(verify(b, &rq, h, self_b.started_ms + 10, &c), ==, 0,
		  "signed as it started: accepted");

	sign(a, &rq, NOW, h);
	t = rq;
	t.path = "/api/v1/workers/1-2";
	CHECK_INT(verify(b, &t, h, NOW, &c), ==, 401, "tampered path: refused");
	t = rq;
	t.method = "POST";
	CHECK_INT(verify(b, &t, h, NOW, &c), ==, 401, "tampered method: refused");
	t = rq;
	t.args = "1:q=4:spli;";
	CHECK_INT(verify(b, &t, h, NOW, &c), ==, 401, "tampered query: refused");
	t = rq;
	t.body = "{}";
	t.body_len = 2;
	CHECK_INT(verify(b, &t, h, NOW, &c), ==, 401, "tampered body: refused");

	snprintf(tampered, sizeof(tampered), "%s", h);
	memcpy(strstr(tampered, "user=") + 5, "bobby", 5);
	CHECK_INT(verify(b, &rq, tampered, NOW, &c), ==, 401, "another user in the header: refused");
	snprintf(tampered, sizeof(tampered), "%s", h);
	memcpy(strstr(tampered, "host=") + 5, "hostC", 5);
	CHECK_INT(verify(b, &rq, tampered, NOW, &c), ==, 401, "another host in the header: refused");
	snprintf(tampered, sizeof(tampered), "%s", h);
	memcpy(strstr(tampered, "at=") + 3, "b.example:9443", 14);
	memmove(strstr(tampered, "at=") + 17, strstr(h, ";user="), strlen(strstr(h, ";user=")) + 1);
	CHECK_INT(verify(b, &rq, tampered, NOW, &c), ==, 401,
		  "another of its addresses in the header: refused (%s)", tampered);
	CHECK_INT(verify(b, &rq, h, NOW, &c), ==, 0, "the untampered one still passes, once");

	CHECK_INT(cluster_auth_parse("", &c), ==, -EINVAL, "empty header: malformed");
	CHECK_INT(cluster_auth_parse("v=2;host=a;to=b;at=h:1;user=b;uid=1;ts=1;nonce=00;sig=00",
				     &c), ==, -EINVAL, "short nonce and sig: malformed");
	sign(a, &rq, NOW, h);
	snprintf(h2, sizeof(h2), "%s;x=1", h);
	CHECK_INT(cluster_auth_parse(h2, &c), ==, -EINVAL, "a field after sig: malformed");
	CHECK_INT(cluster_auth_parse("v=1;host=a;user=b;uid=1;ts=1;nonce="
				     "0123456789abcdef0123456789abcdef;sig="
				     "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
				     &c), ==, -EINVAL, "the first version's header (no destination): refused");
	CHECK_INT(sign_for(a, &rq, "host;B", "10.0.0.2:9700", NOW, h), ==, -EINVAL,
		  "a host name with ';' is not signed");
	CHECK_INT(sign_for(a, &rq, "hostB", "10.0.0.2:97;00", NOW, h), ==, -EINVAL,
		  "nor an address with ';'");

	/* every slot of one nonce's probe filled by live nonces: refused */
	{
		struct cluster_auth *small = cluster_auth_new_key(key1, 32, WINDOW);
		int accepted = 0, refused = 0;

		for (int i = 0; i < CLUSTER_NONCES * 2 && !refused; i++) {
			int r;

			sign(a, &rq, NOW, h);
			r = verify(small, &rq, h, NOW, &c);
			accepted += r == 0;
			refused += r == 503;
		}
		CHECK(refused == 1 && accepted > CLUSTER_NONCES / 2,
		      "a full table refuses (503) rather than forget (%d accepted first)", accepted);
		sign(a, &rq, NOW + WINDOW + 1, h);
		CHECK_INT(verify(small, &rq, h, NOW + WINDOW + 1, &c), ==, 0,
			  "once the window has passed, the slots are free again");
		cluster_auth_free(small);
	}

	authorities();
	replies(a, other);
	records(a, other);

	/* the key file */
	{
		char path[] = "/tmp/cluster_auth_test.XXXXXX", err[512];
		int fd = mkstemp(path);
		struct cluster_auth *k;

		CHECK(fd >= 0 && write(fd, key1, 32) == 32 && write(fd, "\n", 1) == 1,
		      "a key file written");
		fchmod(fd, 0600);
		k = cluster_auth_new(path, getuid(), WINDOW, err, sizeof(err));
		CHECK(k != NULL, "mode 0600, ours: taken (%s)", k ? "" : err);
		if (k) {
			sign(k, &rq, NOW, h);
			CHECK_INT(verify(b, &rq, h, NOW, &c), ==, 0,
				  "the file's key (without its newline) is the same key");
		}
		cluster_auth_free(k);
		fchmod(fd, 0640);
		k = cluster_auth_new(path, getuid(), WINDOW, err, sizeof(err));
		CHECK(!k && strstr(err, "chmod 600") && !strchr(err, '\n'),
		      "mode 0640: refused, saying chmod 600: %s", err);
		fchmod(fd, 0600);
		k = cluster_auth_new(path, getuid() + 1, WINDOW, err, sizeof(err));
		CHECK(!k && strstr(err, "chown"), "another owner: refused, saying chown: %s", err);
		ftruncate(fd, 8);
		k = cluster_auth_new(path, getuid(), WINDOW, err, sizeof(err));
		CHECK(!k && strstr(err, "8 bytes"), "8 bytes: refused: %s", err);
		close(fd);
		unlink(path);
		k = cluster_auth_new(path, getuid(), WINDOW, err, sizeof(err));
		CHECK(!k && strstr(err, "head -c 32"), "missing: refused, saying how to make one");
	}
	cluster_auth_free(a);
	cluster_auth_free(b);
	cluster_auth_free(other);
	return test_done();
}
