/* etcd_reply_fuzz: what etcd (or whoever answers at its address) sends
 * nprofd: the replies to lease/grant, lease/keepalive and kv/range,
 * and auth/authenticate, read by etcd_parse_*. The input is one reply
 * body.
 *
 * Each reader refuses or returns what it promises: a positive lease id
 * and TTL; at most max pairs, each key text of at most 1 KiB with no NUL
 * inside, each value NUL-terminated at its length. Base64 decoding
 * round-trips. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cluster/etcd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* an exact-size copy, so that ASan sees any read past size */
	char *text = malloc(size ? size : 1);
	struct etcd_kv *kvs = NULL;
	int64_t id = 0, ttl = 0;
	size_t n = 0;
	int r;

	if (!text)
		return 0;
	memcpy(text, data, size);
	if (etcd_parse_grant(text, size, &id, &ttl) == 0 && (id == 0 || ttl <= 0))
		abort();
	r = etcd_parse_keepalive(text, size, &ttl);
	if (r == 0 && ttl <= 0)
		abort();
	if (r < 0 && r != -EPROTO && r != -ENOENT)
		abort();
	{
		char token[64];

		if (etcd_parse_token(text, size, token, sizeof(token)) == 0 &&
		    (!token[0] || strlen(token) >= sizeof(token) || strpbrk(token, " \r\n")))
			abort(); /* a token that would break its header */
	}
	if (etcd_parse_range(text, size, 8, &kvs, &n) == 0) {
		if (n > 8)
			abort();
		for (size_t i = 0; i < n; i++)
			if (strlen(kvs[i].key) > 1024 || kvs[i].value[kvs[i].value_len] != '\0')
				abort();
		etcd_kvs_free(kvs, n);
	}
	/* base64 both ways on the raw bytes */
	if (size <= 4096) {
		char *enc = malloc(4 * ((size + 2) / 3) + 1);
		unsigned char *dec = malloc(size + 1);
		size_t dlen;

		if (enc && dec) {
			etcd_base64_encode(data, size, enc);
			if (etcd_base64_decode(enc, strlen(enc), dec, size, &dlen) < 0 ||
			    dlen != size || memcmp(dec, data, size))
				abort();
			(void)etcd_base64_decode(text, size, dec, size, &dlen);
		}
		free(enc);
		free(dec);
	}
	free(text);
	return 0;
}
