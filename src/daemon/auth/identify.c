/* identify: who is asking — the kernel's word on the unix socket, an API
 * token, a trusted proxy's header or a browser's session over HTTP —
 * and whether a session's change carries its CSRF token. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "daemon/auth/identify.h"
#include "daemon/auth/tokens.h"

bool identify_peer(struct daemon *d, struct MHD_Connection *c, struct user *u)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (!ci || getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return false;
	u->uid = cred.uid;
	u->via = "socket";
	return user_complete(d, u);
}

void identify_client_address(struct MHD_Connection *c, char *buf, size_t len)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	buf[0] = '\0';
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, (socklen_t)len);
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf,
			  (socklen_t)len);
}

/* A browser signed in: its session cookie. */
static bool session_user(struct daemon *d, struct MHD_Connection *c, struct user *u)
{
	const char *cookie = MHD_lookup_connection_value(c, MHD_COOKIE_KIND, SESSION_COOKIE);
	struct token_info t;

	if (!cookie || token_check(d->db, cookie, TOKEN_SESSION, &t) < 0)
		return false;
	u->uid = t.uid;
	u->via = "session";
	u->session = t.id;
	u->session_expires_ms = t.expires_ms;
	snprintf(u->csrf, sizeof(u->csrf), "%s", t.csrf);
	return user_complete(d, u);
}

bool identify_http(struct daemon *d, struct MHD_Connection *c, struct user *u)
{
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						       MHD_HTTP_HEADER_AUTHORIZATION);
	char addr[INET6_ADDRSTRLEN];

	identify_client_address(c, addr, sizeof(addr));
	for (size_t i = 0; i < d->cfg.n_trusted_proxies; i++) {
		const char *name;
		struct passwd pw, *p = NULL;
		char buf[4096];

		if (strcmp(d->cfg.trusted_proxies[i], addr))
			continue;
		name = MHD_lookup_connection_value(c, MHD_HEADER_KIND, d->cfg.proxy_user_header);
		if (!name || getpwnam_r(name, &pw, buf, sizeof(buf), &p) != 0 || !p)
			break;
		u->uid = p->pw_uid;
		u->via = "proxy";
		return user_complete(d, u);
	}
	if (auth && !strncasecmp(auth, "Bearer ", 7)) {
		struct token_info t;

		auth += 7;
		while (*auth == ' ')
			auth++;
		if (token_check(d->db, auth, TOKEN_API, &t) < 0)
			return false;
		u->uid = t.uid;
		u->via = "token";
		return user_complete(d, u);
	}
	return session_user(d, c, u);
}

bool identify_csrf_ok(struct MHD_Connection *c, const struct user *u)
{
	const char *sent = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-CSRF-Token");

	return sent && u->csrf[0] && token_equal(sent, u->csrf);
}
