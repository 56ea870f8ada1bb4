/* kallsyms_test: /proc/kallsyms text, modules, hidden addresses. */
#include <string.h>

#include "symbolize/kallsyms.h"
#include "test.h"

static const char text[] =
	"ffffffff81000000 T _text\n"
	"ffffffff81000000 T _stext\n"
	"ffffffff81001000 t do_one_initcall\n"
	"ffffffff81002000 D some_data\n"
	"ffffffff81003000 W weak_fn\n"
	"ffffffff81004000 T schedule\n"
	"garbage line\n"
	"ffffffffc0a00000 t ext4_map_blocks\t[ext4]\n"
	"ffffffffc0a01000 t ext4_write\t[ext4]\n"
	"ffffffffc0b00000 t xfs_thing\t[xfs]\n"
	"ffffffff81000800 t out_of_order\n";

int main(void)
{
	int rc;
	struct kallsyms k;
	const struct ksym *s;
	static const char zero[] =
		"0000000000000000 T _text\n0000000000000000 t foo\n";

	rc = kallsyms_init(&k);
	CHECK(rc == 0, "init");
	rc = kallsyms_parse(&k, text, sizeof(text) - 1);
	CHECK(rc == 0, "parse");
	kallsyms_finish(&k);
	CHECK(k.n == 9, "9 text symbols (%zu)", k.n);
	CHECK(k.skipped_lines == 1, "one bad line");
	CHECK(k.text == 0xffffffff81000000, "_text found");
	CHECK(!kallsyms_all_zero(&k), "addresses visible");
	s = kallsyms_find(&k, 0xffffffff81004010);
	CHECK_STR(s ? kallsyms_name(&k, s) : NULL, "schedule", "schedule");
	CHECK_STR(s ? kallsyms_module(&k, s) : NULL, "[kernel]", "core kernel");
	s = kallsyms_find(&k, 0xffffffff81000010);
	CHECK_STR(s ? kallsyms_name(&k, s) : NULL, "_text", "first alias wins");
	s = kallsyms_find(&k, 0xffffffff81000900);
	CHECK_STR(s ? kallsyms_name(&k, s) : NULL, "out_of_order", "sorted");
	s = kallsyms_find(&k, 0xffffffff81002010);
	CHECK_STR(s ? kallsyms_name(&k, s) : NULL, "do_one_initcall", "data symbols skipped");
	s = kallsyms_find(&k, 0xffffffff81003010);
	CHECK_STR(s ? kallsyms_name(&k, s) : NULL, "weak_fn", "weak function");
	s = kallsyms_find(&k, 0xffffffffc0a01100);
	CHECK_STR(s ? kallsyms_name(&k, s) : NULL, "ext4_write", "module symbol");
	CHECK_STR(s ? kallsyms_module(&k, s) : NULL, "[ext4]", "module name");
	s = kallsyms_find(&k, 0xffffffffc0b00004);
	CHECK_STR(s ? kallsyms_module(&k, s) : NULL, "[xfs]", "second module");
	CHECK(kallsyms_find(&k, 0xffffffffc0b00000 + 2 * KALLSYMS_MAX_GAP) == NULL,
	      "too far past the last symbol");
	CHECK(kallsyms_find(&k, 0x1000) == NULL, "below every symbol");
	kallsyms_release(&k);

	rc = kallsyms_init(&k);
	CHECK(rc == 0, "init");
	rc = kallsyms_parse(&k, zero, sizeof(zero) - 1);
	CHECK(rc == 0, "parse zeros");
	kallsyms_finish(&k);
	CHECK(kallsyms_all_zero(&k), "all zero detected");
	CHECK(kallsyms_find(&k, 0x10) == NULL, "no lookups when hidden");
	kallsyms_release(&k);

	rc = kallsyms_init(&k);
	CHECK(rc == 0, "init");
	rc = kallsyms_parse(&k, "", strlen(""));
	CHECK(rc == 0 && !kallsyms_all_zero(&k), "empty");
	rc = kallsyms_parse(&k, "12345678123456789 T too_long\n", strlen("12345678123456789 T too_long\n"));
	CHECK(rc == 0 && k.n == 0,
	      "17-digit address rejected");
	rc = kallsyms_parse(&k, "1000 T a [bad\n", strlen("1000 T a [bad\n"));
	CHECK(rc == 0 && k.n == 1,
	      "bad module tag ignored");
	kallsyms_release(&k);
	kallsyms_release(NULL);
	return test_done();
}
