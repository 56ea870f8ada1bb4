/* agent_status_fuzz: the lines of an agent's reply to "status", as
 * agent_client_status and `nprof list` read them. What is accepted has
 * its three required lines, and every text field is NUL-terminated
 * printable ASCII (nprof list prints them to a terminal). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/agent_reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void printable(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	if (n == cap)
		abort(); /* not terminated */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agent_status st;

	memset(&st, 0xa5, sizeof(st)); /* written only on success */
	if (agent_status_parse((const char *)data, size, &st) < 0)
		return 0;
	if (!st.version || st.pid <= 0)
		abort();
	printable(st.events, sizeof(st.events));
	printable(st.http, sizeof(st.http));
	printable(st.event, sizeof(st.event));
	printable(st.effective, sizeof(st.effective));
	if (!st.running && (st.event[0] || st.effective[0] || st.interval || st.samples))
		abort();
	return 0;
}
