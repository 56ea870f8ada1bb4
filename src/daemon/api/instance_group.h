/* instance_group: "profile now" of a service — one POST
 * /api/v1/instances with a selector in place of a worker records every
 * worker it takes at once into one profile, a root per process.
 *
 * The group is an instance of its own (worker null, its selector kept)
 * and each worker's recording an ordinary instance, through the same
 * checks and limits as one asked alone, that names the group as its
 * parent. When the last member has ended, the group's own job merges
 * their profiles (nprof convert --parts, each under "[NAME pid=PID]")
 * into the group's artifact, run as the workers' owner — or as nobody
 * when they are several users' (an admin's group): the files are theirs
 * to have written, and root reads none of them. */
#ifndef NPROF_DAEMON_INSTANCE_GROUP_H
#define NPROF_DAEMON_INSTANCE_GROUP_H

#include <jansson.h>

#include "daemon/api/api.h"

/* Records p on every worker that selector takes and rq's user may see:
 * 201 with the group, or the error (400 a bad selector, 404 none taken,
 * 429 more than max_concurrent allows, or, when no member could start,
 * the first member's refusal). */
void group_start(struct daemon *d, const struct request *rq, struct reply *rp, json_t *selector,
		 const struct profile_request *p);

/* A member of group ended: once every member has, the merge starts. */
void group_member_ended(struct daemon *d, int64_t group);

/* Asks group's running members to stop (what they recorded is kept and
 * merged): how many were asked. */
unsigned group_stop(struct daemon *d, int64_t group);

#endif
