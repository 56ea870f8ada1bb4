/* maps_test: /proc/PID/maps parsing and the replace-on-overlap table. */
#include <errno.h>
#include <sys/mman.h>

#include <string.h>

#include "symbolize/maps.h"
#include "test.h"

static const char text[] =
	"55d0c8a00000-55d0c8a02000 r--p 00000000 fd:01 1234    /usr/bin/my prog\n"
	"55d0c8a02000-55d0c8a05000 r-xp 00002000 fd:01 1234    /usr/bin/my prog\n"
	"55d0c9000000-55d0c9021000 rw-p 00000000 00:00 0          [heap]\n"
	"7f0000000000-7f0000001000 r-xp 00000000 00:01 77  /memfd:jit (deleted)\n"
	"7f0000001000-7f0000002000 r-xp 00001000 fd:01 99  /opt/lib/libgone.so (deleted)\n"
	"7f0000002000-7f0000003000 rw-p 00000000 00:00 0 \n"
	"7f0000003000-7f0000004000 rw-p 00000000 00:00 0 [anon:arena]\n"
	"this is not a maps line\n"
	"7f0000005000-7f0000004000 r-xp 00000000 00:00 0 [backwards]\n"
	"7ffd1000000-7ffd1002000 r-xp 00000000 00:00 0                  [vdso]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]"; /* no final newline */

int main(void)
{
	int rc;
	struct maps m;
	const struct map_entry *e;
	struct map_entry ne = { 0 };

	maps_init(&m);
	rc = maps_parse(&m, text, sizeof(text) - 1, 7);
	CHECK(rc == 0, "parse");
	CHECK(m.n == 9, "9 mappings (%zu)", m.n);
	CHECK(m.skipped_lines == 2, "2 bad lines skipped (%llu)",
	      (unsigned long long)m.skipped_lines);
	e = maps_find(&m, 0x55d0c8a03000);
	CHECK(e && e->kind == MAPK_FILE && e->pgoff == 0x2000 && e->prot == (PROT_READ | PROT_EXEC),
	      "exec mapping");
	CHECK(e && e->maj == 0xfd && e->min == 1 && e->inode == 1234 && e->user == 7,
	      "device, inode, tag");
	CHECK_STR(e ? e->path : NULL, "/usr/bin/my prog", "path with a space");
	e = maps_find(&m, 0x55d0c9000010);
	CHECK(e && e->kind == MAPK_SPECIAL, "[heap] is special");
	e = maps_find(&m, 0x7f0000000010);
	CHECK(e && e->kind == MAPK_MEMFD && e->deleted, "memfd");
	CHECK_STR(e ? e->path : NULL, "/memfd:jit", "memfd path without (deleted)");
	e = maps_find(&m, 0x7f0000001010);
	CHECK(e && e->kind == MAPK_FILE && e->deleted, "deleted file");
	CHECK_STR(e ? e->path : NULL, "/opt/lib/libgone.so", "deleted path");
	e = maps_find(&m, 0x7f0000002010);
	CHECK(e && e->kind == MAPK_ANON && e->path[0] == '\0', "anonymous");
	e = maps_find(&m, 0x7f0000003010);
	CHECK(e && e->kind == MAPK_ANON, "named anonymous");
	e = maps_find(&m, 0x7ffd1000100);
	CHECK(e && e->kind == MAPK_VDSO, "vdso");
	e = maps_find(&m, 0xffffffffff600000);
	CHECK(e && e->kind == MAPK_SPECIAL, "vsyscall, last line without newline");
	CHECK(maps_find(&m, 0x7f0000004000) == NULL, "hole");
	CHECK(maps_find(&m, 0x55d0c8a05000) == NULL, "end is exclusive");

	/* A new mapping in the middle of an old one splits it. */
	ne.start = 0x55d0c8a03000;
	ne.end = 0x55d0c8a04000;
	ne.kind = MAPK_FILE;
	ne.pgoff = 0;
	ne.path = (char *)"/usr/lib/new.so";
	rc = maps_insert(&m, &ne);
	CHECK(rc == 0, "insert over the middle");
	e = maps_find(&m, 0x55d0c8a02fff);
	CHECK(e && e->end == 0x55d0c8a03000 && e->pgoff == 0x2000, "left part");
	e = maps_find(&m, 0x55d0c8a03500);
	CHECK_STR(e ? e->path : NULL, "/usr/lib/new.so", "new part");
	e = maps_find(&m, 0x55d0c8a04000);
	CHECK(e && e->start == 0x55d0c8a04000 && e->pgoff == 0x4000, "right part, pgoff moved");
	CHECK_STR(e ? e->path : NULL, "/usr/bin/my prog", "right part path");

	/* One mapping over several. */
	ne.start = 0x7f0000000800;
	ne.end = 0x7f0000003800;
	ne.kind = MAPK_ANON;
	ne.pgoff = 0x7f0000000800; /* as perf reports it; ignored for memory */
	ne.path = (char *)"";
	rc = maps_insert(&m, &ne);
	CHECK(rc == 0, "insert over several");
	e = maps_find(&m, 0x7f0000002000);
	CHECK(e && e->start == 0x7f0000000800 && e->pgoff == 0, "covering entry");
	e = maps_find(&m, 0x7f00000007ff);
	CHECK(e && e->kind == MAPK_MEMFD && e->end == 0x7f0000000800, "head trimmed");
	e = maps_find(&m, 0x7f0000003800);
	CHECK(e && e->start == 0x7f0000003800 && e->kind == MAPK_ANON, "tail trimmed");
	for (size_t i = 1; i < m.n; i++)
		CHECK(m.v[i - 1].end <= m.v[i].start, "sorted, disjoint (%zu)", i);
	ne.start = ne.end = 5;
	rc = maps_insert(&m, &ne);
	CHECK(rc == -EINVAL, "empty range rejected");
	maps_release(&m);
	maps_release(&m);

	maps_init(&m);
	rc = maps_parse(&m, "", strlen(""), 0);
	CHECK(rc == 0 && m.n == 0, "empty text");
	rc = maps_parse(&m, "1-2 r-xp 0 0:0 0\n", strlen("1-2 r-xp 0 0:0 0\n"), 0);
	CHECK(rc == 0 && m.n == 1,
	      "minimal line");
	rc = maps_parse(&m, "1-2 r-xp 0 0:0 18446744073709551616\n", strlen("1-2 r-xp 0 0:0 18446744073709551616\n"), 0);
	CHECK(rc == 0 &&
	      m.n == 1, "overflowing inode skipped");
	rc = maps_parse(&m, "10000000000000000-20000000000000000 r-xp 0 0:0 0\n", strlen("10000000000000000-20000000000000000 r-xp 0 0:0 0\n"), 0);
	CHECK(rc == 0 &&
	      m.n == 1, "overflowing address skipped");
	maps_release(&m);
	return test_done();
}
