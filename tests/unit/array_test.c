/* array_reserve: growth, unchanged on a refusal, overflow refused. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/array.h"
#include "test.h"

int main(void)
{
	uint64_t *v = NULL;
	size_t cap = 0, n;
	int ok = 1;

	CHECK(array_reserve(&v, &cap, 0, sizeof(*v)) == 0 && !v && cap == 0, "need 0: nothing");
	CHECK(array_reserve(&v, &cap, 1, sizeof(*v)) == 0 && v && cap == 16, "first: 16");
	for (n = 0; n < 100000; n++) {
		if (array_reserve(&v, &cap, n + 1, sizeof(*v)) < 0) {
			ok = 0;
			break;
		}
		v[n] = n * 3;
	}
	for (size_t i = 0; ok && i < n; i++)
		ok = v[i] == i * 3;
	CHECK(ok, "100000 elements added one by one, kept through every growth");
	CHECK(cap >= 100000 && cap < 200000 * 2, "capacity doubled, not more (%zu)", cap);
	CHECK(array_reserve(&v, &cap, 5, sizeof(*v)) == 0 && cap >= 100000, "smaller: no change");
	{
		uint64_t *before = v;
		size_t before_cap = cap;

		CHECK_INT(array_reserve(&v, &cap, SIZE_MAX / 4, sizeof(*v)), ==, -ENOMEM,
			  "a size that overflows is refused");
		CHECK(v == before && cap == before_cap, "and leaves the array as it was");
		CHECK_INT(array_reserve(&v, &cap, 10, 0), ==, 0, "need under cap: 0 even for elem 0");
		CHECK_INT(array_reserve(&v, &cap, cap + 1, 0), ==, -ENOMEM, "elem 0 refused");
	}
	free(v);
	return test_done();
}
