/* ui: the embedded web UI files by request path (ui.h). The files stay
 * real files under src/daemon/ui/ that a browser can open; the Makefile
 * turns each into build/gen/ui/NAME.h. A new file there needs its line
 * in FILES below (and its #include). */
#include <string.h>

#include "daemon/ui.h"
#include "ui/app.css.h"
#include "ui/app.js.h"
#include "ui/hosts.js.h"
#include "ui/index.html.h"
#include "ui/instances.js.h"
#include "ui/workers.js.h"

#define HTML "text/html; charset=utf-8"
#define JS "text/javascript; charset=utf-8"
#define CSS "text/css; charset=utf-8"

static const struct {
	const char *name;
	const unsigned char *data;
	const unsigned long *len;
	const char *type;
} FILES[] = {
	{ "index.html", res_index_html, &res_index_html_len, HTML },
	{ "app.js", res_app_js, &res_app_js_len, JS },
	{ "hosts.js", res_hosts_js, &res_hosts_js_len, JS },
	{ "workers.js", res_workers_js, &res_workers_js_len, JS },
	{ "instances.js", res_instances_js, &res_instances_js_len, JS },
	{ "app.css", res_app_css, &res_app_css_len, CSS },
};

bool ui_file(const char *path, const unsigned char **ret_data, size_t *ret_len, const char **ret_type)
{
	const char *name;

	if (!path)
		return false;
	if (!strcmp(path, "/"))
		name = "index.html";
	else if (!strncmp(path, "/ui/", 4))
		name = path + 4;
	else
		return false;
	/* An exact name of the table, nothing else: no path is ever built. */
	for (size_t i = 0; i < sizeof(FILES) / sizeof(FILES[0]); i++) {
		if (strcmp(name, FILES[i].name))
			continue;
		*ret_data = FILES[i].data;
		*ret_len = *FILES[i].len;
		*ret_type = FILES[i].type;
		return true;
	}
	return false;
}
