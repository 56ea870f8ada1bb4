/* selector: a set of processes as nprofd.conf writes it — "all",
 * "unit:GLOB", "cgroup:/PATH", "exe:GLOB" or "user:NAME" ([workers]
 * select, [service NAME] match) — and the bound on any value of the
 * file. On its own so that a schedule's selector (schedule_spec.h),
 * which config.h holds, can name it; config.h parses and matches it. */
#ifndef NPROF_DAEMON_SELECTOR_H
#define NPROF_DAEMON_SELECTOR_H

#define CONFIG_VALUE_MAX 1024	   /* any value of nprofd.conf, in bytes */

enum selector_kind { SELECT_ALL, SELECT_UNIT, SELECT_CGROUP, SELECT_EXE, SELECT_USER };

struct selector {
	enum selector_kind kind;
	char value[CONFIG_VALUE_MAX];	/* what follows the kind's "unit:" ... */
};

#endif
