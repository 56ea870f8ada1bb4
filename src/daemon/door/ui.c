/* ui: the embedded web UI files by request path (ui.h). The files stay
 * real files under src/daemon/ui/ that a browser can open (the page, its
 * style, its ES modules); the Makefile turns each into
 * build/gen/ui/NAME.h. A new file there needs its line in FILES below
 * (and its #include): tests/unit/daemon_ui_test.c fails until it has. */
#include <string.h>

#include "daemon/door/ui.h"
#include "ui/action_rules.js.h"
#include "ui/actions.js.h"
#include "ui/actions_agent.js.h"
#include "ui/actions_commands.js.h"
#include "ui/actions_dumps.js.h"
#include "ui/actions_profile.js.h"
#include "ui/actions_restart.js.h"
#include "ui/actions_run.js.h"
#include "ui/api.js.h"
#include "ui/app.css.h"
#include "ui/artifacts.js.h"
#include "ui/compare.js.h"
#include "ui/dom.js.h"
#include "ui/files.js.h"
#include "ui/fmt.js.h"
#include "ui/host.js.h"
#include "ui/hosts.js.h"
#include "ui/index.html.h"
#include "ui/instance.js.h"
#include "ui/instance_store.js.h"
#include "ui/instance_table.js.h"
#include "ui/instances.js.h"
#include "ui/main.js.h"
#include "ui/nouns.js.h"
#include "ui/router.js.h"
#include "ui/series.js.h"
#include "ui/services.js.h"
#include "ui/session.js.h"
#include "ui/signin.js.h"
#include "ui/status.js.h"
#include "ui/thread_dump.js.h"
#include "ui/threads.js.h"
#include "ui/worker.js.h"
#include "ui/worker_filter.js.h"
#include "ui/worker_store.js.h"
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
	{ "app.css", res_app_css, &res_app_css_len, CSS },
	{ "action_rules.js", res_action_rules_js, &res_action_rules_js_len, JS },
	{ "actions.js", res_actions_js, &res_actions_js_len, JS },
	{ "actions_agent.js", res_actions_agent_js, &res_actions_agent_js_len, JS },
	{ "actions_commands.js", res_actions_commands_js, &res_actions_commands_js_len, JS },
	{ "actions_dumps.js", res_actions_dumps_js, &res_actions_dumps_js_len, JS },
	{ "actions_profile.js", res_actions_profile_js, &res_actions_profile_js_len, JS },
	{ "actions_restart.js", res_actions_restart_js, &res_actions_restart_js_len, JS },
	{ "actions_run.js", res_actions_run_js, &res_actions_run_js_len, JS },
	{ "api.js", res_api_js, &res_api_js_len, JS },
	{ "artifacts.js", res_artifacts_js, &res_artifacts_js_len, JS },
	{ "compare.js", res_compare_js, &res_compare_js_len, JS },
	{ "dom.js", res_dom_js, &res_dom_js_len, JS },
	{ "files.js", res_files_js, &res_files_js_len, JS },
	{ "fmt.js", res_fmt_js, &res_fmt_js_len, JS },
	{ "host.js", res_host_js, &res_host_js_len, JS },
	{ "hosts.js", res_hosts_js, &res_hosts_js_len, JS },
	{ "instance.js", res_instance_js, &res_instance_js_len, JS },
	{ "instance_store.js", res_instance_store_js, &res_instance_store_js_len, JS },
	{ "instance_table.js", res_instance_table_js, &res_instance_table_js_len, JS },
	{ "instances.js", res_instances_js, &res_instances_js_len, JS },
	{ "main.js", res_main_js, &res_main_js_len, JS },
	{ "nouns.js", res_nouns_js, &res_nouns_js_len, JS },
	{ "router.js", res_router_js, &res_router_js_len, JS },
	{ "series.js", res_series_js, &res_series_js_len, JS },
	{ "services.js", res_services_js, &res_services_js_len, JS },
	{ "session.js", res_session_js, &res_session_js_len, JS },
	{ "signin.js", res_signin_js, &res_signin_js_len, JS },
	{ "status.js", res_status_js, &res_status_js_len, JS },
	{ "thread_dump.js", res_thread_dump_js, &res_thread_dump_js_len, JS },
	{ "threads.js", res_threads_js, &res_threads_js_len, JS },
	{ "worker.js", res_worker_js, &res_worker_js_len, JS },
	{ "worker_filter.js", res_worker_filter_js, &res_worker_filter_js_len, JS },
	{ "worker_store.js", res_worker_store_js, &res_worker_store_js_len, JS },
	{ "workers.js", res_workers_js, &res_workers_js_len, JS },
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
