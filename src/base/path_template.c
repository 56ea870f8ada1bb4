#include "base/path_template.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int path_template_expand(const char *tmpl, pid_t pid, char *out, size_t len)
{
	size_t o = 0;

	for (const char *s = tmpl; *s; s++) {
		char piece[64];
		size_t n;

		if (s[0] == '%' && s[1] == 'p') {
			snprintf(piece, sizeof(piece), "%d", (int)pid);
			s++;
		} else if (s[0] == '%' && s[1] == 't') {
			time_t now = time(NULL);
			struct tm tm;

			localtime_r(&now, &tm);
			strftime(piece, sizeof(piece), "%Y%m%d-%H%M%S", &tm);
			s++;
		} else {
			piece[0] = *s;
			piece[1] = '\0';
		}
		n = strlen(piece);
		if (o + n >= len)
			return -ENAMETOOLONG;
		memcpy(out + o, piece, n);
		o += n;
	}
	out[o] = '\0';
	return 0;
}
