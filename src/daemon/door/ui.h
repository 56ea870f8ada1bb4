/* ui: the web UI's files (src/daemon/ui/), embedded at build time by
 * scripts/embed and served by nprofd without authentication: the page
 * holds no data, it asks the API for everything (docs/api.md). */
#ifndef NPROF_DAEMON_UI_H
#define NPROF_DAEMON_UI_H

#include <stdbool.h>
#include <stddef.h>

/* The file a request path names: "/" is index.html, "/ui/NAME" one of
 * the embedded files by its exact name (no directories: "../", "%2e" or
 * "/ui/sub/x" name nothing). On a match, sets *ret_data and *ret_len to
 * its bytes (static, NUL-terminated past ret_len) and *ret_type to its
 * Content-Type, and returns true; otherwise returns false and writes
 * nothing. path is the URL's path, without its query. */
bool ui_file(const char *path, const unsigned char **ret_data, size_t *ret_len, const char **ret_type);

#endif
