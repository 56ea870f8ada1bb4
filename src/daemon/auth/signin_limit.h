/* signin_limit: failed sign-ins slow down who failed, never whom they
 * named. Three limits, each a refusal (429) before the password is
 * checked, never a wait on nprofd's side:
 *
 *   - one user name from one address: after max_failures failures, it
 *     waits 1 s before its next try, and after each further failure
 *     twice as long as before, up to the window;
 *   - one address, whatever names it tries: the same after
 *     max_address_failures;
 *   - the door: a token bucket of failures_per_minute failures a
 *     minute. When it is empty, a client (peer.h: on loopback the local
 *     user, else the address) that has failed within the window is not
 *     checked until a token is back; one that has not is checked all
 *     the same, so that nobody's failures keep a user out who has not
 *     failed.
 *
 * Each record is forgotten a window (failure_window) after its last
 * failure; a success forgets its pair's failures. Nothing is counted per
 * user name alone: anyone may fail as anyone from elsewhere.
 *
 * An attempt counts as a failure from the moment it is let through
 * (signin_limit_try), so that attempts sent at once are limited as if
 * one after the other, and is then ended by signin_limit_failed (its
 * failure dated then: after PAM's own delay) or signin_limit_succeeded.
 * Every function takes the time (CLOCK_MONOTONIC, ns) and is safe to
 * call from several threads. */
#ifndef NPROF_DAEMON_SIGNIN_LIMIT_H
#define NPROF_DAEMON_SIGNIN_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/core/peer.h"

struct signin_limits {
	unsigned max_failures;		/* of one name from one address, before waits */
	unsigned max_address_failures;	/* of one address */
	unsigned failures_per_minute;	/* of the door */
	uint64_t window_ns;		/* a record lives this long after its last failure */
};

/* Which limit refused an attempt. */
enum signin_refusal { SIGNIN_PAIR, SIGNIN_ADDRESS, SIGNIN_DOOR };

/* An attempt let through: what it counted, for its end. */
struct signin_attempt {
	char user[64];
	char addr[48];
	char peer[PEER_KEY_MAX];
	bool took_token;
};

struct signin_limit;

struct signin_limit *signin_limit_new(const struct signin_limits *limits);
void signin_limit_free(struct signin_limit *l);

/* Whether a sign-in as user from addr, by client peer, may be checked
 * now: 0 with *ret_attempt filled (it counts as a failure until ended),
 * or -EAGAIN with the limit that refused it in *ret_why and the whole
 * seconds to wait in *ret_wait_s. */
int signin_limit_try(struct signin_limit *l, const char *user, const char *addr,
		     const char *peer, uint64_t now_ns, struct signin_attempt *ret_attempt,
		     enum signin_refusal *ret_why, uint64_t *ret_wait_s);

/* The attempt failed: its failure stands, dated now_ns. */
void signin_limit_failed(struct signin_limit *l, const struct signin_attempt *a, uint64_t now_ns);

/* The attempt succeeded: its pair's failures are forgotten, and what it
 * counted for its address and the door is undone. */
void signin_limit_succeeded(struct signin_limit *l, const struct signin_attempt *a,
			    uint64_t now_ns);

#endif
