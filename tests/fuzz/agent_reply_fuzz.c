/* agent_reply_fuzz: a whole control-socket reply, as agent_client_request
 * reads it from an agent (another process, perhaps another user's, or
 * whatever holds its socket name). An accepted reply's payload must lie
 * exactly within the bytes; a refused one must say why in one clean line.
 * The payload then goes where the CLI sends it: the status reader and the
 * text cleaner. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/agent_reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One line a terminal shows as it is: printable bytes or UTF-8, no
 * controls. */
static void clean_line(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	size_t off = 0, len = 0;
	struct diag d;
	int err;

	diag_clear(&d);
	err = agent_reply_parse(buf, size, 1234, &off, &len, &d);
	if (err < 0) {
		if (err != -EIO && err != -EACCES && err != -EPROTO)
			abort();
		if (!d.msg[0])
			abort();
		clean_line(d.msg);
		return 0;
	}
	if (off == 0 || off > size || len != size - off || buf[off - 1] != '\n')
		abort();
	{
		char *payload = malloc(len ? len : 1);
		struct agent_status st;

		if (!payload)
			return 0;
		memcpy(payload, buf + off, len);
		if (agent_status_parse(payload, len, &st) == 0) {
			if (!st.version || st.pid <= 0 || strlen(st.events) >= sizeof(st.events))
				abort();
		}
		agent_reply_clean_text(payload, len);
		for (size_t i = 0; i < len; i++)
			if (((unsigned char)payload[i] < 0x20 && payload[i] != '\n' &&
			     payload[i] != '\t') || payload[i] == 0x7f)
				abort();
		free(payload);
	}
	return 0;
}
