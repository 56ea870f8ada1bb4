/* peer: see peer.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "daemon/core/peer.h"

/* The uid owning the TCP socket at the other end of a loopback
 * connection (its local end is peer, its remote end local), asked of
 * the kernel by its four-tuple. 0, or -errno. */
static int tcp_owner(int family, const void *peer_addr, uint16_t peer_port,
		     const void *local_addr, uint16_t local_port, uid_t *ret_uid)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req = {
		.nlh = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			 .nlmsg_flags = NLM_F_REQUEST },
		.r = { .sdiag_family = (uint8_t)family, .sdiag_protocol = IPPROTO_TCP,
		       .idiag_states = ~0u,
		       .id = { .idiag_sport = peer_port, .idiag_dport = local_port,
			       .idiag_cookie = { INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE } } },
	};
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct timeval tv = { .tv_sec = 1 };
	union {
		struct nlmsghdr h;
		char buf[8192];
	} ans;
	size_t alen = family == AF_INET ? 4 : 16;
	ssize_t n;
	int fd, r = -ENOENT;

	memcpy(req.r.id.idiag_src, peer_addr, alen);
	memcpy(req.r.id.idiag_dst, local_addr, alen);
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) {
		r = -errno;
		goto out;
	}
	n = recv(fd, &ans, sizeof(ans), 0);
	if (n < 0) {
		r = -errno;
		goto out;
	}
	for (struct nlmsghdr *h = &ans.h; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);

			r = e->error ? e->error : -ENOENT;
			break;
		}
		if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
		    h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
			const struct inet_diag_msg *m = NLMSG_DATA(h);

			*ret_uid = m->idiag_uid;
			r = 0;
			break;
		}
	}
out:
	close(fd);
	return r;
}

int peer_key(int fd, char *buf, size_t len, uid_t *ret_uid)
{
	struct sockaddr_storage peer, local;
	socklen_t pl = sizeof(peer), ll = sizeof(local);
	char text[INET6_ADDRSTRLEN];
	uid_t uid = (uid_t)-1;

	*ret_uid = (uid_t)-1;
	if (getpeername(fd, (struct sockaddr *)&peer, &pl) < 0 ||
	    getsockname(fd, (struct sockaddr *)&local, &ll) < 0)
		return -errno;
	if (peer.ss_family == AF_UNIX) {
		struct ucred cred;
		socklen_t cl = sizeof(cred);

		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0)
			return -errno;
		snprintf(buf, len, "uid:%u", (unsigned)cred.uid);
		*ret_uid = cred.uid;
		return 0;
	}
	if (peer.ss_family == AF_INET) {
		struct sockaddr_in *p = (struct sockaddr_in *)&peer, *l = (struct sockaddr_in *)&local;

		if ((ntohl(p->sin_addr.s_addr) >> 24) == 127 &&
		    tcp_owner(AF_INET, &p->sin_addr, p->sin_port, &l->sin_addr, l->sin_port, &uid) == 0)
			goto by_uid;
		inet_ntop(AF_INET, &p->sin_addr, text, sizeof(text));
		snprintf(buf, len, "ip:%s", text);
		return 0;
	}
	if (peer.ss_family == AF_INET6) {
		struct sockaddr_in6 *p = (struct sockaddr_in6 *)&peer, *l = (struct sockaddr_in6 *)&local;
		struct in6_addr net = p->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(&p->sin6_addr)) {
			/* an IPv4 client of a dual-stack listener: its socket is IPv4 */
			if (p->sin6_addr.s6_addr[12] == 127 &&
			    tcp_owner(AF_INET, p->sin6_addr.s6_addr + 12, p->sin6_port,
				      l->sin6_addr.s6_addr + 12, l->sin6_port, &uid) == 0)
				goto by_uid;
			inet_ntop(AF_INET, p->sin6_addr.s6_addr + 12, text, sizeof(text));
			snprintf(buf, len, "ip:%s", text);
			return 0;
		}
		if (IN6_IS_ADDR_LOOPBACK(&p->sin6_addr) &&
		    tcp_owner(AF_INET6, &p->sin6_addr, p->sin6_port, &l->sin6_addr, l->sin6_port,
			      &uid) == 0)
			goto by_uid;
		if (IN6_IS_ADDR_LOOPBACK(&p->sin6_addr)) {
			snprintf(buf, len, "ip:::1");
			return 0;
		}
		memset(net.s6_addr + 8, 0, 8);
		inet_ntop(AF_INET6, &net, text, sizeof(text));
		snprintf(buf, len, "ip:%s/64", text);
		return 0;
	}
	return -EAFNOSUPPORT;
by_uid:
	snprintf(buf, len, "uid:%u", (unsigned)uid);
	*ret_uid = uid;
	return 0;
}
