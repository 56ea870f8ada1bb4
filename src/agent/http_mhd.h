/* http_mhd: the functions of libmicrohttpd the HTTP endpoint (http.c)
 * calls, looked up when the endpoint first starts instead of linked.
 *
 * The library and the TLS chain it brings (gnutls, nettle, gmp, p11-kit,
 * ...) are half of what loading the agent costs, and `nprof attach` makes
 * one thread of the target pay that while it loads; most processes never
 * serve the endpoint. */
#ifndef NPROF_AGENT_HTTP_MHD_H
#define NPROF_AGENT_HTTP_MHD_H

#include <microhttpd.h>

#include "base/diag.h"

/* The soname the agent was built against (libmicrohttpd.so.12). */
#define HTTP_MHD_SONAME "libmicrohttpd.so.12"

struct http_mhd {
	__typeof__(&MHD_start_daemon) start_daemon;
	__typeof__(&MHD_stop_daemon) stop_daemon;
	__typeof__(&MHD_get_daemon_info) get_daemon_info;
	__typeof__(&MHD_get_connection_info) get_connection_info;
	__typeof__(&MHD_get_connection_values) get_connection_values;
	__typeof__(&MHD_lookup_connection_value) lookup_connection_value;
	__typeof__(&MHD_create_response_from_buffer) create_response_from_buffer;
	__typeof__(&MHD_add_response_header) add_response_header;
	__typeof__(&MHD_queue_response) queue_response;
	__typeof__(&MHD_destroy_response) destroy_response;
};

/* Filled by http_mhd_load; read only once it has succeeded. */
extern struct http_mhd mhd;

/* Loads libmicrohttpd and every function above, once. 0, or -ENOENT with
 * one line in d naming the library and the package that has it. */
int http_mhd_load(struct diag *d);

#endif
