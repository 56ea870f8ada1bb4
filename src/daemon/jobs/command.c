/* command: an operator's command line into an argv, without a shell
 * (command.h). */
#include "daemon/jobs/command.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"

void command_argv_free(char **argv)
{
	if (!argv)
		return;
	for (char **a = argv; *a; a++)
		free(*a);
	free(argv);
}

/* Appends s (len bytes) to the word being built. */
static int put(char **word, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (array_reserve(word, cap, *len + n + 1, 1) < 0)
		return -ENOMEM;
	memcpy(*word + *len, s, n);
	*len += n;
	(*word)[*len] = '\0';
	return 0;
}

char **command_argv(const char *run, pid_t pid, uint64_t seconds, const char *output)
{
	char **argv = NULL, *word = NULL, num[32];
	size_t argc = 0, argv_cap = 0, len = 0, cap = 0;
	char quote = 0;
	bool in_word = false;
	int err = 0;

	for (const char *s = run;; s++) {
		const char *sub = NULL;
		size_t subn = 1;

		if (!*s || (!quote && (*s == ' ' || *s == '\t'))) {
			if (quote) {
				err = EINVAL;
				goto fail;
			}
			if (in_word) {
				if (array_reserve(&argv, &argv_cap, argc + 2, sizeof(*argv)) < 0) {
					err = ENOMEM;
					goto fail;
				}
				argv[argc++] = word ? word : strdup("");
				argv[argc] = NULL;
				word = NULL;
				len = cap = 0;
				in_word = false;
			}
			if (!*s)
				break;
			continue;
		}
		in_word = true;
		if (!quote && (*s == '\'' || *s == '"')) {
			quote = *s;
			continue;
		}
		if (quote && *s == quote) {
			quote = 0;
			continue;
		}
		if (*s == '%') {
			switch (s[1]) {
			case 'p': snprintf(num, sizeof(num), "%d", (int)pid); sub = num; break;
			case 'd': snprintf(num, sizeof(num), "%llu", (unsigned long long)seconds); sub = num; break;
			case 'o': sub = output ? output : ""; break;
			case '%': sub = "%"; break;
			default: break;
			}
			if (sub) {
				s++;
				subn = strlen(sub);
			}
		}
		if (put(&word, &len, &cap, sub ? sub : s, subn) < 0) {
			err = ENOMEM;
			goto fail;
		}
	}
	if (!argv) {
		err = EINVAL;
		goto fail;
	}
	return argv;
fail:
	free(word);
	command_argv_free(argv);
	errno = err;
	return NULL;
}
