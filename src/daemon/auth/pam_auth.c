/* pam_auth: one PAM transaction per sign-in, one at a time (PAM modules
 * are not all safe to run on several threads at once). */
#include <errno.h>
#include <pthread.h>
#include <security/pam_appl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/auth/pam_auth.h"

static pthread_mutex_t pam_lock = PTHREAD_MUTEX_INITIALIZER;

struct conversation {
	const char *password;
	uint64_t delay_us;
};

/* PAM asks; the only answer nprofd has is the password, for the prompts
 * that do not echo. Messages for a terminal are dropped. */
static int converse(int n, const struct pam_message **msg, struct pam_response **resp, void *data)
{
	struct conversation *c = data;
	struct pam_response *r = calloc((size_t)n, sizeof(*r));

	if (!r)
		return PAM_BUF_ERR;
	for (int i = 0; i < n; i++) {
		if (msg[i]->msg_style == PAM_PROMPT_ECHO_OFF) {
			r[i].resp = strdup(c->password);
			if (!r[i].resp)
				goto fail;
		} else if (msg[i]->msg_style == PAM_PROMPT_ECHO_ON) {
			goto fail; /* a question nprofd cannot answer (an OTP, say) */
		}
	}
	*resp = r;
	return PAM_SUCCESS;
fail:
	for (int i = 0; i < n; i++)
		free(r[i].resp);
	free(r);
	return PAM_CONV_ERR;
}

/* PAM's delay after a failure, remembered rather than slept under the lock. */
static void note_delay(int status, unsigned delay_us, void *data)
{
	struct conversation *c = data;

	(void)status;
	c->delay_us = delay_us;
}

int pam_auth(const char *service, const char *user, const char *password,
	     uint64_t *ret_delay_us, char *why, size_t whylen)
{
	struct conversation conv_data = { .password = password };
	struct pam_conv conv = { converse, &conv_data };
	pam_handle_t *h = NULL;
	int r;

	*ret_delay_us = 0;
	pthread_mutex_lock(&pam_lock);
	r = pam_start(service, user, &conv, &h);
	if (r == PAM_SUCCESS)
		r = pam_set_item(h, PAM_FAIL_DELAY, (const void *)note_delay);
	if (r == PAM_SUCCESS)
		r = pam_authenticate(h, PAM_SILENT | PAM_DISALLOW_NULL_AUTHTOK);
	if (r == PAM_SUCCESS)
		r = pam_acct_mgmt(h, PAM_SILENT | PAM_DISALLOW_NULL_AUTHTOK);
	snprintf(why, whylen, "%s", h ? pam_strerror(h, r) : "pam_start failed");
	if (h)
		pam_end(h, r);
	pthread_mutex_unlock(&pam_lock);
	*ret_delay_us = conv_data.delay_us;
	return r == PAM_SUCCESS ? 0 : -EACCES;
}
