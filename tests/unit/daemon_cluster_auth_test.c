/* cluster_auth: a request signed by one daemon passes another's check
 * once; expired, from the future, replayed, signed with another key, or
 * with its method, path, query, body, user or host changed, it is
 * refused, as is a malformed header and one no slot can remember; the
 * key file must be private. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/cluster_auth.h"
#include "test.h"

#define WINDOW 30000
#define NOW 1764122400000ull

static const char key1[] = "0123456789abcdef0123456789abcdef";
static const char key2[] = "0123456789abcdef0123456789abcdeX";

static int verify(struct cluster_auth *a, const struct cluster_request *rq, const char *h,
		  uint64_t now, struct cluster_claim *c)
{
	char why[512] = "";
	int r = cluster_auth_verify(a, rq, h, now, c, why, sizeof(why));

	if (r)
		CHECK(why[0] && !strchr(why, '\n'), "refusal %d says why in one line: %s", r, why);
	return r;
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

	CHECK(a && b && other, "keys of 32 bytes are taken");
	CHECK(!cluster_auth_new_key(key1, 31, WINDOW) && errno == EINVAL, "31 bytes are not a key");

	CHECK_INT(cluster_auth_sign(a, &rq, "hostA", "alice", 1000, NOW, h), ==, 0, "signs");
	CHECK_INT(verify(b, &rq, h, NOW + 5, &c), ==, 0, "valid: accepted by another daemon");
	CHECK_STR(c.user, "alice", "the claim names the user");
	CHECK_STR(c.host, "hostA", "and the host");
	CHECK_INT(c.uid, ==, 1000, "and the uid");
	CHECK_INT(verify(b, &rq, h, NOW + 6, &c), ==, 401, "replayed: refused");

	cluster_auth_sign(a, &rq, "hostA", "alice", 1000, NOW, h);
	CHECK_INT(verify(b, &rq, h, NOW + WINDOW + 1, &c), ==, 401, "expired: refused");
	cluster_auth_sign(a, &rq, "hostA", "alice", 1000, NOW + WINDOW + 1, h);
	CHECK_INT(verify(b, &rq, h, NOW, &c), ==, 401, "from beyond the window ahead: refused");
	cluster_auth_sign(a, &rq, "hostA", "alice", 1000, NOW - WINDOW, h);
	CHECK_INT(verify(b, &rq, h, NOW, &c), ==, 0, "at the edge of the window: accepted");

	cluster_auth_sign(other, &rq, "hostA", "alice", 1000, NOW, h);
	CHECK_INT(verify(b, &rq, h, NOW, &c), ==, 401, "wrong key: refused");
	CHECK_INT(cluster_auth_verify(NULL, &rq, h, NOW, &c, tampered, sizeof(tampered)), ==, 401,
		  "a daemon without a key refuses every signed request");

	cluster_auth_sign(a, &rq, "hostA", "alice", 1000, NOW, h);
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
	memcpy(strstr(tampered, "host=") + 5, "hostB", 5);
	CHECK_INT(verify(b, &rq, tampered, NOW, &c), ==, 401, "another host in the header: refused");
	CHECK_INT(verify(b, &rq, h, NOW, &c), ==, 0, "the untampered one still passes, once");

	CHECK_INT(cluster_auth_parse("", &c), ==, -EINVAL, "empty header: malformed");
	CHECK_INT(cluster_auth_parse("v=1;host=a;user=b;uid=1;ts=1;nonce=00;sig=00", &c), ==,
		  -EINVAL, "short nonce and sig: malformed");
	cluster_auth_sign(a, &rq, "hostA", "alice", 1000, NOW, h);
	snprintf(h2, sizeof(h2), "%s;x=1", h);
	CHECK_INT(cluster_auth_parse(h2, &c), ==, -EINVAL, "a field after sig: malformed");
	CHECK_INT(cluster_auth_sign(a, &rq, "host;A", "alice", 0, NOW, h), ==, -EINVAL,
		  "a host name with ';' is not signed");

	/* every slot of one nonce's probe filled by live nonces: refused */
	{
		struct cluster_auth *small = cluster_auth_new_key(key1, 32, WINDOW);
		int accepted = 0, refused = 0;

		for (int i = 0; i < CLUSTER_NONCES * 2 && !refused; i++) {
			int r;

			cluster_auth_sign(a, &rq, "hostA", "alice", 1000, NOW, h);
			r = verify(small, &rq, h, NOW, &c);
			accepted += r == 0;
			refused += r == 503;
		}
		CHECK(refused == 1 && accepted > CLUSTER_NONCES / 2,
		      "a full table refuses (503) rather than forget (%d accepted first)", accepted);
		cluster_auth_sign(a, &rq, "hostA", "alice", 1000, NOW + WINDOW + 1, h);
		CHECK_INT(verify(small, &rq, h, NOW + WINDOW + 1, &c), ==, 0,
			  "once the window has passed, the slots are free again");
		cluster_auth_free(small);
	}

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
			cluster_auth_sign(k, &rq, "hostA", "alice", 1000, NOW, h);
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
