/* daemon_client against a fake nprofd on a socket of its own: the
 * request it writes (method, path, Host, Connection: close, a POST's
 * body and its length), a JSON reply, an API error's sentence, a chunked
 * download with its file name made safe, a refusal written before the
 * request was read (nprofd's gate), and a reply malformed, cut short or
 * missing, each one error line; daemon_escape. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "client/daemon_client.h"
#include "test.h"

/* One connection served by the fake nprofd. */
struct serve {
	int lfd;
	const char *reply;	/* written whole, then the connection is closed */
	size_t reply_len;	/* 0: strlen(reply) */
	int read_request;	/* 0: answer at once, reading nothing (a refusal) */
	char request[1 << 16];	/* what came, head and body */
	size_t request_len;
};

/* The head's end and Content-Length's body, or the close. */
static int request_whole(const struct serve *s)
{
	const char *end = memmem(s->request, s->request_len, "\r\n\r\n", 4);
	const char *cl;

	if (!end)
		return 0;
	cl = strstr(s->request, "Content-Length: ");
	return !cl || cl > end ||
	       s->request_len >= (size_t)(end + 4 - s->request) + strtoul(cl + 16, NULL, 10);
}

static void *serve_one(void *arg)
{
	struct serve *s = arg;
	int fd = accept(s->lfd, NULL, NULL);
	size_t len = s->reply_len ? s->reply_len : strlen(s->reply), off = 0;

	if (fd < 0)
		return NULL;
	while (s->read_request && !request_whole(s) && s->request_len + 1 < sizeof(s->request)) {
		ssize_t n = read(fd, s->request + s->request_len,
				 sizeof(s->request) - 1 - s->request_len);

		if (n <= 0)
			break;
		s->request_len += (size_t)n;
		s->request[s->request_len] = '\0';
	}
	while (off < len) {
		ssize_t n = send(fd, s->reply + off, len - off, MSG_NOSIGNAL);

		if (n <= 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	return NULL;
}

static int lfd;
static struct serve srv;
static struct diag d;

/* An HTTP/1.1 reply of status (e.g. "404 Not Found") with body, its
 * Content-Length counted. */
static const char *reply_of(const char *status, const char *extra, const char *body)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf), "HTTP/1.1 %s\r\n%sContent-Length: %zu\r\n\r\n%s", status, extra,
		 strlen(body), body);
	return buf;
}

/* daemon_call (body NULL: GET) against reply, read_request as above. */
static int call(const char *method, const char *path, const char *body, const char *reply,
		int read_request, json_t **ret_json, long *ret_status)
{
	pthread_t t;
	int r;

	memset(&srv, 0, sizeof(srv));
	srv = (struct serve){ .lfd = lfd, .reply = reply, .read_request = read_request };
	diag_clear(&d);
	pthread_create(&t, NULL, serve_one, &srv);
	r = daemon_call(method, path, body, ret_json, ret_status, &d);
	pthread_join(t, NULL);
	return r;
}

static int download(const char *reply, FILE *out, char *name, size_t len)
{
	pthread_t t;
	int r;

	memset(&srv, 0, sizeof(srv));
	srv = (struct serve){ .lfd = lfd, .reply = reply, .read_request = 1 };
	diag_clear(&d);
	pthread_create(&t, NULL, serve_one, &srv);
	r = daemon_download("/api/v1/artifacts/3", out, NULL, name, len, &d);
	pthread_join(t, NULL);
	return r;
}

int main(void)
{
	char dir[] = "/tmp/daemon_client_test.XXXXXX", sock[128], esc[64], name[64], want[512];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	json_t *j = NULL;
	long status = 0;
	char *big, *text = NULL;
	size_t text_len = 0;
	FILE *out;
	int r;

	if (!mkdtemp(dir))
		return 1;
	snprintf(sock, sizeof(sock), "%s/nprofd.sock", dir);
	if (strlen(sock) >= sizeof(sa.sun_path))
		return 1;
	memcpy(sa.sun_path, sock, strlen(sock));
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 4) < 0)
		return 1;
	setenv(DAEMON_SOCKET_ENV, sock, 1);
	CHECK_STR(daemon_socket_path(), sock, "NPROF_SOCKET names the socket");

	r = call("GET", "/api/v1/workers?pid=12", NULL,
		 "HTTP/1.1 200 OK\r\nContent-Length: 27\r\nContent-Type: application/json\r\n\r\n"
		 "{\"workers\": [{\"pid\": 12}]}\n", 1, &j, &status);
	CHECK(r == 0 && status == 200 && json_array_size(json_object_get(j, "workers")) == 1,
	      "GET: 200 and its JSON");
	json_decref(j);
	j = NULL;
	CHECK(!strncmp(srv.request, "GET /api/v1/workers?pid=12 HTTP/1.1\r\n", 37) &&
	      strstr(srv.request, "\r\nHost: nprofd\r\n") &&
	      strstr(srv.request, "\r\nConnection: close\r\n") &&
	      !strstr(srv.request, "Content-Length"), "GET: the request line, Host, Connection: close, no body");

	r = call("POST", "/api/v1/instances", "{\"worker\": \"1-2\"}",
		 "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
		 "9\r\n{\"id\": 7}\r\n0\r\n\r\n", 1, &j, &status);
	CHECK(r == 0 && status == 201 && json_integer_value(json_object_get(j, "id")) == 7,
	      "POST: 201 and its chunked JSON");
	json_decref(j);
	j = NULL;
	CHECK(!strncmp(srv.request, "POST /api/v1/instances HTTP/1.1\r\n", 33) &&
	      strstr(srv.request, "\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n"
				  "{\"worker\": \"1-2\"}"), "POST: the body with its type and length");
	r = call("POST", "/api/v1/instances/7/stop", NULL,
		 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", 1, NULL, &status);
	CHECK(r == 0 && strstr(srv.request, "\r\nContent-Length: 0\r\n\r\n") &&
	      !strstr(srv.request, "Content-Type"), "POST without a body: Content-Length: 0");
	r = call("DELETE", "/api/v1/tokens/3", NULL, "HTTP/1.1 204 No Content\r\n\r\n", 1, NULL,
		 &status);
	CHECK(r == 0 && status == 204 && !strncmp(srv.request, "DELETE /api/v1/tokens/3 HTTP/1.1", 32),
	      "DELETE: 204, no body");

	r = call("GET", "/api/v1/instances/9", NULL,
		 reply_of("404 Not Found", "", "{\"error\": \"no instance 9\\u001b[2J: see it\"}"),
		 1, &j, &status);
	CHECK(r == -ENOENT && status == 404 && !j, "404: -ENOENT, no JSON");
	CHECK_STR(d.msg, "no instance 9?[2J: see it", "...the server's sentence, its escape as '?'");
	r = call("GET", "/api/v1/x", NULL, "HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n", 1, &j,
		 &status);
	CHECK(r == -EIO && strstr(d.msg, "answered HTTP 500 without saying why"), "500 without a body");
	r = call("GET", "/api/v1/x", NULL, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 1, &j,
		 &status);
	CHECK(r == -EBADMSG && strstr(d.msg, "is not JSON"), "200 with a body that is not JSON: -EBADMSG");

	/* nprofd's gate: the answer written at once, the request never read */
	big = malloc(4 << 20);
	if (!big)
		return 1;
	memset(big, ' ', 4 << 20);
	big[(4 << 20) - 1] = '\0';
	big[0] = '{';
	big[(4 << 20) - 2] = '}';
	r = call("POST", "/api/v1/instances", big,
		 reply_of("429 Too Many Requests", "Content-Type: application/json\r\n"
			  "Connection: close\r\n", "{\"error\":\"root holds 16 connections\"}\n"),
		 0, &j, &status);
	CHECK(r == -EAGAIN && status == 429, "a refusal written before the request was read: its status");
	CHECK_STR(d.msg, "root holds 16 connections", "...and its sentence, not the failed send");
	free(big);

	/* malformed, cut short, missing */
	r = call("GET", "/api/v1/x", NULL, "SSH-2.0-OpenSSH_9.2\r\n", 1, &j, &status);
	CHECK(r == -EIO, "not HTTP: -EIO");
	snprintf(want, sizeof(want), "talking to nprofd at %s failed: a malformed reply: a status "
		 "line that is not HTTP/1.x NNN (SSH-2.0-OpenSSH_9.2); is it nprofd's socket? (see "
		 "its log: journalctl -u nprofd)", sock);
	CHECK_STR(d.msg, want, "...one line naming what it got");
	r = call("GET", "/api/v1/x", NULL, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"a\":", 1,
		 &j, &status);
	CHECK(r == -EIO && strstr(d.msg, "it closed the connection 5 bytes into a body of 100"),
	      "a reply cut short: -EIO, how far it got");
	r = call("GET", "/api/v1/x", NULL, "", 1, &j, &status);
	CHECK(r == -EIO && strstr(d.msg, "it closed the connection without a reply"),
	      "no reply at all: -EIO");
	CHECK(daemon_call("GET", "/api/v1/a b", NULL, &j, &status, &d) == -EINVAL,
	      "a path with a space is not sent");

	/* a download */
	out = open_memstream(&text, &text_len);
	r = download("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
		     "Content-Disposition: attachment; filename=\"../..\\x/.cpu-3.html\"\r\n\r\n"
		     "6\r\n<html>\r\n7\r\n</html>\r\n0\r\n\r\n", out, name, sizeof(name));
	fclose(out);
	CHECK(r == 0 && text_len == 13 && !memcmp(text, "<html></html>", 13),
	      "a chunked download, written as it came");
	CHECK_STR(name, "cpu-3.html", "its file name: no directory, no leading dot");
	free(text);
	text = NULL;
	out = open_memstream(&text, &text_len);
	r = download("HTTP/1.1 410 Gone\r\nContent-Length: 29\r\n\r\n{\"error\": \"the process left\"}",
		     out, name, sizeof(name));
	fclose(out);
	CHECK(r == -ESRCH && text_len == 0 && !strcmp(d.msg, "the process left"),
	      "a download's API error: its sentence, nothing written");
	free(text);

	CHECK(daemon_escape("a b/c~-._%\xc3\xa9", esc, sizeof(esc)) == 0, "daemon_escape");
	CHECK_STR(esc, "a%20b%2Fc~-._%25%C3%A9", "...RFC 3986's unreserved kept, the rest %%XX");
	CHECK(daemon_escape("abc", esc, 4) == 0 && daemon_escape("abcd", esc, 4) == -ENAMETOOLONG &&
	      daemon_escape("a/", esc, 4) == -ENAMETOOLONG, "...-ENAMETOOLONG when it does not fit");

	close(lfd);
	unlink(sock);
	snprintf(sock, sizeof(sock), "%s/missing.sock", dir);
	setenv(DAEMON_SOCKET_ENV, sock, 1);
	diag_clear(&d);
	r = daemon_call("GET", "/api/v1/whoami", NULL, &j, &status, &d);
	CHECK(r == -ENOENT && strstr(d.msg, "nprofd is not running here (no socket at"),
	      "no socket: not running");
	if (r != -ENOENT)
		printf("#   %d %s\n", r, d.msg);
	rmdir(dir);
	return test_done();
}
