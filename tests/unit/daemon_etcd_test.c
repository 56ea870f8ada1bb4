/* etcd: the readers of etcd 3.4's gateway replies (as captured from a
 * real etcd), what they refuse, and base64 both ways; an endpoint list
 * that is not http(s) URLs is refused, and a call to an endpoint where
 * nothing listens fails with one line naming it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cluster/etcd.h"
#include "test.h"

#define S(x) x, strlen(x)

int main(void)
{
	int64_t id = 0, ttl = 0;
	struct etcd_kv *kvs = NULL;
	size_t n = 0, len;
	unsigned char out[64];
	char enc[64], err[1024];
	struct etcd *e;

	CHECK_INT(etcd_parse_grant(S("{\"header\":{\"revision\":\"1\"},\"ID\":\"4111120248550904837\","
				     "\"TTL\":\"3\"}"), &id, &ttl), ==, 0, "grant: read");
	CHECK(id == 4111120248550904837ll && ttl == 3, "grant: the id and TTL as strings");
	CHECK_INT(etcd_parse_grant(S("{\"ID\":7,\"TTL\":5}"), &id, &ttl), ==, 0, "grant: as numbers");
	CHECK_INT(etcd_parse_grant(S("{\"error\":\"x\",\"code\":5}"), &id, &ttl), ==, -EPROTO,
		  "grant: an error reply is refused");
	CHECK_INT(etcd_parse_grant(S("{\"ID\":\"12x\",\"TTL\":\"3\"}"), &id, &ttl), ==, -EPROTO,
		  "grant: a number with junk is refused");
	CHECK_INT(etcd_parse_grant(S("[1]"), &id, &ttl), ==, -EPROTO, "grant: not an object");

	CHECK_INT(etcd_parse_keepalive(S("{\"result\":{\"ID\":\"1\",\"TTL\":\"3\"}}\n{\"result\":{}}\n"),
				       &ttl), ==, 0, "keepalive: the stream's first line");
	CHECK_INT(ttl, ==, 3, "keepalive: its TTL");
	CHECK_INT(etcd_parse_keepalive(S("{\"result\":{\"header\":{},\"ID\":\"123\"}}\n"), &ttl), ==,
		  -ENOENT, "keepalive: a lease etcd no longer has (no TTL) is -ENOENT");
	CHECK_INT(etcd_parse_keepalive(S("{\"error\":{\"grpc_code\":5}}"), &ttl), ==, -EPROTO,
		  "keepalive: an error is -EPROTO");

	CHECK_INT(etcd_parse_range(S("{\"header\":{},\"kvs\":[{\"key\":\"L25wcm9mL3YxL2hvc3RzL2E=\","
				     "\"value\":\"eyJ4IjoxfQ==\",\"lease\":\"1\"}],\"count\":\"1\"}"),
				   10, &kvs, &n), ==, 0, "range: read");
	CHECK(n == 1 && !strcmp(kvs[0].key, "/nprof/v1/hosts/a") && !strcmp(kvs[0].value, "{\"x\":1}") &&
	      kvs[0].value_len == 7, "range: the key and value decoded");
	etcd_kvs_free(kvs, n);
	CHECK_INT(etcd_parse_range(S("{\"header\":{}}"), 10, &kvs, &n), ==, 0, "range: none");
	CHECK_INT(n, ==, 0, "range: none is zero pairs");
	etcd_kvs_free(kvs, n);
	CHECK_INT(etcd_parse_range(S("{\"kvs\":[{\"key\":\"YQ==\"},{\"key\":\"Yg==\"}]}"), 1, &kvs, &n),
		  ==, -EPROTO, "range: more pairs than asked for is refused");
	CHECK_INT(etcd_parse_range(S("{\"kvs\":[{\"key\":\"YQBi\"}]}"), 10, &kvs, &n), ==, -EPROTO,
		  "range: a key with a NUL inside is refused");
	CHECK_INT(etcd_parse_range(S("{\"kvs\":[{\"key\":\"!!!!\"}]}"), 10, &kvs, &n), ==, -EPROTO,
		  "range: a key that is not base64 is refused");
	CHECK_INT(etcd_parse_range(S("{\"kvs\":{}}"), 10, &kvs, &n), ==, -EPROTO,
		  "range: kvs not a list is refused");

	{
		char token[32];

		CHECK_INT(etcd_parse_token(S("{\"header\":{},\"token\":\"ozUeryTcDjOrOLvK.8\"}"), token,
					   sizeof(token)), ==, 0, "authenticate: its token");
		CHECK_STR(token, "ozUeryTcDjOrOLvK.8", "the token as sent");
		CHECK_INT(etcd_parse_token(S("{\"token\":\"a\\r\\nX-Evil: 1\"}"), token, sizeof(token)),
			  ==, -EPROTO, "a token with a line break (it goes into a header) is refused");
		CHECK_INT(etcd_parse_token(S("{\"error\":\"etcdserver: authentication failed\"}"), token,
					   sizeof(token)), ==, -EPROTO, "no token: refused");
	}
	etcd_base64_encode((const unsigned char *)"nprof", 5, enc);
	CHECK_STR(enc, "bnByb2Y=", "base64 of nprof");
	CHECK_INT(etcd_base64_decode(enc, strlen(enc), out, sizeof(out), &len), ==, 0, "and back");
	CHECK(len == 5 && !memcmp(out, "nprof", 5), "the same bytes");
	CHECK_INT(etcd_base64_decode("bnByb2Y", 7, out, sizeof(out), &len), ==, -EINVAL,
		  "base64 without its padding is refused");
	CHECK_INT(etcd_base64_decode("bn=yb2Y=", 8, out, sizeof(out), &len), ==, -EINVAL,
		  "padding in the middle is refused");
	CHECK_INT(etcd_base64_decode("bnByb2Y=", 8, out, 4, &len), ==, -EINVAL,
		  "more bytes than the room given is refused");

	CHECK(!etcd_new(&(struct etcd_options){ .endpoints = "127.0.0.1:2379" }) && errno == EINVAL,
	      "an endpoint without http:// is refused");
	CHECK(!etcd_new(&(struct etcd_options){ .endpoints = "" }) && errno == EINVAL,
	      "no endpoint is refused");
	/* port 1 on loopback: nothing listens there */
	e = etcd_new(&(struct etcd_options){ .endpoints = "http://127.0.0.1:1/", .timeout_ms = 2000 });
	CHECK(e != NULL, "an http endpoint is taken");
	if (e) {
		CHECK_INT(etcd_lease_grant(e, 3, &id, err, sizeof(err)), ==, -EHOSTUNREACH,
			  "nothing listening: -EHOSTUNREACH");
		CHECK(strstr(err, "http://127.0.0.1:1/v3/lease/grant") && !strchr(err, '\n'),
		      "one line naming the endpoint: %s", err);
	}
	etcd_free(e);
	return test_done();
}
