#include "base/json.h"

#include <inttypes.h>
#include <stdbool.h>

#include "base/utf8.h"

void json_put_string(FILE *out, const char *str, size_t max, unsigned flags)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	bool html = flags & JSON_HTML_SAFE;
	size_t used = 0;

	putc('"', out);
	while (*s) {
		uint32_t cp;
		size_t n;

		/* A run of printable ASCII that needs no escape goes out in
		 * one write (a function name, a path: most strings whole). */
		for (n = 0; s[n] >= 0x20 && s[n] < 0x7f && s[n] != '"' && s[n] != '\\' &&
			    !(html && (s[n] == '<' || s[n] == '>' || s[n] == '&'));
		     n++)
			;
		if (max && used + n > max)
			n = max - used;
		if (n) {
			fwrite(s, 1, n, out);
			used += n;
			s += n;
			continue;
		}
		n = utf8_next(s, &cp);

		if (max && used + n > max) {
			fputs("\\u2026", out);
			break;
		}
		used += n;
		if (cp == '"' || cp == '\\') {
			putc('\\', out);
			putc((int)cp, out);
		} else if (cp < 0x20 || cp == 0x7f || cp == UTF8_INVALID ||
			   (html && (cp == '<' || cp == '>' || cp == '&' || cp == 0x2028 ||
				     cp == 0x2029))) {
			fprintf(out, "\\u%04" PRIx32, cp);
		} else {
			fwrite(s, 1, n, out);
		}
		s += n;
	}
	putc('"', out);
}
