/* signin_limit: failed sign-ins counted per user name and per client
 * address; past max_failures within a window, both are refused until
 * the window has passed, so passwords cannot be guessed at speed from
 * one address, nor one account's from many. */
#ifndef NPROF_DAEMON_SIGNIN_LIMIT_H
#define NPROF_DAEMON_SIGNIN_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

struct signin_limit;

struct signin_limit *signin_limit_new(unsigned max_failures, uint64_t window_ns);
void signin_limit_free(struct signin_limit *l);

/* Whether a sign-in as user from addr is refused now; if so, the seconds
 * until it may be tried again into *ret_wait_s. */
bool signin_limit_refused(struct signin_limit *l, const char *user, const char *addr,
			  uint64_t *ret_wait_s);

/* A sign-in as user from addr failed: counted for both. */
void signin_limit_failed(struct signin_limit *l, const char *user, const char *addr);

/* One succeeded: the user's failures are forgotten (the address's not). */
void signin_limit_succeeded(struct signin_limit *l, const char *user);

#endif
