/* nouns: the things nprofd's API names — the actions done to a worker,
 * the formats an artifact is stored or downloaded in, the states of an
 * instance and of an artifact — each one table, with its C name and the
 * texts users see. The API checks requests against these tables, GET
 * /api/v1/meta serves them, and the web UI builds its menus from them:
 * adding an action or a format is one row here. The profiling modes
 * are profile/events.h's table, served beside them. */
#ifndef NPROF_DAEMON_NOUNS_H
#define NPROF_DAEMON_NOUNS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "daemon/core/config.h"

/* ---- instances ---------------------------------------------------------------- */

enum instance_state {
	INSTANCE_RUNNING,	/* its child runs (or a restart waits for the new process) */
	INSTANCE_FINISHED,	/* ended as asked, its artifacts complete */
	INSTANCE_STOPPED,	/* ended early by a user; what it recorded is kept */
	INSTANCE_FAILED,	/* ended in error; message says why */
	INSTANCE_STATE_COUNT
};

/* "RUNNING", ...: the text the API and the database hold. */
const char *instance_state_name(enum instance_state s);

/* The state named name, or -1. */
int instance_state_parse(const char *name);

/* The names, ", "-separated and the last after "or": for an error. */
const char *instance_state_list(void);

/* ---- artifacts: the database's artifacts.complete --------------------------- */

enum artifact_state {
	ARTIFACT_WRITING = 0,	/* its instance still runs */
	ARTIFACT_COMPLETE = 1,	/* its instance ended well */
	ARTIFACT_PARTIAL = 2,	/* its instance failed or was stopped: what there is */
};

/* ---- actions: POST /api/v1/workers/ID/NAME ------------------------------------ */

struct action_def {
	const char *name;		/* in the URL and in a worker's "actions" */
	enum action_kind kind;		/* its switch in nprofd.conf (config_action_key) */
	const char *instance_kind;	/* the instance it makes; NULL: answered at once */
	bool needs_agent;		/* nprof's agent must be loaded in the worker */
	bool refuses_agent;		/* ... must not be (attach) */
	const char *without_agent;	/* why it is not offered then; NULL: how to load it */
	const char *label;		/* a button's text */
	bool danger;			/* the page asks before doing it */
	const char *description;	/* one line, for a button's title */
	/* An action that stores nprof's output: the stored format and its
	 * file's extension, the format its link defaults to, and nprof's
	 * arguments ("PID" stands for the worker's pid). */
	const char *art_format, *art_ext, *view_format;
	const char *args[6];
};

extern const struct action_def action_defs[];
extern const size_t action_count;

/* The row named name, or NULL ("commands/NAME" is not a row: the
 * operator's commands are nprofd.conf's). */
const struct action_def *action_find(const char *name);

/* The names, for an error: "stacks, heapdump, ... or commands/NAME". */
const char *action_list(void);

/* ---- formats: of a stored artifact, of a download ------------------------------- */

struct format_def {
	const char *name;
	const char *ext;	/* a download's name ends in .EXT ("" none) */
	const char *type;	/* its Content-Type */
	const char *from;	/* the stored format nprof converts to it; NULL: stored */
	bool view;		/* the page shows it (flame graph, call tree, a thread dump) */
	bool diff;		/* a comparison of two profiles is written in it */
	const char *description;
};

extern const struct format_def format_defs[];
extern const size_t format_count;

/* The row named name, or NULL. */
const struct format_def *format_find(const char *name);

/* Whether an artifact stored in have is sent as want. */
bool format_converts(const char *have, const char *want);

/* What have converts to, ", "-separated, into buf (len bytes): buf. */
const char *format_targets(const char *have, char *buf, size_t len);

/* The formats a diff is written in, for an error: buf. */
const char *format_diff_list(char *buf, size_t len);

/* ---- GET /api/v1/meta -------------------------------------------------------- */

/* Every table above and the profiling modes, as the API serves them. */
json_t *nouns_json(void);

#endif
