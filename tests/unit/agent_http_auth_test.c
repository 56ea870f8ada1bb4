/* agent_http_auth: the HTTP endpoint's token (src/agent/http_auth.c):
 * NPROF_HTTP_AUTH's values, the token file (where, mode, content, gone
 * at free, replaced when stale, left alone by a forked child), the
 * directories it refuses (a symlink, another's, writable by others), and
 * which requests carry the token; and through the C API, the file's life
 * over nprof_http_start and nprof_http_stop. The endpoint end to end is
 * tests/integration/agent_http.sh. */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/http_auth.h"
#include "nprof.h"
#include "test.h"

static char root[64];

static bool is_hex64(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");

	return n == HTTP_TOKEN_CHARS && s[n] == '\0';
}

static void test_mode(void)
{
	struct diag d;
	bool open = true;

	diag_clear(&d);
	CHECK(http_auth_mode(NULL, &open, &d) == 0 && !open, "unset: a token");
	open = true;
	CHECK(http_auth_mode("", &open, &d) == 0 && !open, "empty: a token");
	open = true;
	CHECK(http_auth_mode("token", &open, &d) == 0 && !open, "token: a token");
	CHECK(http_auth_mode("none", &open, &d) == 0 && open, "none: open");
	CHECK(http_auth_mode("None", &open, &d) == -EINVAL && strstr(d.msg, "NPROF_HTTP_AUTH=None") &&
		      strstr(d.msg, "token") && strstr(d.msg, "none"),
	      "another value refused, naming both: %s", d.msg);
}

/* XDG_RUNTIME_DIR=root/NAME, made 0700. */
static void use_xdg(const char *name, char *ret_dir, size_t len)
{
	snprintf(ret_dir, len, "%s/%s", root, name);
	mkdir(ret_dir, 0700);
	setenv("XDG_RUNTIME_DIR", ret_dir, 1);
}

static void test_file(void)
{
	char xdg[128], want[PATH_MAX], line[128] = "";
	struct http_auth *a, *b;
	struct diag d;
	struct stat st;
	pid_t child;
	int fd, status = -1;
	ssize_t n;

	diag_clear(&d);
	use_xdg("xdg", xdg, sizeof(xdg));
	a = http_auth_new(false, &d);
	snprintf(want, sizeof(want), "%s/nprof/http-%d.token", xdg, (int)getpid());
	CHECK(a && !strcmp(a->path, want), "the token in $XDG_RUNTIME_DIR/nprof/http-PID.token (%s)",
	      a ? a->path : d.msg);
	if (!a)
		return;
	CHECK(is_hex64(a->token), "64 hex digits");
	CHECK(stat(a->path, &st) == 0 && (st.st_mode & 0777) == 0600 && st.st_uid == geteuid(),
	      "mode 0600, the user's");
	snprintf(want, sizeof(want), "%s/nprof", xdg);
	CHECK(stat(want, &st) == 0 && (st.st_mode & 0777) == 0700, "its directory made 0700");
	fd = open(a->path, O_RDONLY);
	n = fd >= 0 ? read(fd, line, sizeof(line) - 1) : -1;
	if (fd >= 0)
		close(fd);
	CHECK(n == HTTP_TOKEN_CHARS + 1 && line[HTTP_TOKEN_CHARS] == '\n' &&
		      !strncmp(line, a->token, HTTP_TOKEN_CHARS),
	      "the file holds the token and a newline");

	/* A forked child's exit handler must leave the parent's file. */
	child = fork();
	if (child == 0) {
		http_auth_unlink(a);
		_exit(0);
	}
	waitpid(child, &status, 0);
	CHECK(access(a->path, F_OK) == 0, "a forked child leaves the parent's file");

	/* A second start with this pid (the first was killed): replaced. */
	b = http_auth_new(false, &d);
	CHECK(b && strcmp(b->token, a->token) && !strcmp(b->path, a->path),
	      "a stale file with this pid is replaced, with a new token");
	free(a); /* its file is b's now */
	snprintf(want, sizeof(want), "%s", b ? b->path : "");
	http_auth_free(b);
	CHECK(access(want, F_OK) < 0 && errno == ENOENT, "gone at free");
	unsetenv("XDG_RUNTIME_DIR");
}

static void test_refused(void)
{
	char xdg[128], path[256];
	struct http_auth *a;
	struct diag d;

	/* nprof a symlink to a directory elsewhere. */
	use_xdg("link", xdg, sizeof(xdg));
	snprintf(path, sizeof(path), "%s/elsewhere", root);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/nprof", xdg);
	CHECK(symlink("../elsewhere", path) == 0, "made a symlink");
	diag_clear(&d);
	a = http_auth_new(false, &d);
	CHECK(!a && errno == ENOTDIR && strstr(d.msg, "is a symlink or not a directory") &&
		      strstr(d.msg, "XDG_RUNTIME_DIR"),
	      "nprof a symlink: refused, saying what to do (%s)", d.msg);
	http_auth_free(a);
	snprintf(path, sizeof(path), "%s/elsewhere/http-%d.token", root, (int)getpid());
	CHECK(access(path, F_OK) < 0, "nothing written through it");

	/* nprof writable by others. */
	use_xdg("wide", xdg, sizeof(xdg));
	snprintf(path, sizeof(path), "%s/nprof", xdg);
	mkdir(path, 0700);
	chmod(path, 0777);
	diag_clear(&d);
	a = http_auth_new(false, &d);
	CHECK(!a && strstr(d.msg, "writable by others (mode 777)"), "nprof mode 777: refused (%s)",
	      d.msg);
	http_auth_free(a);

	/* nprof another user's (as root only: chown). */
	if (geteuid() == 0) {
		use_xdg("theirs", xdg, sizeof(xdg));
		snprintf(path, sizeof(path), "%s/nprof", xdg);
		mkdir(path, 0700);
		CHECK(chown(path, 65534, 65534) == 0, "chown nobody");
		diag_clear(&d);
		a = http_auth_new(false, &d);
		CHECK(!a && strstr(d.msg, "belongs to uid 65534"), "nprof nobody's: refused (%s)",
		      d.msg);
		http_auth_free(a);
	}

	/* Open: no file at all. */
	use_xdg("open", xdg, sizeof(xdg));
	a = http_auth_new(true, &d);
	snprintf(path, sizeof(path), "%s/nprof", xdg);
	CHECK(a && a->open && !a->path[0] && access(path, F_OK) < 0, "open: nothing written");
	http_auth_free(a);
	unsetenv("XDG_RUNTIME_DIR");
}

static void test_check(void)
{
	struct http_auth a = { 0 };
	char h[128], wrong[HTTP_TOKEN_CHARS + 2];

	memset(a.token, 'a', HTTP_TOKEN_CHARS);
	a.token[HTTP_TOKEN_CHARS - 1] = 'f';
	snprintf(wrong, sizeof(wrong), "%s", a.token);
	wrong[0] = 'b';

	CHECK(http_auth_check(&a, NULL, NULL) == HTTP_AUTH_MISSING, "nothing sent: missing");
	snprintf(h, sizeof(h), "Bearer %s", a.token);
	CHECK(http_auth_check(&a, h, NULL) == HTTP_AUTH_OK, "Bearer TOKEN");
	snprintf(h, sizeof(h), "  bearer \t%s  ", a.token);
	CHECK(http_auth_check(&a, h, NULL) == HTTP_AUTH_OK, "the scheme in any case, blanks around");
	CHECK(http_auth_check(&a, NULL, a.token) == HTTP_AUTH_OK, "?token=TOKEN");
	CHECK(http_auth_check(&a, "Bearer x", a.token) == HTTP_AUTH_OK, "either one right is enough");
	CHECK(http_auth_check(&a, NULL, wrong) == HTTP_AUTH_WRONG, "another token: wrong");
	CHECK(http_auth_check(&a, NULL, "") == HTTP_AUTH_WRONG, "an empty ?token=: wrong");
	wrong[0] = a.token[0];
	wrong[HTTP_TOKEN_CHARS - 1] = '\0';
	CHECK(http_auth_check(&a, NULL, wrong) == HTTP_AUTH_WRONG, "the token less its last digit");
	snprintf(h, sizeof(h), "%sf", a.token);
	CHECK(http_auth_check(&a, NULL, h) == HTTP_AUTH_WRONG, "the token and one more digit");
	snprintf(h, sizeof(h), "Basic %s", a.token);
	CHECK(http_auth_check(&a, h, NULL) == HTTP_AUTH_WRONG, "another scheme: wrong");
	snprintf(h, sizeof(h), "Bearer%s", a.token);
	CHECK(http_auth_check(&a, h, NULL) == HTTP_AUTH_WRONG, "no blank after Bearer: wrong");
	snprintf(h, sizeof(h), "Bearer %s x", a.token);
	CHECK(http_auth_check(&a, h, NULL) == HTTP_AUTH_WRONG, "a second word: wrong");
	a.open = true;
	CHECK(http_auth_check(&a, NULL, NULL) == HTTP_AUTH_OK, "open: anyone");
}

static void test_api(void)
{
	char xdg[128], path[PATH_MAX], want[PATH_MAX], first[PATH_MAX] = "", addr[64];
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t slen = sizeof(sin);
	int err, fd;

	use_xdg("api", xdg, sizeof(xdg));
	CHECK(nprof_http_token_path(path, sizeof(path)) == -ENOENT, "token path: -ENOENT when not serving");
	err = nprof_http_start("127.0.0.1:0");
	CHECK(err == 0, "nprof_http_start(127.0.0.1:0) (%s)", nprof_last_error());
	if (err)
		return;
	snprintf(want, sizeof(want), "%s/nprof/http-%d.token", xdg, (int)getpid());
	CHECK(nprof_http_token_path(path, sizeof(path)) == 0 && !strcmp(path, want),
	      "nprof_http_token_path: %s", path);
	CHECK(access(want, R_OK) == 0, "the file is there while it serves");
	CHECK(nprof_http_token_path(path, 8) == -ERANGE, "a short buffer: -ERANGE");
	snprintf(first, sizeof(first), "%s", want);
	CHECK(nprof_http_stop() == 0, "nprof_http_stop");
	CHECK(access(first, F_OK) < 0 && errno == ENOENT, "the file is gone at stop");
	CHECK(nprof_http_token_path(path, sizeof(path)) == -ENOENT, "token path: -ENOENT after stop");

	/* A port this process listens on: in use, by this very process. */
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 && listen(fd, 1) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sin, &slen) == 0) {
		snprintf(addr, sizeof(addr), "127.0.0.1:%u", ntohs(sin.sin_port));
		err = nprof_http_start(addr);
		snprintf(want, sizeof(want), "address in use by PID %d (agent_http_auth), this process; "
			 "choose another port or 127.0.0.1:0", (int)getpid());
		CHECK(err == -EADDRINUSE && !strcmp(nprof_last_error(), want),
		      "a port in use names its holder: %s", nprof_last_error());
		CHECK(access(first, F_OK) < 0, "no token file left by the failed start");
	} else {
		CHECK(0, "a listening socket on 127.0.0.1:0: %s", strerror(errno));
	}
	if (fd >= 0)
		close(fd);

	setenv("NPROF_HTTP_AUTH", "none", 1);
	CHECK(nprof_http_start("127.0.0.1:0") == 0 && nprof_http_token_path(path, sizeof(path)) == 0 &&
		      path[0] == '\0',
	      "NPROF_HTTP_AUTH=none: served, token path \"\"");
	nprof_http_stop();
	setenv("NPROF_HTTP_AUTH", "bogus", 1);
	CHECK(nprof_http_start("127.0.0.1:0") == -EINVAL &&
		      strstr(nprof_last_error(), "NPROF_HTTP_AUTH=bogus"),
	      "NPROF_HTTP_AUTH=bogus: -EINVAL (%s)", nprof_last_error());
	unsetenv("NPROF_HTTP_AUTH");
	unsetenv("XDG_RUNTIME_DIR");
}

int main(void)
{
	char cmd[96];

	snprintf(root, sizeof(root), "/tmp/nprof-auth-test.XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	test_mode();
	test_file();
	test_refused();
	test_check();
	setenv("NPROF_QUIET", "1", 1);
	test_api();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", root);
	return test_done();
}
