/* jfr_format: constants and integer encodings shared by the JFR writer and
 * reader. Private to src/output/jfr_*.c; docs/jfr.md describes the layout.
 *
 * A JFR file is one or more chunks. A chunk is a 68-byte big-endian header
 * followed by events; each event starts with its size (including the size
 * itself) and its type id, both as JFR's compressed integers. Type 0 is the
 * metadata event (the type system, as a string table and an element tree),
 * type 1 a checkpoint (constant pools). */
#ifndef NPROF_OUTPUT_JFR_FORMAT_H
#define NPROF_OUTPUT_JFR_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "profile/profile.h"

#define JFR_MAGIC "FLR\0"
#define JFR_MAJOR 2
#define JFR_MINOR 1
#define JFR_HEADER_SIZE 68

/* Offsets in the chunk header. */
#define JFR_OFF_CHUNK_SIZE 8
#define JFR_OFF_CPOOL 16
#define JFR_OFF_METADATA 24
#define JFR_OFF_START_NANOS 32
#define JFR_OFF_DURATION 40
#define JFR_OFF_START_TICKS 48
#define JFR_OFF_TICKS_PER_SEC 56
#define JFR_OFF_FILE_STATE 64 /* 0: finished; anything else: being written */
#define JFR_OFF_FLAGS 67

#define JFR_FLAG_COMPRESSED_INTS 0x1
#define JFR_FLAG_FINAL_CHUNK 0x2

#define JFR_EVENT_METADATA 0
#define JFR_EVENT_CHECKPOINT 1

/* String encodings: the byte before every string value. */
enum jfr_string_encoding {
	JFR_STR_NULL = 0,
	JFR_STR_EMPTY = 1,
	JFR_STR_POOL = 2,   /* a key into the java.lang.String pool */
	JFR_STR_UTF8 = 3,   /* length, then UTF-8 bytes */
	JFR_STR_UTF16 = 4,  /* length, then UTF-16 code units as varints */
	JFR_STR_LATIN1 = 5, /* length, then ISO-8859-1 bytes */
};

/* The type ids nprof writes. The numbers are nprof's own (a reader learns
 * them from the metadata); they follow async-profiler's so the files look
 * familiar in a hex dump. */
enum jfr_type_id {
	JFR_T_BOOLEAN = 4,
	JFR_T_CHAR = 5,
	JFR_T_FLOAT = 6,
	JFR_T_DOUBLE = 7,
	JFR_T_BYTE = 8,
	JFR_T_SHORT = 9,
	JFR_T_INT = 10,
	JFR_T_LONG = 11,
	JFR_T_STRING = 20,
	JFR_T_CLASS = 21,
	JFR_T_THREAD = 22,
	JFR_T_CLASS_LOADER = 23,
	JFR_T_FRAME_TYPE = 24,
	JFR_T_THREAD_STATE = 25,
	JFR_T_STACK_TRACE = 26,
	JFR_T_STACK_FRAME = 27,
	JFR_T_METHOD = 28,
	JFR_T_PACKAGE = 30,
	JFR_T_SYMBOL = 31,
	JFR_T_EXECUTION_SAMPLE = 101,
	JFR_T_NPROF_SAMPLE = 150,
	JFR_T_NPROF_PROFILE = 151,
	JFR_T_LABEL = 201,
	JFR_T_CATEGORY = 202,
	JFR_T_TIMESTAMP = 204,
};

/* Frame type pool keys nprof writes, and their descriptions. */
enum jfr_frame_type_key {
	JFR_FT_NATIVE = 1,
	JFR_FT_INLINED = 2,
	JFR_FT_JIT = 3,
};

#define JFR_THREAD_STATE_RUNNABLE 1

/* Class names nprof gives frames that have no library. */
#define JFR_CLASS_KERNEL "[kernel]"
#define JFR_CLASS_UNKNOWN "[unknown]"

/* The name a thread without one gets in the thread pool, so JFR tools show
 * something; the reader turns it back into no name. */
#define JFR_NAMELESS_THREAD_FMT "[tid %d]"

/* The thread pseudo-frame (-t) of a thread, named as the engine and the
 * agent name it (profile_thread_root_name). The writer checks a thread's
 * roots against it before it counts the thread in nprof.Profile's
 * threadRoots; the reader rebuilds the roots with it. A new string (free
 * it), or NULL when out of memory. */
static inline char *jfr_thread_root_name(const char *name, int tid)
{
	int n = profile_thread_root_name(NULL, 0, name, tid);
	char *s = n < 0 ? NULL : malloc((size_t)n + 1);

	if (s)
		profile_thread_root_name(s, (size_t)n + 1, name, tid);
	return s;
}

/* Compressed integers: 7 bits a byte, least significant first, the high
 * bit set when more follow; the 9th byte, when reached, carries 8 bits, so
 * any 64-bit value fits in at most 9 bytes. */
#define JFR_VARINT_MAX 9

static inline size_t jfr_varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80 && n < JFR_VARINT_MAX) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Writes v at p (room for JFR_VARINT_MAX bytes); returns the bytes used. */
static inline size_t jfr_varint_put(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (n < JFR_VARINT_MAX - 1) {
		if (v < 0x80) {
			p[n++] = (uint8_t)v;
			return n;
		}
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Reads a compressed integer from [*p, end). Returns 0 and advances *p, or
 * -1 when the input ends inside it. */
static inline int jfr_varint_get(const uint8_t **p, const uint8_t *end,
				 uint64_t *ret_v)
{
	const uint8_t *q = *p;
	uint64_t v = 0;

	for (unsigned i = 0; i < JFR_VARINT_MAX; i++) {
		if (q >= end)
			return -1;
		uint8_t b = *q++;

		if (i == JFR_VARINT_MAX - 1) {
			v |= (uint64_t)b << 56;
			break;
		}
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			break;
	}
	*p = q;
	*ret_v = v;
	return 0;
}

static inline uint64_t jfr_be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static inline void jfr_put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

#endif
