/* wall_time: the time of day as nprofd keeps and shows it —
 * milliseconds since the epoch, written as ISO 8601 in UTC. Every part
 * of the daemon calls it (the API, the index, tokens, the cluster's
 * registry and signatures); it includes none of them. */
#ifndef NPROF_DAEMON_WALL_TIME_H
#define NPROF_DAEMON_WALL_TIME_H

#include <stddef.h>
#include <stdint.h>

/* Milliseconds since the epoch (CLOCK_REALTIME). */
uint64_t now_ms(void);

/* ms as "2026-11-25T16:31:22.123Z" into buf (len bytes): buf. */
const char *iso_time(uint64_t ms, char *buf, size_t len);

#endif
