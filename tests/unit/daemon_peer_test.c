/* peer: a unix socket's peer by uid; a loopback TCP client by the uid
 * that owns its socket (the kernel's sock_diag), whoever made it and
 * from whichever 127.x address; what is no connected socket refused. */
#include "daemon/core/peer.h"
#include "test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* A listener on 127.0.0.1, its port in *port. */
static int listener(unsigned short *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0)
		abort();
	*port = ntohs(sa.sin_port);
	return fd;
}

/* The key of a client that connects from src (as uid, when not -1, in a
 * child that became uid first), as the listener's accepted end sees it. */
static int tcp_key(const char *src, int uid, char *key, size_t len, uid_t *ret_uid)
{
	unsigned short port;
	int l = listener(&port), c, r, status;
	pid_t pid = fork();

	if (pid == 0) {
		struct sockaddr_in from = { .sin_family = AF_INET };
		struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(port),
					  .sin_addr.s_addr = htonl(0x7f000001) };
		int s;

		if (uid >= 0 && (setgid((gid_t)uid) < 0 || setuid((uid_t)uid) < 0))
			_exit(2);
		s = socket(AF_INET, SOCK_STREAM, 0);
		inet_pton(AF_INET, src, &from.sin_addr);
		if (s < 0 || bind(s, (struct sockaddr *)&from, sizeof(from)) < 0 ||
		    connect(s, (struct sockaddr *)&to, sizeof(to)) < 0)
			_exit(3);
		/* held open until the parent has asked (it closes the listener) */
		char b;
		if (read(s, &b, 1) < 0)
			_exit(4);
		_exit(0);
	}
	c = accept(l, NULL, NULL);
	r = c < 0 ? -errno : peer_key(c, key, len, ret_uid);
	if (c >= 0)
		close(c);
	close(l);
	waitpid(pid, &status, 0);
	return r;
}

int main(void)
{
	char key[PEER_KEY_MAX];
	uid_t uid;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		abort();
	CHECK(peer_key(sv[0], key, sizeof(key), &uid) == 0 && uid == getuid(),
	      "a unix socket's peer: its uid (%s)", key);
	close(sv[0]);
	close(sv[1]);
	if (pipe(sv) < 0)
		abort();
	CHECK(peer_key(sv[0], key, sizeof(key), &uid) == -ENOTSOCK, "a pipe: -ENOTSOCK");
	close(sv[0]);
	close(sv[1]);

	CHECK(tcp_key("127.0.0.1", -1, key, sizeof(key), &uid) == 0, "a loopback client: a key (%s)", key);
	CHECK(!strncmp(key, "uid:", 4) || !strcmp(key, "ip:127.0.0.1"),
	      "its uid, or its address where the kernel will not say (%s)", key);
	if (strncmp(key, "uid:", 4)) {
		printf("# the kernel's sock_diag did not answer here: loopback clients are their address\n");
		return test_done();
	}
	CHECK(uid == getuid(), "a loopback client of this process's own: uid %u", (unsigned)uid);
	if (getuid() != 0) {
		printf("ok %d - a client of another user # SKIP needs root to become one\n", ++test_count);
		return test_done();
	}
	CHECK(tcp_key("127.0.0.2", 65534, key, sizeof(key), &uid) == 0 && uid == 65534 &&
		      !strcmp(key, "uid:65534"),
	      "a client made by uid 65534 from 127.0.0.2: uid:65534 (%s)", key);
	CHECK(tcp_key("127.3.4.5", 65534, key, sizeof(key), &uid) == 0 && !strcmp(key, "uid:65534"),
	      "from 127.3.4.5 too: the same key, whatever the address (%s)", key);
	return test_done();
}
