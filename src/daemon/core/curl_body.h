/* curl_body: a reply body libcurl fills, bounded. Both of nprofd's HTTP
 * clients (etcd.c for the registry, remote.c for the other daemons) read
 * replies from servers they do not control: past max bytes the transfer
 * is ended, not grown. */
#ifndef NPROF_DAEMON_CURL_BODY_H
#define NPROF_DAEMON_CURL_BODY_H

#include <stdbool.h>
#include <stddef.h>

struct curl_body {
	char *data;		/* NUL-terminated, malloc'd; NULL until a byte came */
	size_t len, max;
	bool too_big;		/* max was passed: the transfer was ended */
	bool first_line;	/* a stream (etcd's keepalive): its first line is the answer */
};

/* CURLOPT_WRITEFUNCTION, with the body as CURLOPT_WRITEDATA. */
size_t curl_body_write(char *p, size_t size, size_t n, void *body);

#endif
