/* proc_stat: the one reader of /proc/PID/stat lines (the daemon's worker
 * scan, the agent's wall sampler, thread dumps, core files). This
 * process's own stat agrees with what it knows of itself; a name that
 * holds spaces and ") (" ends at the last ')'; negative fields (tpgid,
 * nice) and a 64-bit rsslim do not stop the reading before field 31;
 * a line cut after field 22 still reads, one cut before does not. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/proc.h"
#include "test.h"

/* A stat line as Linux writes it, with name and the fields after it. */
static const char full[] =
	"4242 (a b) (c) R 1 4242 4242 34816 -1 4194560 2066 0 0 0 "
	"17 5 0 0 20 -5 3 0 981234 1234567 320 18446744073709551615 1 1 0 0 0 "
	"256 0 4096 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0\n";

int main(void)
{
	struct proc_stat st;
	char comm[64], line[512];

	CHECK(proc_stat_read(0, 0, &st) == 0, "this process's stat reads");
	CHECK(proc_comm(0, 0, comm, sizeof(comm)) == 0 && !strcmp(st.comm, comm),
	      "its name is comm's (%s, %s)", st.comm, comm);
	CHECK(st.state == 'R' && st.ppid == getppid() && st.threads == 1 && st.start_ticks > 0,
	      "running, its parent %d, 1 thread, started at tick %llu", (int)st.ppid,
	      (unsigned long long)st.start_ticks);
	CHECK(proc_stat_read(0, (pid_t)getpid(), &st) == 0 && st.state == 'R',
	      "its main thread's stat reads too");

	CHECK(proc_stat_parse(full, &st) == 0, "a full line parses");
	CHECK_STR(st.comm, "a b) (c", "the name ends at the last ')'");
	CHECK(st.state == 'R' && st.ppid == 1 && st.pgrp == 4242 && st.session == 4242 &&
	      st.flags == 4194560 && st.utime == 17 && st.stime == 5 && st.nice == -5 &&
	      st.threads == 3 && st.start_ticks == 981234,
	      "fields 3 to 22 (tpgid -1 and nice -5 read as numbers)");
	CHECK(st.pending == 256, "field 31, past rsslim's 18446744073709551615: %llu",
	      (unsigned long long)st.pending);

	/* cut after field 22 (starttime) */
	snprintf(line, sizeof(line), "%.*s\n", (int)(strstr(full, " 1234567") - full), full);
	CHECK(proc_stat_parse(line, &st) == 0 && st.start_ticks == 981234 && st.pending == 0,
	      "a line that ends after field 22 reads, pending 0");
	/* cut before it */
	snprintf(line, sizeof(line), "%.*s\n", (int)(strstr(full, " 981234") - full), full);
	CHECK(proc_stat_parse(line, &st) == -EBADMSG, "one that ends before field 22 does not");
	CHECK(proc_stat_parse("12 noparen S 1", &st) == -EBADMSG, "no name in parentheses: refused");
	CHECK(proc_stat_parse("12 (x)", &st) == -EBADMSG, "nothing after the name: refused");
	CHECK(proc_stat_parse("12 (x) S 1 2 3 4 5 6 7 8 9 10 11x 12", &st) == -EBADMSG,
	      "a field that is not a number: refused");
	CHECK(proc_stat_parse("12 (x) S 99999999999999999999 2", &st) == -EBADMSG,
	      "a number past 64 bits: refused");
	return test_done();
}
