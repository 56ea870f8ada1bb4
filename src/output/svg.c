/* svg: work in progress (replaced shortly). */
#include "output/output.h"

#include <errno.h>

int output_write_svg(const struct profile *p, const struct output_options *o,
		    FILE *out)
{
	return -ENOTSUP;
}
