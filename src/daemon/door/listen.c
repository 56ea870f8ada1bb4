/* listen: the sockets nprofd's doors accept on — a TCP address as
 * nprofd.conf writes it ("127.0.0.1:9700", "[::1]:9700"), and the unix
 * socket. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/door/listen.h"

int listen_parse(const char *listen, bool *ret_loopback)
{
	char host[256];
	const char *colon;
	struct in_addr a4;
	struct in6_addr a6;
	char *end;
	unsigned long port;
	size_t n;

	if (listen[0] == '[') {
		const char *close = strchr(listen, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		n = (size_t)(close - listen - 1);
		colon = close + 1;
		if (n >= sizeof(host))
			return -EINVAL;
		memcpy(host, listen + 1, n);
		host[n] = '\0';
		if (inet_pton(AF_INET6, host, &a6) != 1)
			return -EINVAL;
		*ret_loopback = IN6_IS_ADDR_LOOPBACK(&a6);
	} else {
		colon = strrchr(listen, ':');
		if (!colon)
			return -EINVAL;
		n = (size_t)(colon - listen);
		if (n >= sizeof(host))
			return -EINVAL;
		memcpy(host, listen, n);
		host[n] = '\0';
		if (inet_pton(AF_INET, host, &a4) != 1)
			return -EINVAL;
		*ret_loopback = (ntohl(a4.s_addr) >> 24) == 127;
	}
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port > 65535)
		return -EINVAL;
	return 0;
}

int listen_tcp(const char *addr, char *err, size_t errlen, unsigned *ret_port)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t sl;
	char host[256];
	const char *colon = strrchr(addr, ':');
	unsigned port = (unsigned)strtoul(colon + 1, NULL, 10);
	int fd, one = 1;

	if (addr[0] == '[') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		snprintf(host, sizeof(host), "%.*s", (int)(strchr(addr, ']') - addr - 1), addr + 1);
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		inet_pton(AF_INET6, host, &s6->sin6_addr);
		sl = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		inet_pton(AF_INET, host, &s4->sin_addr);
		sl = sizeof(*s4);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "listen = %s: socket: %s", addr, strerror(errno));
		return -errno;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 128) < 0) {
		int e = errno;

		snprintf(err, errlen, "listen = %s: %s%s", addr, strerror(e),
			 e == EADDRINUSE ? "; another program holds the port: stop it or set listen "
					   "(or --listen) to a free port" : "");
		close(fd);
		return -e;
	}
	sl = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	*ret_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						   : ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

int listen_unix(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[PATH_MAX];
	char *slash;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "socket = %s: longer than %zu bytes; choose a shorter path",
			 path, sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			snprintf(err, errlen, "socket = %s: cannot create %s: %s", path, dir,
				 strerror(errno));
			return -errno;
		}
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -errno;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		snprintf(err, errlen, "socket = %s: another nprofd answers there; stop it or set "
			 "socket (or --socket) to another path", path);
		close(fd);
		return -EADDRINUSE;
	}
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0666) < 0 ||
	    listen(fd, 128) < 0) {
		int e = errno;

		snprintf(err, errlen, "socket = %s: %s", path, strerror(e));
		close(fd);
		return -e;
	}
	return fd;
}
