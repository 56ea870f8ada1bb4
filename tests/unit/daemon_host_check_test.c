/* daemon_host_check: the Host and Origin rules (src/daemon/door/host_check.c)
 * as a DNS-rebinding page and a cross-site page would try them: only
 * the connection's own address, localhost on loopback and the names
 * nprofd was given pass; an Origin must be nprofd's own page. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "daemon/core/config.h"
#include "daemon/door/host_check.h"
#include "test.h"

static struct sockaddr_storage v4(const char *ip)
{
	struct sockaddr_storage ss = { .ss_family = AF_INET };

	inet_pton(AF_INET, ip, &((struct sockaddr_in *)&ss)->sin_addr);
	return ss;
}

static struct sockaddr_storage v6(const char *ip)
{
	struct sockaddr_storage ss = { .ss_family = AF_INET6 };

	inet_pton(AF_INET6, ip, &((struct sockaddr_in6 *)&ss)->sin6_addr);
	return ss;
}

int main(void)
{
	static struct daemon_config cfg;
	static struct host_names h;
	struct sockaddr_storage lo = v4("127.0.0.1"), lan = v4("10.1.2.3"), lo6 = v6("::1"),
				mapped = v6("::ffff:127.0.0.5");

	config_defaults(&cfg);
	snprintf(cfg.host_names[0], sizeof(cfg.host_names[0]), "Prof.Example.COM");
	snprintf(cfg.host_names[1], sizeof(cfg.host_names[1]), "[fd00::7]");
	cfg.n_host_names = 2;
	snprintf(cfg.cluster_url, sizeof(cfg.cluster_url), "https://node-b.internal:9700/");
	host_names_init(&h, &cfg);

	CHECK(host_allowed(&h, NULL, &lan), "no Host (HTTP/1.0): no browser, allowed");
	CHECK(host_allowed(&h, "10.1.2.3:9700", &lan) && host_allowed(&h, "10.1.2.3", &lan),
	      "the address the client connected to, with or without a port");
	CHECK(!host_allowed(&h, "10.1.2.4:9700", &lan), "another address is not ours");
	CHECK(host_allowed(&h, "localhost:9700", &lo) && host_allowed(&h, "app.localhost", &lo) &&
	      host_allowed(&h, "LOCALHOST", &lo6) && host_allowed(&h, "localhost", &mapped),
	      "localhost and *.localhost on loopback (v4, v6, v4-mapped)");
	CHECK(!host_allowed(&h, "localhost:9700", &lan), "localhost on a LAN address: not ours");
	CHECK(!host_allowed(&h, "evil.example.net:9700", &lo) &&
	      !host_allowed(&h, "evil.example.net", &lan),
	      "a rebinding page's own name is refused, even on loopback");
	CHECK(host_allowed(&h, "prof.example.com", &lan) && host_allowed(&h, "PROF.example.com.:80", &lan),
	      "a host_names name, in any case, fully qualified or not");
	CHECK(host_allowed(&h, "[fd00::7]:9700", &lan) && host_allowed(&h, "[FD00:0:0::7]", &lan),
	      "a host_names address, written alike or not");
	CHECK(host_allowed(&h, "node-b.internal", &lan), "the host of [cluster] url");
	CHECK(!host_allowed(&h, "prof.example.com:", &lan) && !host_allowed(&h, "prof.example.com:123456", &lan) &&
	      !host_allowed(&h, "prof.example.com/x", &lan) && !host_allowed(&h, "[fd00::7", &lan) &&
	      !host_allowed(&h, "", &lan) && !host_allowed(&h, ":80", &lan),
	      "a malformed Host is refused");
	CHECK(!host_allowed(&h, "127.0.0.1", NULL) && host_allowed(&h, "prof.example.com", NULL),
	      "without the connection's address, only the names given pass");

	CHECK(origin_allowed(NULL, "x", false), "no Origin: no browser acting for a page");
	CHECK(origin_allowed("http://10.1.2.3:9700", "10.1.2.3:9700", false),
	      "nprofd's own page over HTTP");
	CHECK(!origin_allowed("http://10.1.2.3:9700", "10.1.2.3:9700", true),
	      "over TLS, an http:// page is another origin");
	CHECK(origin_allowed("https://prof.example.com", "prof.example.com", true),
	      "nprofd's own page over HTTPS");
	CHECK(!origin_allowed("http://evil.example.net", "10.1.2.3:9700", false) &&
	      !origin_allowed("http://10.1.2.3:9700", NULL, false) &&
	      !origin_allowed("null", "10.1.2.3", false),
	      "another site's page, a request without Host, and an opaque origin are refused");
	return test_done();
}
