/* listen: the sockets nprofd's doors accept on. */
#ifndef NPROF_DAEMON_LISTEN_H
#define NPROF_DAEMON_LISTEN_H

#include <stdbool.h>
#include <stddef.h>

/* Parses "ADDR:PORT" ("127.0.0.1:9700", "[::1]:9700") and says whether
 * ADDR is loopback: 0 or -EINVAL. */
int listen_parse(const char *listen, bool *ret_loopback);

/* A TCP socket listening on addr (listen_parse's form; :0 lets the
 * kernel choose), its port into ret_port: the fd, or -errno with the
 * one-line reason in err. */
int listen_tcp(const char *addr, char *err, size_t errlen, unsigned *ret_port);

/* The socket every local user may connect to: who they are comes from
 * the kernel with each connection, so the mode is 0666 on purpose. A
 * stale socket of an nprofd that died is replaced; a live one is not.
 * The fd, or -errno with the reason in err. */
int listen_unix(const char *path, char *err, size_t errlen);

#endif
