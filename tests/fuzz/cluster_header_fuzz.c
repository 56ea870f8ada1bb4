/* cluster_header_fuzz: what any HTTP client, a host registered in etcd
 * or a writer to etcd can send nprofd of the cluster's signed texts: the
 * X-Nprof-Cluster header of a request (cluster_auth_parse and
 * cluster_auth_verify), the X-Nprof-Cluster-Reply header of a reply
 * (cluster_auth_verify_reply), a registration's value in etcd
 * (cluster_auth_check_record) and a registered URL's authority
 * (cluster_auth_authority). The input is each of them in turn.
 *
 * A parsed claim holds only what the parser promises (plain names, hex
 * nonce and signature); an authority is "host:port" of the characters
 * allowed; no input passes a check without the key. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cluster/cluster_auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct cluster_auth *auth;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const at[] = { "127.0.0.3:9700" };
	static const struct cluster_self self = { "b", at, 1, 1764122300000ull };
	struct cluster_request rq = { "GET", "/api/v1/workers", "", "", 0 };
	struct cluster_claim c = { .ts_ms = 1764122400000ull };
	struct cluster_reply whole = { 200, "application/json", "", "{}\n", 3, 0 };
	struct cluster_reply stream = { 200, "text/html", "attachment; filename=\"x.html\"", NULL, 0,
					4096 };
	char value[CLUSTER_HEADER_MAX + 64], why[768], authority[CLUSTER_AUTHORITY_MAX];
	char *exact;

	if (!auth)
		auth = cluster_auth_new_key("fuzz-key-fuzz-key-fuzz-key-fuzz-key", 35, 30000);
	/* a registration: an exact-size copy, so that ASan sees any read past size */
	exact = malloc(size ? size : 1);
	if (!exact)
		return 0;
	memcpy(exact, data, size);
	if (cluster_auth_check_record(auth, "/nprof/v1/hosts/b", exact, size, why, sizeof(why)) == 0)
		abort(); /* a registration signed without the key */
	free(exact);
	if (size >= sizeof(value))
		return 0;
	memcpy(value, data, size);
	value[size] = '\0';
	if (cluster_auth_parse(value, &c) == 0) {
		if (strlen(c.nonce) != 32 || strlen(c.sig) != 64 || !c.host[0] || !c.user[0] ||
		    !c.to[0] || !c.at[0] || strpbrk(c.host, ";=") || strpbrk(c.user, ";=") ||
		    strpbrk(c.to, ";=") || strpbrk(c.at, ";=@"))
			abort();
	}
	if (cluster_auth_verify(auth, &rq, value, &self, c.ts_ms, &c, why, sizeof(why)) == 0)
		abort(); /* a signature found without the key */
	if (cluster_auth_verify_reply(auth, &whole, value, "b", "0123456789abcdef0123456789abcdef",
				      why, sizeof(why)) >= 0 ||
	    cluster_auth_verify_reply(auth, &stream, value, "b",
				      "0123456789abcdef0123456789abcdef", why, sizeof(why)) >= 0)
		abort(); /* a reply's signature found without the key */
	if (cluster_auth_authority(value, authority, sizeof(authority)) == 0 &&
	    (!strchr(authority, ':') || strpbrk(authority, ";=@/ \t\r\n")))
		abort();
	return 0;
}
