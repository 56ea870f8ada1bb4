/* host_check: the Host and Origin rules of host_check.h. */
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon/door/host_check.h"

/* A name for host_allowed, lower case, when it is one. */
static void add_name(struct host_names *h, const char *name, size_t len)
{
	char *dst = h->name[h->n];

	if (name[0] == '[' && len > 2 && name[len - 1] == ']') {
		name++;
		len -= 2;
	}
	if (h->n == HOST_NAMES_MAX || len == 0 || len >= CONFIG_HOST_MAX)
		return;
	for (size_t i = 0; i < len; i++)
		dst[i] = (char)tolower((unsigned char)name[i]);
	dst[len] = '\0';
	if (config_valid_host(dst))
		h->n++;
}

void host_names_init(struct host_names *h, const struct daemon_config *cfg)
{
	char host[256] = "";
	const char *u = strstr(cfg->cluster_url, "://");

	h->n = 0;
	for (size_t i = 0; i < cfg->n_host_names; i++)
		add_name(h, cfg->host_names[i], strlen(cfg->host_names[i]));
	if (gethostname(host, sizeof(host) - 1) == 0)
		add_name(h, host, strlen(host));
	if (cfg->cluster_name[0])
		add_name(h, cfg->cluster_name, strlen(cfg->cluster_name));
	if (u) {
		u += 3;
		add_name(h, u, u[0] == '[' ? strcspn(u, "]") + 1 : strcspn(u, ":/"));
	}
}

/* What a Host header names, without its port or brackets, in lower case,
 * into buf; false when it is not HOST[:PORT]. */
static bool host_name_of(const char *host, char *buf, size_t len)
{
	const char *end;
	size_t n;

	if (host[0] == '[') {
		host++;
		end = strchr(host, ']');
		if (!end)
			return false;
		n = (size_t)(end - host);
		end++;
	} else {
		end = host + strcspn(host, ":");
		n = (size_t)(end - host);
	}
	if (*end == ':') {
		size_t digits = strspn(end + 1, "0123456789");

		if (digits == 0 || digits > 5 || end[1 + digits])
			return false;
	} else if (*end) {
		return false;
	}
	if (n > 0 && host[n - 1] == '.') /* "name.": the same name, fully qualified */
		n--;
	if (n == 0 || n >= len)
		return false;
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)tolower((unsigned char)host[i]);
	buf[n] = '\0';
	return config_valid_host(buf);
}

/* Whether two names are the same IP address written alike or not. */
static bool same_address(const char *a, const char *b)
{
	unsigned char x[16], y[16];

	if (inet_pton(AF_INET, a, x) == 1)
		return inet_pton(AF_INET, b, y) == 1 && !memcmp(x, y, 4);
	return inet_pton(AF_INET6, a, x) == 1 && inet_pton(AF_INET6, b, y) == 1 &&
	       !memcmp(x, y, 16);
}

bool host_allowed(const struct host_names *h, const char *host,
		  const struct sockaddr_storage *local)
{
	char name[CONFIG_HOST_MAX], addr[INET6_ADDRSTRLEN] = "";
	bool loopback = false;
	size_t n;

	if (!host)
		return true;
	if (!host_name_of(host, name, sizeof(name)))
		return false;
	if (local && local->ss_family == AF_INET) {
		const struct in_addr *a = &((const struct sockaddr_in *)local)->sin_addr;

		inet_ntop(AF_INET, a, addr, sizeof(addr));
		loopback = (ntohl(a->s_addr) >> 24) == 127;
	} else if (local && local->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)local)->sin6_addr;

		inet_ntop(AF_INET6, a, addr, sizeof(addr));
		loopback = IN6_IS_ADDR_LOOPBACK(a) ||
			   (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	if (addr[0] && same_address(name, addr))
		return true;
	n = strlen(name);
	if (loopback && (!strcmp(name, "localhost") ||
			 (n > 10 && !strcmp(name + n - 10, ".localhost"))))
		return true;
	for (size_t i = 0; i < h->n; i++)
		if (!strcmp(name, h->name[i]) || same_address(name, h->name[i]))
			return true;
	return false;
}

bool origin_allowed(const char *origin, const char *host, bool tls)
{
	const char *scheme = tls ? "https://" : "http://";

	if (!origin)
		return true;
	return host && !strncmp(origin, scheme, strlen(scheme)) &&
	       !strcmp(origin + strlen(scheme), host);
}
