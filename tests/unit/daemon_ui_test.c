/* ui: "/" and "/ui/NAME" resolve to the embedded files with their
 * content types; every file of src/daemon/ui/ is served, as it is, with
 * the type its name says (an ES module must come as text/javascript or
 * the browser refuses it); unknown names, other paths and "../" tricks
 * do not, and leave the out-parameters alone; the page loads its one
 * script, main.js, by path as a module (not the form scripts/embed would
 * inline) and has no inline script or style attribute, which nprofd's
 * CSP would block. */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/door/ui.h"
#include "test.h"

static bool has(const char *path, const char *type, const char *text)
{
	const unsigned char *data = NULL;
	const char *t = NULL;
	size_t len = 0;

	if (!ui_file(path, &data, &len, &t))
		return false;
	return data && len > 0 && len == strlen((const char *)data) && t && !strcmp(t, type) &&
	       strstr((const char *)data, text);
}

static bool none(const char *path)
{
	const unsigned char *data = (const unsigned char *)"x";
	const char *t = "y";
	size_t len = 7;

	return !ui_file(path, &data, &len, &t) && data[0] == 'x' && t[0] == 'y' && len == 7;
}

static bool ends(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && !strcmp(s + n - t, tail);
}

/* Whether /ui/NAME serves the file SRC/src/daemon/ui/NAME byte for byte,
 * with the type of its extension. */
static bool served_as_is(const char *src, const char *name)
{
	const char *type = ends(name, ".js")   ? "text/javascript; charset=utf-8" :
			   ends(name, ".css")  ? "text/css; charset=utf-8" :
			   ends(name, ".html") ? "text/html; charset=utf-8" : "?";
	const unsigned char *data = NULL;
	const char *t = NULL;
	char path[4096], *text;
	size_t len = 0, got;
	bool same;
	FILE *f;

	snprintf(path, sizeof(path), "/ui/%s", name);
	if (!ui_file(path, &data, &len, &t) || strcmp(t, type))
		return false;
	snprintf(path, sizeof(path), "%s/src/daemon/ui/%s", src, name);
	f = fopen(path, "r");
	if (!f)
		return false;
	text = malloc(len + 2);
	got = text ? fread(text, 1, len + 1, f) : 0;
	fclose(f);
	same = text && got == len && !memcmp(text, data, len);
	free(text);
	return same;
}

/* Every file of src/daemon/ui/ is served (ui.c lists them by hand). */
static void check_every_file(void)
{
	const char *src = getenv("NPROF_SRC") ? getenv("NPROF_SRC") : ".";
	char path[4096];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/src/daemon/ui", src);
	d = opendir(path);
	CHECK(d != NULL, "reads %s", path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		n++;
		CHECK(served_as_is(src, e->d_name), "/ui/%s is src/daemon/ui/%s, as it is, with its type",
		      e->d_name, e->d_name);
	}
	closedir(d);
	CHECK(n > 10, "src/daemon/ui/ holds the page, its style and its modules (%d files)", n);
}

int main(void)
{
	const unsigned char *html;
	const char *t;
	size_t len;

	CHECK(has("/", "text/html; charset=utf-8", "<!DOCTYPE html>"), "/ is index.html, text/html");
	CHECK(has("/ui/index.html", "text/html; charset=utf-8", "id=\"signin\""), "/ui/index.html too");
	CHECK(has("/ui/main.js", "text/javascript; charset=utf-8", "/api/v1/session"),
	      "/ui/main.js, text/javascript, asks for the session through the API");
	CHECK(has("/ui/api.js", "text/javascript; charset=utf-8", "X-CSRF-Token"),
	      "/ui/api.js sends the CSRF token");
	CHECK(has("/ui/workers.js", "text/javascript; charset=utf-8", "/api/v1/workers"), "/ui/workers.js");
	CHECK(has("/ui/instance_table.js", "text/javascript; charset=utf-8", "/api/v1/instances"),
	      "/ui/instance_table.js");
	CHECK(has("/ui/hosts.js", "text/javascript; charset=utf-8", "/api/v1/hosts"), "/ui/hosts.js");
	CHECK(has("/ui/app.css", "text/css; charset=utf-8", "table.grid"), "/ui/app.css, text/css");
	check_every_file();

	CHECK(none("/ui/nope.js"), "an unknown name: nothing");
	CHECK(none("/ui/"), "/ui/: nothing");
	CHECK(none("/ui"), "/ui: nothing");
	CHECK(none(""), "the empty path: nothing");
	CHECK(none(NULL), "NULL: nothing");
	CHECK(none("/main.js"), "a file outside /ui/: nothing");
	CHECK(none("/index.html/"), "/index.html/: nothing");
	CHECK(none("/ui/../ui/main.js"), "/ui/../ui/main.js: nothing");
	CHECK(none("/ui/../../etc/passwd"), "/ui/../../etc/passwd: nothing");
	CHECK(none("/ui/./main.js"), "/ui/./main.js: nothing");
	CHECK(none("/ui//main.js"), "/ui//main.js: nothing");
	CHECK(none("/ui/%2e%2e/main.js"), "/ui/%%2e%%2e/main.js: nothing");
	CHECK(none("/ui/main.js/"), "/ui/main.js/: nothing");
	CHECK(none("/ui/main.js\n"), "a name with a newline: nothing");
	CHECK(none("/ui/MAIN.JS"), "names are exact: /ui/MAIN.JS is nothing");
	CHECK(none("/api/v1/workers"), "an API path: nothing");

	CHECK(ui_file("/", &html, &len, &t), "index.html again");
	CHECK(strstr((const char *)html, "<script type=\"module\" src=\"/ui/main.js\"></script>") != NULL,
	      "index.html loads /ui/main.js by path, as a module");
	CHECK(strstr((const char *)html, "<script>") == NULL && strstr((const char *)html, "<style") == NULL &&
		      strstr((const char *)html, " style=") == NULL && strstr((const char *)html, " onclick") == NULL,
	      "index.html has no inline script, style element or attribute (CSP)");
	return test_done();
}
