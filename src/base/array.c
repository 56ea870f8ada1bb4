#include "base/array.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

int array_reserve(void *items, size_t *cap, size_t need, size_t elem)
{
	void **a = items;
	size_t ncap;
	void *n;

	if (need <= *cap)
		return 0;
	if (!elem || need > SIZE_MAX / elem)
		return -ENOMEM;
	ncap = *cap ? *cap : 16;
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
	if (ncap > SIZE_MAX / elem)
		ncap = need;
	n = realloc(*a, ncap * elem);
	if (!n)
		return -ENOMEM;
	*a = n;
	*cap = ncap;
	return 0;
}
