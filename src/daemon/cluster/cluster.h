/* cluster: this daemon in the cluster's registry (docs/cluster.md).
 * A thread of its own puts /nprof/v1/hosts/NAME in etcd under a lease,
 * signed with the cluster key, and keeps the lease alive; when etcd does not answer it tries again,
 * from 0.5 s doubling up to lease_ttl, and says so in cluster_status.
 * Nothing here ever stops the daemon from serving its own host.
 *
 * cluster_status, cluster_hosts and cluster_name may be called from any
 * request thread. */
#ifndef NPROF_DAEMON_CLUSTER_H
#define NPROF_DAEMON_CLUSTER_H

#include <jansson.h>
#include <stddef.h>

#define CLUSTER_PREFIX "/nprof/v1/hosts/"

struct daemon;

/* The cluster as d's [cluster] settings say, before the daemon serves
 * (requests then find d->cluster set): NULL with one line in err (the
 * etcd_password_file unreadable or not private; out of memory). */
struct cluster *cluster_new(struct daemon *d, char *err, size_t errlen);
/* Starts registering, once the HTTP listener is up (d->http_url set): 0,
 * or -errno with one line in err when the settings cannot work (no URL
 * the others can reach, a bad TLS certificate). etcd not answering is
 * not an error: the thread retries. */
int cluster_start(struct cluster *c, char *err, size_t errlen);
/* Stops the thread and revokes the lease (the host leaves the list at
 * once), once no request uses c any more; accepts NULL. */
void cluster_free(struct cluster *c);

/* This host's name in the cluster. */
const char *cluster_name(const struct cluster *c);

/* {"etcd", "name", "state": "connecting"|"registered"|"retrying",
 *  "error", "since", "lease_ttl", "ignored": [{"key", "why"}]}: a new
 * reference; ignored: the entries the last read of the registry left
 * out. */
json_t *cluster_status(struct cluster *c);

/* The registered hosts, read from etcd (no host is contacted): an array
 * of their records (name, url, version, tls_fingerprint, tls_pin,
 * started, capabilities), sorted by name, at most [cluster] max_hosts.
 * Only records signed with the cluster key for their own key
 * (cluster_auth_check_record), naming the host of that key and a URL,
 * are taken; the others are left out, kept for cluster_status and
 * logged once each. 0, or -errno and one line in err. A read (its list
 * or its failure) is kept for [cluster] hosts_cache, and given to every
 * call meanwhile: a host that dies leaves the list within lease_ttl +
 * hosts_cache. */
int cluster_hosts(struct cluster *c, json_t **ret, char *err, size_t errlen);

#endif
