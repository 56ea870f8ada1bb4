/* cluster_header_fuzz: the X-Nprof-Cluster header any HTTP client can
 * send nprofd, read by cluster_auth_parse and checked by
 * cluster_auth_verify. The input is the header's value.
 *
 * A parsed claim holds only what the parser promises (plain names, hex
 * nonce and signature); no input passes the check without the key. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cluster_auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct cluster_auth *auth;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cluster_request rq = { "GET", "/api/v1/workers", "", "", 0 };
	struct cluster_claim c = { .ts_ms = 1764122400000ull };
	char value[CLUSTER_HEADER_MAX + 64], why[512];

	if (!auth)
		auth = cluster_auth_new_key("fuzz-key-fuzz-key-fuzz-key-fuzz-key", 35, 30000);
	if (size >= sizeof(value))
		return 0;
	memcpy(value, data, size);
	value[size] = '\0';
	if (cluster_auth_parse(value, &c) == 0) {
		if (strlen(c.nonce) != 32 || strlen(c.sig) != 64 || !c.host[0] || !c.user[0] ||
		    strpbrk(c.host, ";=") || strpbrk(c.user, ";="))
			abort();
	}
	if (cluster_auth_verify(auth, &rq, value, c.ts_ms, &c, why, sizeof(why)) == 0)
		abort(); /* a signature found without the key */
	return 0;
}
