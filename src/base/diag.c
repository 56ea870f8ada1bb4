#include "base/diag.h"

#include <stdarg.h>
#include <stdio.h>

int diag_set(struct diag *d, int err, const char *fmt, ...)
{
	va_list ap;

	if (!d || d->msg[0])
		return err;
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	va_end(ap);
	return err;
}
