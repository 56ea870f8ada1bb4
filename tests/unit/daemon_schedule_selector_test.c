/* daemon_schedule_selector: a schedule's selector
 * (src/daemon/api/schedule_selector.c) — each kind is read from its JSON
 * and written back the same; what is not one (no key, two keys, an
 * unknown key, an empty or non-text value, a relative cgroup, too many
 * worker ids) is refused with a line naming it; each kind takes the
 * workers it names and no other. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/schedule_selector.h"
#include "test.h"

static struct daemon d;

/* The selector text parses, and writes back as itself. */
static void round_trip(const char *text)
{
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr), *back;
	struct schedule_selector s;
	char why[256] = "", *out = NULL;

	CHECK(j && schedule_selector_parse(j, &s, why, sizeof(why)) == 0 &&
	      (back = schedule_selector_json(&s)) &&
	      (out = json_dumps(back, JSON_COMPACT)) && !strcmp(out, text),
	      "%s: read and written back (%s)", text, out ? out : why);
	free(out);
	json_decref(j);
}

static void refused(const char *text, const char *says)
{
	json_error_t jerr;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &jerr);
	struct schedule_selector s;
	char why[256] = "";

	CHECK(schedule_selector_parse(j, &s, why, sizeof(why)) < 0 && strstr(why, says),
	      "%s: refused, saying \"%s\" (%s)", text, says, why);
	json_decref(j);
}

static bool takes(const char *text, const struct worker *w)
{
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);
	struct schedule_selector s;
	char why[256];
	bool r = schedule_selector_parse(j, &s, why, sizeof(why)) == 0 &&
		 schedule_selector_takes(&d, &s, w);

	json_decref(j);
	return r;
}

int main(void)
{
	struct worker web = { .pid = 10, .uid = 1001 }, db = { .pid = 11, .uid = 1002 };
	char many[4096];
	size_t len;

	config_defaults(&d.cfg);
	round_trip("{\"service\":\"web*\"}");
	round_trip("{\"workers\":[\"10-100\",\"11-200\"]}");
	round_trip("{\"unit\":\"nginx.service\"}");
	round_trip("{\"container\":\"3f4e\"}");
	round_trip("{\"pod\":\"1a2b3c4d-0000\"}");
	round_trip("{\"cgroup\":\"/system.slice\"}");
	round_trip("{\"exe\":\"/usr/sbin/*\"}");
	round_trip("{\"user\":\"postgres\"}");
	refused("{}", "one of service, workers");
	refused("[]", "one of service, workers");
	refused("{\"service\":\"a\",\"unit\":\"b\"}", "one of service, workers");
	refused("{\"colour\":\"red\"}", "unknown key 'colour'");
	refused("{\"service\":\"\"}", "service must be a non-empty string");
	refused("{\"unit\":3}", "unit must be a non-empty string");
	refused("{\"cgroup\":\"system.slice\"}", "absolute cgroup path");
	refused("{\"workers\":[]}", "list of 1 to 64");
	refused("{\"workers\":[7]}", "each of workers must be a worker id");
	len = (size_t)snprintf(many, sizeof(many), "{\"workers\":[");
	for (int i = 0; i < 65; i++)
		len += (size_t)snprintf(many + len, sizeof(many) - len, "%s\"%d-1\"", i ? "," : "", i);
	snprintf(many + len, sizeof(many) - len, "]}");
	refused(many, "list of 1 to 64");

	snprintf(web.id, sizeof(web.id), "10-100");
	snprintf(web.unit, sizeof(web.unit), "web.service");
	snprintf(web.cgroup, sizeof(web.cgroup), "/system.slice/web.service");
	snprintf(web.exe, sizeof(web.exe), "/usr/sbin/webd");
	snprintf(web.user, sizeof(web.user), "www");
	snprintf(web.container_id, sizeof(web.container_id), "3f4e%060d", 7);
	snprintf(web.pod_uid, sizeof(web.pod_uid), "1a2b3c4d-0000-4000-8000-000000000001");
	snprintf(db.id, sizeof(db.id), "11-200");
	snprintf(db.cgroup, sizeof(db.cgroup), "/user.slice/db");
	snprintf(db.exe, sizeof(db.exe), "/opt/db/bin/db");
	snprintf(db.user, sizeof(db.user), "postgres");
	CHECK(takes("{\"service\":\"web*\"}", &web) && !takes("{\"service\":\"web*\"}", &db),
	      "service web*: the unit's service, not the other");
	CHECK(takes("{\"service\":\"db\"}", &db),
	      "service: a worker without a unit or a container is its executable's");
	CHECK(takes("{\"workers\":[\"1-1\",\"11-200\"]}", &db) &&
	      !takes("{\"workers\":[\"1-1\",\"11-200\"]}", &web), "workers: the ids it lists");
	CHECK(!takes("{\"workers\":[\"11-201\"]}", &db), "workers: an id of another start time");
	CHECK(takes("{\"unit\":\"web.*\"}", &web) && !takes("{\"unit\":\"web.*\"}", &db), "unit");
	CHECK(takes("{\"cgroup\":\"/system.slice\"}", &web) &&
	      !takes("{\"cgroup\":\"/system.slice\"}", &db), "cgroup: a subtree");
	CHECK(takes("{\"exe\":\"/opt/*\"}", &db) && !takes("{\"exe\":\"/opt/*\"}", &web), "exe");
	CHECK(takes("{\"container\":\"3f4e\"}", &web) && !takes("{\"container\":\"3f4e\"}", &db) &&
	      !takes("{\"container\":\"3f4f\"}", &web), "container: the start of its id");
	CHECK(takes("{\"pod\":\"1a2b3c4d\"}", &web) && !takes("{\"pod\":\"1a2b3c4d\"}", &db),
	      "pod: the start of its uid; no pod, never");
	CHECK(takes("{\"user\":\"postgres\"}", &db) && !takes("{\"user\":\"postgres\"}", &web),
	      "user");
	return test_done();
}
