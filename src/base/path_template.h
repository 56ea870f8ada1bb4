/* path_template: the file-name template of -f and NPROF_START's file=:
 * %p becomes the pid, %t a local timestamp (YYYYMMDD-HHMMSS). */
#ifndef NPROF_BASE_PATH_TEMPLATE_H
#define NPROF_BASE_PATH_TEMPLATE_H

#include <stddef.h>
#include <sys/types.h>

/* Writes the expansion of tmpl into out (len bytes). Returns 0, or
 * -ENAMETOOLONG when it does not fit. */
int path_template_expand(const char *tmpl, pid_t pid, char *out, size_t len);

#endif
