/* strtab: offsets that name their strings through growth, bytes that are
 * not NUL-terminated, the maximum (NULs counted, refusals counted, the
 * table unchanged), release and reuse. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/strtab.h"
#include "test.h"

int main(void)
{
	struct strtab t;
	uint32_t off[1000], a, b, c;
	char name[32];
	int ok = 1;

	strtab_init(&t, 1 << 20);
	CHECK(t.len == 0 && t.refused == 0, "empty");
	CHECK(strtab_add(&t, "main", 4, &a) == 0 && a == 0, "first string at 0");
	CHECK(strtab_add(&t, "parse_line and more", 10, &b) == 0 && b == 5,
	      "second after the first and its NUL");
	CHECK_STR(strtab_get(&t, a), "main", "first reads back");
	CHECK_STR(strtab_get(&t, b), "parse_line", "only len bytes, then a NUL");
	CHECK(strtab_add(&t, "", 0, &c) == 0 && c == 16 && !strtab_get(&t, c)[0],
	      "an empty string takes its NUL");
	CHECK(strtab_add(&t, "a\0b", 3, &c) == 0 && !memcmp(strtab_get(&t, c), "a\0b", 4),
	      "bytes kept as given, NUL included");
	for (int i = 0; i < 1000; i++) {
		int n = snprintf(name, sizeof(name), "symbol_%d", i);

		if (strtab_add(&t, name, (size_t)n, &off[i]) < 0) {
			ok = 0;
			break;
		}
	}
	for (int i = 0; ok && i < 1000; i++) {
		snprintf(name, sizeof(name), "symbol_%d", i);
		ok = !strcmp(strtab_get(&t, off[i]), name);
	}
	CHECK(ok, "1000 strings added, each found at its offset after every growth");
	CHECK_STR(strtab_get(&t, a), "main", "the first still there");
	strtab_release(&t);
	CHECK(t.len == 0 && !t.buf && t.max == 1 << 20, "release empties, keeps the max");
	CHECK(strtab_add(&t, "again", 5, &a) == 0 && a == 0 &&
	      !strcmp(strtab_get(&t, a), "again"), "usable after release");
	strtab_release(&t);

	strtab_init(&t, 10);
	CHECK(strtab_add(&t, "abcd", 4, &a) == 0, "5 of 10 bytes");
	CHECK(strtab_add(&t, "efgh", 4, &b) == 0 && t.len == 10, "10 of 10: the max is reachable");
	c = 77;
	CHECK_INT(strtab_add(&t, "", 0, &c), ==, -ENOBUFS, "even an empty string past the max");
	CHECK(c == 77 && t.len == 10 && t.refused == 1,
	      "refused: no offset written, table unchanged, counted");
	CHECK_STR(strtab_get(&t, b), "efgh", "what was there stays");
	strtab_release(&t);

	strtab_init(&t, 8);
	CHECK_INT(strtab_add(&t, "12345678", 8, &a), ==, -ENOBUFS, "len + NUL over the max");
	CHECK(strtab_add(&t, "1234567", 7, &a) == 0 && a == 0, "len + NUL exactly the max");
	CHECK_INT(strtab_add(&t, "x", SIZE_MAX, &a), ==, -ENOBUFS,
	      "a length that would overflow the sum is refused, not wrapped");
	CHECK(t.refused == 2, "two refusals counted");
	strtab_release(&t);

	strtab_init(&t, 64);
	CHECK(strtab_reserve(&t, 64) == 0 && t.cap >= 64 && t.len == 0,
	      "room reserved up to the max, nothing added");
	a = 0;
	CHECK(strtab_add(&t, "abc", 3, &a) == 0 && a == 0 && t.cap >= 64, "then added into it");
	CHECK_INT(strtab_reserve(&t, 61), ==, -ENOBUFS, "no room reserved past the max");
	CHECK_INT(strtab_reserve(&t, SIZE_MAX), ==, -ENOBUFS, "nor a size that would wrap");
	strtab_release(&t);

	strtab_init(&t, SIZE_MAX);
	CHECK(t.max == STRTAB_MAX, "the max is clamped to what 32-bit offsets reach");
	strtab_release(&t);
	strtab_release(NULL);
	return test_done();
}
