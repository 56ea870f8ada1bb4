/* user: who a request's user is on this host (name, group, admin) and
 * what they may see, whichever door named them. */
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>

#include "daemon/core/daemon.h"

static bool in_admin_group(const struct daemon *d, const char *name, gid_t gid)
{
	struct group gr, *g = NULL;
	char buf[4096];
	gid_t groups[256];
	int n = 256;

	if (!d->cfg.admin_group[0] ||
	    getgrnam_r(d->cfg.admin_group, &gr, buf, sizeof(buf), &g) != 0 || !g)
		return false;
	if (getgrouplist(name, gid, groups, &n) < 0)
		return false;
	for (int i = 0; i < n; i++)
		if (groups[i] == g->gr_gid)
			return true;
	return false;
}

bool user_complete(const struct daemon *d, struct user *u)
{
	struct passwd pw, *p = NULL;
	char buf[4096];

	if (getpwuid_r(u->uid, &pw, buf, sizeof(buf), &p) != 0 || !p)
		return false;
	snprintf(u->name, sizeof(u->name), "%s", p->pw_name);
	u->gid = p->pw_gid;
	u->admin = (u->uid == 0 && !strcmp(u->via, "socket"));
	for (size_t i = 0; !u->admin && i < d->cfg.n_admin_users; i++)
		u->admin = !strcmp(d->cfg.admin_users[i], u->name);
	if (!u->admin)
		u->admin = in_admin_group(d, u->name, u->gid);
	return true;
}

bool user_may_see(const struct user *u, uid_t owner)
{
	return u->admin || u->uid == owner;
}

gid_t user_primary_gid(uid_t uid)
{
	struct passwd pw, *p = NULL;
	char buf[4096];

	return getpwuid_r(uid, &pw, buf, sizeof(buf), &p) == 0 && p ? p->pw_gid : 65534;
}

uid_t user_reader_uid(uid_t owner)
{
	return owner ? owner : 65534;
}
