/* peer: who is at the other end of a connection, as nprofd's limits
 * count clients (connections held, failed sign-ins):
 *
 *   "uid:N"            on the unix socket, the peer's uid (SO_PEERCRED);
 *                      over TCP from this host's loopback, the local user
 *                      who owns the client's socket, as the kernel keeps
 *                      it (sock_diag): any local user may bind any of
 *                      127.0.0.0/8, so there the address says nothing;
 *   "ip:192.0.2.7"     over TCP from elsewhere, the address;
 *   "ip:2001:db8::/64" an IPv6 address by its /64, what one client holds.
 *
 * When the kernel will not say (no sock_diag, the client already gone),
 * a loopback client is its address too. */
#ifndef NPROF_DAEMON_PEER_H
#define NPROF_DAEMON_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PEER_KEY_MAX 64

/* The key of the client at the other end of connected socket fd into
 * buf (PEER_KEY_MAX bytes); its uid into *ret_uid when the key is one
 * ((uid_t)-1 otherwise). 0, or -errno when fd is no connected socket. */
int peer_key(int fd, char *buf, size_t len, uid_t *ret_uid);

#endif
