/* json: writing a JSON string, the one escaper every writer uses. */
#ifndef NPROF_BASE_JSON_H
#define NPROF_BASE_JSON_H

#include <stddef.h>
#include <stdio.h>

/* Also escape <, >, &, U+2028 and U+2029, so that the string can sit in
 * an HTML <script> element or a JS string literal. */
#define JSON_HTML_SAFE 1u

/* Writes s (NULL: "") as a quoted JSON string: quotes, backslashes and
 * control characters escaped, malformed UTF-8 as \ufffd. With max > 0,
 * at most max bytes of s, then \u2026 (an ellipsis) if it was longer. */
void json_put_string(FILE *out, const char *s, size_t max, unsigned flags);

#endif
