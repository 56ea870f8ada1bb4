/* http_auth: the HTTP endpoint's token (http_auth.h). The token file is
 * made with openat(O_EXCL | O_NOFOLLOW) in a directory opened with
 * O_NOFOLLOW and checked through its descriptor, so that nothing another
 * user controls (a symlink in /tmp, a directory of theirs) can redirect
 * or expose it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/http_auth.h"

int http_auth_mode(const char *value, bool *ret_open, struct diag *d)
{
	if (!value || !*value || !strcmp(value, "token")) {
		*ret_open = false;
		return 0;
	}
	if (!strcmp(value, "none")) {
		*ret_open = true;
		return 0;
	}
	return diag_set(d, -EINVAL,
			"NPROF_HTTP_AUTH=%s: use token (the default: requests need a token only "
			"this process's owner can read) or none (open to every local user)",
			value);
}

static int make_token(char *ret_hex)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char raw[HTTP_TOKEN_BYTES];
	size_t got = 0;

	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(raw); i++) {
		ret_hex[2 * i] = digits[raw[i] >> 4];
		ret_hex[2 * i + 1] = digits[raw[i] & 15];
	}
	ret_hex[HTTP_TOKEN_CHARS] = '\0';
	explicit_bzero(raw, sizeof(raw));
	return 0;
}

/* Opens path as a directory when it exists and belongs to uid, else -1. */
static int open_if_owned(const char *path, uid_t uid)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || st.st_uid != uid) {
		close(fd);
		return -1;
	}
	return fd;
}

#define FIX "remove it, or set XDG_RUNTIME_DIR to a directory of this user's"

/* Opens name under parent_fd, made 0700 first when missing, as a
 * directory of uid's own: not a symlink, uid's, not writable by group or
 * others. where is its path, for messages. */
static int open_own_dir(int parent_fd, const char *name, const char *where, uid_t uid,
			struct diag *d)
{
	struct stat st;
	int fd, err;

	if (mkdirat(parent_fd, name, 0700) < 0 && errno != EEXIST)
		return diag_set(d, -errno, "cannot make %s for the HTTP token: %s; %s", where,
				strerror(errno), FIX);
	fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (err == -ELOOP || err == -ENOTDIR)
			return diag_set(d, -ENOTDIR, "%s is a symlink or not a directory: the HTTP "
					"token is not written through it; %s", where, FIX);
		return diag_set(d, err, "cannot open %s for the HTTP token: %s; %s", where,
				strerror(-err), FIX);
	}
	if (fstat(fd, &st) < 0) {
		err = diag_set(d, -errno, "cannot stat %s: %s", where, strerror(errno));
	} else if (st.st_uid != uid) {
		err = diag_set(d, -EPERM, "%s belongs to uid %u, not to this process's user (uid "
			       "%u): the HTTP token is not written there; %s", where,
			       (unsigned)st.st_uid, (unsigned)uid, FIX);
	} else if (st.st_mode & 022) {
		err = diag_set(d, -EPERM, "%s is writable by others (mode %03o): the HTTP token "
			       "is not written there; %s", where, (unsigned)(st.st_mode & 0777), FIX);
	} else {
		return fd;
	}
	close(fd);
	return err;
}

/* The token's directory, opened: $XDG_RUNTIME_DIR/nprof when that is the
 * user's, else /run/user/UID/nprof when that exists and is the user's,
 * else /run/nprof for root, else /tmp/nprof-UID. Its path in ret_path. */
static int token_dir(uid_t uid, char *ret_path, size_t len, struct diag *d)
{
	const char *xdg = secure_getenv("XDG_RUNTIME_DIR");
	char base[PATH_MAX - 64], name[24] = "nprof";
	int base_fd = -1, fd;

	if (xdg && xdg[0] == '/' && strlen(xdg) < sizeof(base) &&
	    (base_fd = open_if_owned(xdg, uid)) >= 0) {
		size_t n = strlen(xdg);

		while (n > 1 && xdg[n - 1] == '/')
			n--;
		snprintf(base, sizeof(base), "%.*s", (int)n, xdg);
	}
	if (base_fd < 0) {
		snprintf(base, sizeof(base), "/run/user/%u", (unsigned)uid);
		base_fd = open_if_owned(base, uid);
	}
	if (base_fd < 0 && uid == 0) {
		snprintf(base, sizeof(base), "/run");
		base_fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (base_fd < 0) {
		snprintf(base, sizeof(base), "/tmp");
		snprintf(name, sizeof(name), "nprof-%u", (unsigned)uid);
		base_fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (base_fd < 0)
			return diag_set(d, -errno, "cannot open /tmp: %s", strerror(errno));
	}
	snprintf(ret_path, len, "%s%s%s", base, strcmp(base, "/") ? "/" : "", name);
	fd = open_own_dir(base_fd, name, ret_path, uid, d);
	close(base_fd);
	return fd;
}

static int write_token(int dir_fd, const char *name, const char *path, const char *token,
		       struct diag *d)
{
	char line[HTTP_TOKEN_CHARS + 1];
	int fd, err = 0;

	fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST) {
		/* Left by an earlier process with this pid that did not exit
		 * normally: the directory is this user's alone. */
		if (unlinkat(dir_fd, name, 0) == 0 || errno == ENOENT)
			fd = openat(dir_fd, name,
				    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	if (fd < 0)
		return diag_set(d, -errno, "cannot create %s: %s", path, strerror(errno));
	memcpy(line, token, HTTP_TOKEN_CHARS);
	line[HTTP_TOKEN_CHARS] = '\n';
	/* The umask may have taken the owner's read bit. */
	errno = EIO; /* a short write sets none */
	if (fchmod(fd, 0600) < 0 || write(fd, line, sizeof(line)) != (ssize_t)sizeof(line))
		err = diag_set(d, -errno, "cannot write %s: %s", path, strerror(errno));
	if (close(fd) < 0 && err == 0)
		err = diag_set(d, -errno, "cannot write %s: %s", path, strerror(errno));
	explicit_bzero(line, sizeof(line));
	if (err < 0)
		unlinkat(dir_fd, name, 0);
	return err;
}

struct http_auth *http_auth_new(bool open, struct diag *d)
{
	struct http_auth *a = calloc(1, sizeof(*a));
	char dir[PATH_MAX - 32], name[32];
	int dir_fd, err;

	if (!a) {
		diag_set(d, -ENOMEM, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	a->open = open;
	a->pid = getpid();
	if (open)
		return a;
	err = make_token(a->token);
	if (err < 0) {
		diag_set(d, err, "cannot make the HTTP token: getrandom: %s", strerror(-err));
		goto fail;
	}
	dir_fd = token_dir(geteuid(), dir, sizeof(dir), d);
	if (dir_fd < 0) {
		err = dir_fd;
		goto fail;
	}
	snprintf(name, sizeof(name), "http-%d.token", (int)a->pid);
	snprintf(a->path, sizeof(a->path), "%s/%s", dir, name);
	err = write_token(dir_fd, name, a->path, a->token, d);
	close(dir_fd);
	if (err == 0)
		return a;
fail:
	explicit_bzero(a, sizeof(*a));
	free(a);
	errno = -err;
	return NULL;
}

void http_auth_unlink(struct http_auth *a)
{
	/* path stays: connection threads still name it in their 403s. */
	if (!a || !a->path[0] || a->removed || a->pid != getpid())
		return;
	unlink(a->path);
	a->removed = true;
}

void http_auth_free(struct http_auth *a)
{
	if (!a)
		return;
	http_auth_unlink(a);
	explicit_bzero(a, sizeof(*a));
	free(a);
}

/* Constant time in the token's content; its length is no secret. */
static bool same_token(const char *ours, const char *given, size_t n)
{
	unsigned char diff = n != HTTP_TOKEN_CHARS;

	for (size_t i = 0; i < HTTP_TOKEN_CHARS; i++)
		diff |= (unsigned char)ours[i] ^ (unsigned char)(i < n ? given[i] : 0);
	return diff == 0;
}

/* "Bearer TOKEN", the scheme in any case, blanks around the token. */
static bool bearer_ok(const char *ours, const char *h)
{
	size_t n;

	h += strspn(h, " \t");
	if (strncasecmp(h, "Bearer", 6) || (h[6] != ' ' && h[6] != '\t'))
		return false;
	h += 6 + strspn(h + 6, " \t");
	n = strcspn(h, " \t");
	if (h[n + strspn(h + n, " \t")])
		return false; /* more than one word */
	return same_token(ours, h, n);
}

enum http_auth_verdict http_auth_check(const struct http_auth *a, const char *authorization,
				       const char *query)
{
	bool ok = false;

	if (a->open)
		return HTTP_AUTH_OK;
	if (!authorization && !query)
		return HTTP_AUTH_MISSING;
	if (authorization && bearer_ok(a->token, authorization))
		ok = true;
	if (query && same_token(a->token, query, strlen(query)))
		ok = true;
	return ok ? HTTP_AUTH_OK : HTTP_AUTH_WRONG;
}
