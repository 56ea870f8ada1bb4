/* daemon_cmd: what the commands that go through nprofd share (workers,
 * start, instances, stop, get, take, token): naming a worker by PID,
 * waiting for an instance, downloading what it produced, and printing
 * tables. Each function that can fail prints its one error line and
 * returns an enum cli_exit. */
#ifndef NPROF_CLI_DAEMON_CMD_H
#define NPROF_CLI_DAEMON_CMD_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "client/daemon_client.h"

/* How long nprofd may hold a waiting command's question (?wait=), in
 * seconds, and how often at most it asks again, in ms (an nprofd that
 * answers at once). */
#define DAEMON_CMD_WAIT_S 1
#define DAEMON_CMD_POLL_MS 200

/* arg, a worker id or a PID (all digits, resolved through
 * GET /api/v1/workers?pid=), as a worker id into ret_id (the text as
 * given: escape it for a path). */
int daemon_cmd_worker(const char *cmd, const char *arg, char *ret_id, size_t len);

/* An instance or artifact id: a positive number. */
int daemon_cmd_parse_id(const char *arg, long long *ret);

/* Asks for instance id until it is no longer RUNNING, nprofd holding
 * each answer up to DAEMON_CMD_WAIT_S (so the end is seen as it happens),
 * with a progress line on a terminal; its final JSON in *ret (decref it). With stop_on_ctrl_c, the
 * first Ctrl-C asks nprofd to stop it and the wait goes on for what it
 * recorded until then; a second one ends nprof. */
int daemon_cmd_wait(long long id, bool stop_on_ctrl_c, json_t **ret);

/* "instance N STATUS: MESSAGE" on out; EXIT_FAILED when it FAILED. */
int daemon_cmd_print_end(const json_t *instance, FILE *out);

/* The format to ask nprofd for, for an artifact of art_format ("pprof",
 * "threads", "core") written to file (NULL or "-": standard output, or
 * the server's name): -o's opt, else what file's extension says, else
 * the instance's format (what was asked when it started). NULL after a
 * usage error naming cmd. */
const char *daemon_cmd_format(const char *cmd, const char *art_format, const char *inst_format,
			      const char *file, const char *opt);

/* Downloads artifact art_id as format (NULL: as stored) to file: "-" is
 * standard output, NULL the name nprofd suggests, in the current
 * directory (never replacing a file). A file is written whole or not at
 * all (a temporary file beside it, renamed). Says where it wrote on
 * stderr. */
int daemon_cmd_fetch(long long art_id, const char *format, const char *file);

/* The first artifact of an instance (or artifact want, when want > 0):
 * the artifact's JSON (borrowed from instance), or NULL after an error. */
json_t *daemon_cmd_artifact(const json_t *instance, long long want);

/* j on standard output, indented, one newline after. */
int daemon_cmd_print_json(const json_t *j);

/* The terminal's width in columns, or $COLUMNS, or 80. */
unsigned daemon_cmd_columns(void);

/* Writes s to out, control characters as '?', cut to width columns
 * (UTF-8 characters counted one column each); with pad, spaces up to
 * width and one more. Returns the columns written. */
unsigned daemon_cmd_cell(FILE *out, const char *s, unsigned width, bool pad);

/* A JSON string member of o, or def when it is absent or not a string. */
const char *daemon_cmd_str(const json_t *o, const char *key, const char *def);

/* The local time of an ISO 8601 UTC time from the API
 * ("2026-11-25T16:31:22.123Z") as "2026-11-25 17:31:22"; "-" for NULL. */
const char *daemon_cmd_time(const char *iso, char *buf, size_t len);

/* A byte count as "812 B", "12.3 KiB", "1.5 MiB", "2.0 GiB". */
const char *daemon_cmd_bytes(double bytes, char *buf, size_t len);

#endif
