/* reply_cache: a text comes back under its key at its version only,
 * newer versions replace older ones and not the reverse, and the bytes
 * kept stay under the bound, the least recently used going first. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/reply_cache.h"
#include "test.h"

static char *get(struct reply_cache *c, const char *key, uint64_t version)
{
	size_t len = 0;
	char *t = reply_cache_get(c, key, version, &len);

	if (t && strlen(t) != len)
		CHECK(false, "%s: the length given is the text's", key);
	return t;
}

static int kept(struct reply_cache *c, const char *key, uint64_t version)
{
	char *t = get(c, key, version);

	free(t);
	return t != NULL;
}

int main(void)
{
	struct reply_cache *c = reply_cache_new(8000);
	char big[2000], key[32], *t;

	CHECK(c != NULL, "a cache of 8000 bytes");
	CHECK(!kept(c, "0:1:/api/v1/workers?", 1), "nothing at first");
	reply_cache_put(c, "0:1:/api/v1/workers?", 1, "{\"workers\":[]}\n", 15);
	t = get(c, "0:1:/api/v1/workers?", 1);
	CHECK_STR(t ? t : "(none)", "{\"workers\":[]}\n", "the text back, at its version");
	free(t);
	CHECK(!kept(c, "0:1:/api/v1/workers?", 2), "not at another version");
	CHECK(!kept(c, "1000:0:/api/v1/workers?", 1), "not under another user's key");
	reply_cache_put(c, "0:1:/api/v1/workers?", 3, "three", 5);
	CHECK(kept(c, "0:1:/api/v1/workers?", 3) && !kept(c, "0:1:/api/v1/workers?", 1),
	      "a newer version replaces it");
	reply_cache_put(c, "0:1:/api/v1/workers?", 2, "two", 3);
	CHECK(kept(c, "0:1:/api/v1/workers?", 3) && !kept(c, "0:1:/api/v1/workers?", 2),
	      "an older one, put late, does not");

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	reply_cache_put(c, "too-big", 1, big, sizeof(big) - 1);
	CHECK(!kept(c, "too-big", 1), "a text above an eighth of the bound is not kept");
	for (int i = 0; i < 20; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		reply_cache_put(c, key, 1, big, 900);
		/* k0 is read after each put: the most recently used */
		CHECK(i == 0 || kept(c, "k0", 1), "k0, used, stays as k%d goes in", i);
	}
	CHECK(kept(c, "k19", 1) && kept(c, "k0", 1), "the newest and the used one are kept");
	CHECK(!kept(c, "k1", 1) && !kept(c, "k2", 1), "the least recently used went");
	{
		int n = 0;

		for (int i = 0; i < 20; i++) {
			snprintf(key, sizeof(key), "k%d", i);
			n += kept(c, key, 1);
		}
		CHECK(n * 900 <= 8000 && n >= 7, "%d texts of 900 bytes kept in 8000", n);
	}
	for (int i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "many%d", i);
		reply_cache_put(c, key, 1, "x", 1);
	}
	CHECK(kept(c, "many199", 1) && !kept(c, "many0", 1),
	      "more keys than entries: the oldest make room");
	reply_cache_free(c);

	c = reply_cache_new(0);
	reply_cache_put(c, "k", 1, "x", 1);
	CHECK(!kept(c, "k", 1), "a bound of 0 keeps nothing");
	reply_cache_free(c);
	return test_done();
}
