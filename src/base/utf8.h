/* utf8: reading and writing UTF-8, the one decoder every writer uses. */
#ifndef NPROF_BASE_UTF8_H
#define NPROF_BASE_UTF8_H

#include <stddef.h>
#include <stdint.h>

#define UTF8_INVALID 0xfffd /* what a malformed byte reads as */

/* Decodes the character at s (NUL-terminated): its code point in
 * *ret_cp, the bytes it took as the result. A malformed sequence (bad
 * lead or continuation, overlong, surrogate, past U+10FFFF) reads as
 * UTF8_INVALID and takes one byte. At the NUL: 0, *ret_cp 0. */
size_t utf8_next(const unsigned char *s, uint32_t *ret_cp);

/* Encodes cp (at most U+10FFFF, not a surrogate; else UTF8_INVALID) into
 * out: the bytes written, 1 to 4. */
size_t utf8_put(uint32_t cp, unsigned char out[4]);

/* Replaces, in place, each control byte (below 0x20, and 0x7f) and each
 * byte that does not begin a well-formed character with '?': text from
 * a process or a client, made fit for a log line and for JSON. */
void utf8_clean(char *s);

#endif
