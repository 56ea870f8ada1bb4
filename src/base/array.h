/* array: growing an array of fixed-size elements, the one way — doubling
 * from 16, with the byte size checked for overflow. */
#ifndef NPROF_BASE_ARRAY_H
#define NPROF_BASE_ARRAY_H

#include <stddef.h>

/* Makes *items (a pointer to the array's pointer, of capacity *cap
 * elements of elem bytes) hold at least need elements. 0, or -ENOMEM
 * when out of memory or when the size would overflow; *items and *cap
 * are unchanged then. */
int array_reserve(void *items, size_t *cap, size_t need, size_t elem);

#endif
