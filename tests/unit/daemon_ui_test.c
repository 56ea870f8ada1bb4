/* ui: "/" and "/ui/NAME" resolve to the embedded files with their
 * content types; unknown names, other paths and "../" tricks do not, and
 * leave the out-parameters alone; the page references its scripts by
 * path (not the form scripts/embed would inline) and has no inline
 * script or style attribute, which nprofd's CSP would block. */
#include <stdbool.h>
#include <string.h>

#include "daemon/ui.h"
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

int main(void)
{
	const unsigned char *html;
	const char *t;
	size_t len;

	CHECK(has("/", "text/html; charset=utf-8", "<!DOCTYPE html>"), "/ is index.html, text/html");
	CHECK(has("/ui/index.html", "text/html; charset=utf-8", "id=\"signin\""), "/ui/index.html too");
	CHECK(has("/ui/app.js", "text/javascript; charset=utf-8", "/api/v1/session"),
	      "/ui/app.js, text/javascript, signs in through the API");
	CHECK(has("/ui/workers.js", "text/javascript; charset=utf-8", "/api/v1/workers"), "/ui/workers.js");
	CHECK(has("/ui/instances.js", "text/javascript; charset=utf-8", "/api/v1/instances"), "/ui/instances.js");
	CHECK(has("/ui/hosts.js", "text/javascript; charset=utf-8", "/api/v1/hosts"), "/ui/hosts.js");
	CHECK(has("/ui/app.css", "text/css; charset=utf-8", "table.grid"), "/ui/app.css, text/css");

	CHECK(none("/ui/nope.js"), "an unknown name: nothing");
	CHECK(none("/ui/"), "/ui/: nothing");
	CHECK(none("/ui"), "/ui: nothing");
	CHECK(none(""), "the empty path: nothing");
	CHECK(none(NULL), "NULL: nothing");
	CHECK(none("/app.js"), "a file outside /ui/: nothing");
	CHECK(none("/index.html/"), "/index.html/: nothing");
	CHECK(none("/ui/../ui/app.js"), "/ui/../ui/app.js: nothing");
	CHECK(none("/ui/../../etc/passwd"), "/ui/../../etc/passwd: nothing");
	CHECK(none("/ui/./app.js"), "/ui/./app.js: nothing");
	CHECK(none("/ui//app.js"), "/ui//app.js: nothing");
	CHECK(none("/ui/%2e%2e/app.js"), "/ui/%%2e%%2e/app.js: nothing");
	CHECK(none("/ui/app.js/"), "/ui/app.js/: nothing");
	CHECK(none("/ui/app.js\n"), "a name with a newline: nothing");
	CHECK(none("/ui/APP.JS"), "names are exact: /ui/APP.JS is nothing");
	CHECK(none("/api/v1/workers"), "an API path: nothing");

	CHECK(ui_file("/", &html, &len, &t), "index.html again");
	CHECK(strstr((const char *)html, "<script src=\"/ui/app.js\" defer></script>") != NULL,
	      "index.html loads /ui/app.js by path, deferred");
	CHECK(strstr((const char *)html, "<script>") == NULL && strstr((const char *)html, "<style") == NULL &&
		      strstr((const char *)html, " style=") == NULL && strstr((const char *)html, " onclick") == NULL,
	      "index.html has no inline script, style element or attribute (CSP)");
	return test_done();
}
