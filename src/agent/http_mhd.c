#include "agent/http_mhd.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>

struct http_mhd mhd;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int loaded; /* 1 once every function is there */

int http_mhd_load(struct diag *d)
{
	static const struct { const char *name; size_t offset; } fns[] = {
#define FN(f) { "MHD_" #f, offsetof(struct http_mhd, f) }
		FN(start_daemon), FN(stop_daemon), FN(get_daemon_info),
		FN(get_connection_info), FN(get_connection_values),
		FN(lookup_connection_value), FN(create_response_from_buffer),
		FN(add_response_header), FN(queue_response), FN(destroy_response),
#undef FN
	};
	void *lib;
	int err = 0;

	pthread_mutex_lock(&lock);
	if (loaded)
		goto out;
	/* Never closed: the endpoint may start again after a stop. */
	lib = dlopen(HTTP_MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		err = diag_set(d, -ENOENT, "the HTTP endpoint needs %s (Debian: libmicrohttpd12): %s",
			       HTTP_MHD_SONAME, dlerror());
		goto out;
	}
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		void *f = dlsym(lib, fns[i].name);

		if (!f) {
			err = diag_set(d, -ENOENT, "%s has no %s: not the libmicrohttpd the agent "
				       "was built for", HTTP_MHD_SONAME, fns[i].name);
			goto out;
		}
		*(void **)((char *)&mhd + fns[i].offset) = f;
	}
	loaded = 1;
out:
	pthread_mutex_unlock(&lock);
	return err;
}
