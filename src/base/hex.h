/* hex: hexadecimal numbers in text that need not end in a NUL, as /proc
 * files, kallsyms and perf maps write them. */
#ifndef NPROF_BASE_HEX_H
#define NPROF_BASE_HEX_H

#include <stddef.h>
#include <stdint.h>

/* Accept an optional "0x" or "0X" before the digits. */
#define HEX_PREFIX 0x1u

/* Parses the hex digits (either case) at the start of [p, end), stopping
 * at the first other byte or at end: the value goes to *ret_value and
 * where it stopped to *ret_stop. -EINVAL when there is no digit (after
 * the prefix, with HEX_PREFIX) or more than 16 of them, leading zeros
 * included, so that no value is cut; nothing is written then. */
int hex_parse(const char *p, const char *end, unsigned flags,
	      uint64_t *ret_value, const char **ret_stop);

/* Writes the n bytes at bytes as 2n lowercase hex digits and a NUL into
 * out (2n + 1 bytes): build-ids, digests. */
void hex_encode(const uint8_t *bytes, size_t n, char *out);

/* Reads the 2n hex digits (either case) at text into the n bytes at out:
 * 0, or -EINVAL when one is not a digit (out then partly written). */
int hex_decode(const char *text, size_t n, uint8_t *out);

#endif
