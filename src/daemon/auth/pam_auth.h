/* pam_auth: checks a user's password with PAM, as login does: the host's
 * own accounts (and whatever else its PAM stack is set up for), their
 * expiry and locks included. */
#ifndef NPROF_DAEMON_PAM_AUTH_H
#define NPROF_DAEMON_PAM_AUTH_H

#include <stddef.h>
#include <stdint.h>

/* 0 when PAM service accepts user with password (authenticated, and the
 * account usable); -EACCES when it does not, the reason for the log in
 * why. PAM's delay after a failure is not slept here but returned in
 * *ret_delay_us, for the caller to sleep outside any lock. */
int pam_auth(const char *service, const char *user, const char *password,
	     uint64_t *ret_delay_us, char *why, size_t whylen);

#endif
