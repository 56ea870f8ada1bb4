/* sched_switch_test: the tracepoint's format file parsed (this kernel's
 * and a made-up one), and states read from raw records. */
#include <stdint.h>
#include <string.h>

#include "engine/sched_switch.h"
#include "test.h"

static const char format_6x[] =
	"name: sched_switch\nID: 372\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
	"\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n";

static char state_of(const struct sched_switch_format *f, uint64_t v)
{
	uint8_t raw[64] = { 0 };

	memcpy(raw + f->state_offset, &v, f->state_size);
	return sched_switch_state(f, raw, sizeof(raw));
}

int main(void)
{
	struct sched_switch_format f = { 0 }, g = { 0 };
	uint8_t small[16] = { 0 };

	CHECK(sched_switch_parse_format(format_6x, sizeof(format_6x) - 1, &f) == 0, "6.x format");
	CHECK(f.state_offset == 32 && f.state_size == 8, "prev_state at 32, 8 bytes (%u, %u)",
	      f.state_offset, f.state_size);
	CHECK(sched_switch_parse_format("field:int prev_state;\toffset:12;\tsize:4;", 40, &g) == 0 &&
	      g.state_offset == 12 && g.state_size == 4, "an int prev_state elsewhere");
	CHECK(sched_switch_parse_format("field:long prev_state_x;\toffset:32;\tsize:8;", 44, &g) < 0,
	      "another field's name does not match");
	CHECK(sched_switch_parse_format("field:long prev_state;\toffset:32;\tsize:2;", 42, &g) < 0,
	      "a size other than 4 or 8 is refused");
	CHECK(sched_switch_parse_format("", 0, &g) < 0, "empty");
	CHECK(state_of(&f, 0x100) == 'R', "preempted (TASK_REPORT_MAX) is runnable");
	CHECK(state_of(&f, 0) == 'R', "yielded (TASK_RUNNING) is runnable");
	CHECK(state_of(&f, 1) == 'S', "S");
	CHECK(state_of(&f, 2) == 'D', "D");
	CHECK(state_of(&f, 4) == 'T', "T");
	CHECK(state_of(&f, 0x10) == 'X' && state_of(&f, 0x20) == 'X', "dead and zombie exit");
	CHECK(sched_switch_state(&f, small, sizeof(small)) == '?', "a record too short");
	return test_done();
}
