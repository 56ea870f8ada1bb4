/* cluster: registration in etcd, kept alive by a thread (cluster.h). */
#include "daemon/cluster/cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/hex.h"
#include "daemon/cluster/cluster_auth.h"
#include "daemon/cluster/etcd.h"
#include "daemon/core/daemon.h"
#include "daemon/core/log.h"
#include "daemon/core/wall_time.h"

#ifndef NPROF_VERSION
#define NPROF_VERSION "0.1.0"
#endif

#define BACKOFF_FIRST_MS 500
#define KEY_MAX 256

struct cluster {
	struct daemon *d;
	char name[64];
	char key[KEY_MAX];		/* /nprof/v1/hosts/NAME */
	char *record;			/* this host's JSON value */
	struct etcd_options opts;
	char password[1024];		/* etcd's auth, from etcd_password_file */
	struct etcd_token token;	/* shared by every handle */
	pthread_t thread;
	bool started;

	pthread_mutex_t lock;		/* what follows */
	pthread_cond_t wake;		/* stop, or the next keepalive */
	bool stop;
	const char *state;		/* "connecting", "registered", "retrying" */
	char error[512];		/* the last failure, "" since the last success */
	uint64_t since_ms;		/* state entered */
	json_t *ignored;		/* the last read's entries left out: [{key, why}] */

	/* The last read of the registry, kept [cluster] hosts_cache: many
	 * pages polling the hosts and workers cost etcd one read a period.
	 * The lock is held across a read, so requests that come meanwhile
	 * take its result rather than each asking etcd. */
	pthread_mutex_t hosts_lock;	/* what follows */
	uint64_t hosts_read_ns;		/* CLOCK_MONOTONIC when the read began; 0: none */
	int hosts_r;			/* its result: 0, or -errno with hosts_error */
	json_t *hosts;			/* with 0: the list */
	char hosts_error[768];
	bool said_full;			/* max_hosts reached, logged: atomic */
};

const char *cluster_name(const struct cluster *c)
{
	return c->name;
}

/* The listener's certificate (the first of tls_cert) as the others
 * check it: fp "sha256:HEX" of the certificate, pin "sha256//BASE64" of
 * its public key (curl's CURLOPT_PINNEDPUBLICKEY); both "" when TLS is
 * off. false when the file is not a certificate. */
static bool cert_identity(const char *pem_path, char *fp, size_t fp_size, char *pin,
			  size_t pin_size)
{
	gnutls_datum_t pem = { NULL, 0 };
	gnutls_x509_crt_t crt = NULL;
	unsigned char digest[32], key_id[32];
	size_t digest_len = sizeof(digest), key_id_len = sizeof(key_id);
	char hex[65], b64[48];
	bool ok = false;

	fp[0] = pin[0] = '\0';
	if (!pem_path[0])
		return true;
	if (gnutls_load_file(pem_path, &pem) == 0 && gnutls_x509_crt_init(&crt) == 0 &&
	    gnutls_x509_crt_import(crt, &pem, GNUTLS_X509_FMT_PEM) == 0 &&
	    gnutls_x509_crt_get_fingerprint(crt, GNUTLS_DIG_SHA256, digest, &digest_len) == 0 &&
	    digest_len == sizeof(digest) &&
	    /* SHA-256 of the DER SubjectPublicKeyInfo */
	    gnutls_x509_crt_get_key_id(crt, GNUTLS_KEYID_USE_SHA256, key_id, &key_id_len) == 0 &&
	    key_id_len == sizeof(key_id)) {
		hex_encode(digest, sizeof(digest), hex);
		snprintf(fp, fp_size, "sha256:%s", hex);
		etcd_base64_encode(key_id, sizeof(key_id), b64);
		snprintf(pin, pin_size, "sha256//%s", b64);
		ok = true;
	}
	if (crt)
		gnutls_x509_crt_deinit(crt);
	gnutls_free(pem.data);
	return ok;
}

static void set_state(struct cluster *c, const char *state, const char *error)
{
	bool changed;

	pthread_mutex_lock(&c->lock);
	changed = strcmp(c->state, state) != 0;
	if (changed) {
		c->state = state;
		c->since_ms = now_ms();
	}
	snprintf(c->error, sizeof(c->error), "%s", error ? error : "");
	pthread_mutex_unlock(&c->lock);
	/* one line when it changes, not one per retry */
	if (changed && error)
		log_error("cluster: %s; retrying with backoff, serving this host meanwhile", error);
	else if (changed)
		log_info("cluster: registered as %s in etcd (%s)", c->name, c->opts.endpoints);
}

/* Waits ms or until stopped: true when stopped. */
static bool wait_or_stop(struct cluster *c, uint64_t ms)
{
	struct timespec until;
	bool stop;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (time_t)(ms / 1000);
	until.tv_nsec += (long)(ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&c->lock);
	while (!c->stop && pthread_cond_timedwait(&c->wake, &c->lock, &until) != ETIMEDOUT)
		;
	stop = c->stop;
	pthread_mutex_unlock(&c->lock);
	return stop;
}

/* Says once, in the log, when etcd serves anyone without credentials:
 * true once that is known either way, false to try again later. */
static bool check_etcd_auth(struct cluster *c, struct etcd *e)
{
	char err[768], where[300];
	bool open;

	if (etcd_open_to_anyone(e, CLUSTER_PREFIX, &open, where, sizeof(where), err,
				sizeof(err)) < 0)
		return false;
	if (open)
		log_error("cluster: etcd at %s answers without authentication: anyone who reaches it "
			  "can hide hosts of this cluster from the others, or point one at an address "
			  "it used before (not impersonate a host: registrations are signed; "
			  "docs/cluster.md); turn on etcd's auth (etcdctl auth enable) and set [cluster] "
			  "etcd_user and etcd_password_file, or its client certificates "
			  "(--client-cert-auth; etcd_cert, etcd_key)", where);
	return true;
}

static void *registration(void *arg)
{
	struct cluster *c = arg;
	uint64_t ttl_ms = c->d->cfg.lease_ttl_ns / 1000000, backoff = BACKOFF_FIRST_MS;
	struct etcd *e = etcd_new(&c->opts);
	int64_t lease = 0, left;
	bool auth_checked = false;
	char err[768];

	if (!e) {
		set_state(c, "retrying", "cannot use [cluster] etcd's URLs");
		return NULL;
	}
	for (;;) {
		int r;

		if (!lease) {
			r = etcd_lease_grant(e, (int64_t)(ttl_ms / 1000), &lease, err, sizeof(err));
			if (r == 0 && (r = etcd_put(e, c->key, c->record, lease, err, sizeof(err))) < 0)
				lease = 0;
		} else {
			r = etcd_lease_keepalive(e, lease, &left, err, sizeof(err));
			if (r < 0) /* expired, or etcd lost it: a new one, and the key again */
				lease = 0;
			if (r == -ENOENT) {
				/* not etcd's fault: granting again now */
				continue;
			}
		}
		if (r == 0) {
			if (!auth_checked)
				auth_checked = check_etcd_auth(c, e);
			set_state(c, "registered", NULL);
			backoff = BACKOFF_FIRST_MS;
			if (wait_or_stop(c, ttl_ms / 3))
				break;
			continue;
		}
		set_state(c, "retrying", err);
		if (wait_or_stop(c, backoff))
			break;
		backoff = backoff * 2 > ttl_ms ? ttl_ms : backoff * 2;
	}
	/* leaving the list now rather than at the lease's end */
	if (lease)
		etcd_lease_revoke(e, lease, err, sizeof(err));
	etcd_free(e);
	return NULL;
}

/* A password in a private file (as [cluster] key_file): 0, or -1 and err. */
static int read_password(const char *path, char *out, size_t size, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	struct stat st;
	ssize_t n = -1;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077) || (n = read(fd, out, size - 1)) <= 0) {
		snprintf(err, errlen, "[cluster] etcd_password_file = %s must be a non-empty regular "
			 "file of nprofd's user with no permission for group or others (chmod 600)",
			 path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
		n--;
	out[n] = '\0';
	return 0;
}

struct cluster *cluster_new(struct daemon *d, char *err, size_t errlen)
{
	const struct daemon_config *cfg = &d->cfg;
	struct cluster *c = calloc(1, sizeof(*c));
	pthread_condattr_t ca;

	if (!c) {
		snprintf(err, errlen, "out of memory at start");
		return NULL;
	}
	if (cfg->etcd_user[0] &&
	    read_password(cfg->etcd_password_file, c->password, sizeof(c->password), err,
			  errlen) < 0) {
		free(c);
		return NULL;
	}
	c->d = d;
	c->state = "connecting";
	c->since_ms = now_ms();
	if (cfg->cluster_name[0]) {
		snprintf(c->name, sizeof(c->name), "%s", cfg->cluster_name);
	} else {
		gethostname(c->name, sizeof(c->name) - 1);
		/* the name is part of a key: no '/' in it */
		for (char *s = c->name; *s; s++)
			if (*s == '/')
				*s = '_';
	}
	snprintf(c->key, sizeof(c->key), "%s%s", CLUSTER_PREFIX, c->name);
	c->opts = (struct etcd_options){
		.endpoints = cfg->etcd,
		.timeout_ms = cfg->etcd_timeout_ns / 1000000,
		.max_reply = cfg->max_reply,
		.ca = cfg->etcd_ca, .cert = cfg->etcd_cert, .key = cfg->etcd_key,
		.user = cfg->etcd_user[0] ? cfg->etcd_user : NULL,
		.password = c->password, .token = &c->token,
	};
	pthread_mutex_init(&c->token.lock, NULL);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->hosts_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->wake, &ca);
	pthread_condattr_destroy(&ca);
	return c;
}

int cluster_start(struct cluster *c, char *err, size_t errlen)
{
	const struct daemon_config *cfg = &c->d->cfg;
	char fp[80], pin[80], started[32], url[CONFIG_VALUE_MAX], *text;
	json_t *rec;
	int r;

	snprintf(url, sizeof(url), "%s", cfg->cluster_url[0] ? cfg->cluster_url : c->d->http_url);
	if (!url[0]) {
		snprintf(err, errlen, "[cluster] etcd is set but nprofd has no HTTP listener for the "
			 "other daemons to reach; set listen (or --listen), or [cluster] url");
		return -EINVAL;
	}
	/* listening on every address says nothing of the one to be reached at */
	if (strstr(url, "://0.0.0.0:") || strstr(url, "://[::]:")) {
		snprintf(err, errlen, "listen = %s is every address: set [cluster] url to the one the "
			 "other daemons reach this host at (https://NAME:PORT)", cfg->listen);
		return -EINVAL;
	}
	if (!cert_identity(cfg->tls_cert, fp, sizeof(fp), pin, sizeof(pin))) {
		snprintf(err, errlen, "tls_cert = %s: not a PEM certificate; fix the file",
			 cfg->tls_cert);
		return -EINVAL;
	}
	rec = json_pack("{ss ss ss ss? ss? ss s[ss]}", "name", c->name, "url", url, "version",
			NPROF_VERSION, "tls_fingerprint", fp[0] ? fp : NULL, "tls_pin",
			pin[0] ? pin : NULL, "started",
			iso_time(c->d->started_ms, started, sizeof(started)), "capabilities",
			"workers", "signed-requests");
	text = rec ? json_dumps(rec, JSON_COMPACT) : NULL;
	json_decref(rec);
	/* signed: a writer to etcd without the key cannot stand in for it */
	r = text ? cluster_auth_sign_record(c->d->cluster_auth, c->key, text, &c->record) : -ENOMEM;
	free(text);
	if (r < 0) {
		snprintf(err, errlen, "cannot sign this host's registration: %s", strerror(-r));
		return r;
	}
	if (pthread_create(&c->thread, NULL, registration, c) != 0) {
		snprintf(err, errlen, "cannot start the cluster's thread: %s", strerror(errno));
		return -EAGAIN;
	}
	c->started = true;
	return 0;
}

void cluster_free(struct cluster *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->lock);
	if (c->started)
		pthread_join(c->thread, NULL);
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->hosts_lock);
	json_decref(c->hosts);
	json_decref(c->ignored);
	pthread_mutex_destroy(&c->token.lock);
	explicit_bzero(c->password, sizeof(c->password));
	free(c->record);
	free(c);
}

json_t *cluster_status(struct cluster *c)
{
	char since[32];
	json_t *j;

	pthread_mutex_lock(&c->lock);
	j = json_pack("{ss ss ss ss? ss sI so}", "etcd", c->opts.endpoints, "name", c->name, "state",
		      c->state, "error", c->error[0] ? c->error : NULL, "since",
		      iso_time(c->since_ms, since, sizeof(since)), "lease_ttl",
		      (json_int_t)(c->d->cfg.lease_ttl_ns / 1000000000ull), "ignored",
		      c->ignored ? json_deep_copy(c->ignored) : json_array());
	pthread_mutex_unlock(&c->lock);
	return j;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "name")),
		      json_string_value(json_object_get(*(json_t *const *)b, "name")));
}

/* A key from etcd as text to show: printable ASCII, at most size - 1. */
static const char *shown_key(const char *key, char *out, size_t size)
{
	size_t i;

	for (i = 0; key[i] && i < size - 1; i++)
		out[i] = key[i] > 0x20 && key[i] < 0x7f ? key[i] : '?';
	out[i] = '\0';
	return out;
}

/* The entries a read left out, kept for GET /api/v1/hosts; each logged
 * when it is first left out (for that reason), not on every read. */
static void note_ignored(struct cluster *c, json_t *ignored)
{
	size_t i, k;
	json_t *now, *before;

	pthread_mutex_lock(&c->lock);
	json_array_foreach(ignored, i, now) {
		bool known = false;

		json_array_foreach(c->ignored, k, before)
			known |= json_equal(now, before);
		if (!known)
			log_error("cluster: ignoring %s in etcd: %s; whoever wrote it can write to "
				  "etcd but holds no cluster key (or a host has another key_file): "
				  "protect etcd with its auth (docs/cluster.md)",
				  json_string_value(json_object_get(now, "key")),
				  json_string_value(json_object_get(now, "why")));
	}
	json_decref(c->ignored);
	c->ignored = ignored;
	pthread_mutex_unlock(&c->lock);
}

/* Why a registry entry cannot be taken, or NULL: it is signed with the
 * cluster's key for its key, a JSON object naming the host of its key
 * and a URL (*ret_rec, without "sig"). */
static const char *unusable(struct cluster *c, const struct etcd_kv *kv, json_t **ret_rec,
			    char *why, size_t whylen)
{
	json_t *rec;
	const char *name, *url;

	*ret_rec = NULL;
	if (cluster_auth_check_record(c->d->cluster_auth, kv->key, kv->value, kv->value_len, why,
				      whylen) < 0)
		return why;
	rec = json_loadb(kv->value, kv->value_len, JSON_REJECT_DUPLICATES, NULL);
	name = json_string_value(json_object_get(rec, "name"));
	url = json_string_value(json_object_get(rec, "url"));
	/* what a host wrote of itself must agree with its key */
	if (!json_is_object(rec) || !name || !url ||
	    strncmp(kv->key, CLUSTER_PREFIX, strlen(CLUSTER_PREFIX)) ||
	    strcmp(name, kv->key + strlen(CLUSTER_PREFIX)) || *config_check_urls(url, false)) {
		json_decref(rec);
		snprintf(why, whylen, "not a record naming the host of its key and a URL");
		return why;
	}
	json_object_del(rec, "sig");
	*ret_rec = rec;
	return NULL;
}

/* The registry as etcd has it now (cluster_hosts without the cache). */
static int read_hosts(struct cluster *c, json_t **ret, char *err, size_t errlen)
{
	/* a handle per call: requests read the registry at once */
	struct etcd *e = etcd_new(&c->opts);
	struct etcd_kv *kvs = NULL;
	size_t n = 0, kept = 0;
	json_t **recs = NULL, *list, *ignored = json_array();
	int r;

	if (!e) {
		snprintf(err, errlen, "cannot use [cluster] etcd's URLs");
		return -errno;
	}
	r = etcd_range_prefix(e, CLUSTER_PREFIX, c->d->cfg.max_hosts, &kvs, &n, err, errlen);
	etcd_free(e);
	if (r < 0) {
		json_decref(ignored);
		return r;
	}
	/* etcd gave as many as asked: any more are in no list, so say it once */
	if (n == c->d->cfg.max_hosts && !__atomic_exchange_n(&c->said_full, true, __ATOMIC_RELAXED))
		log_error("cluster: etcd lists %zu hosts, [cluster] max_hosts: those past them by "
			  "name are left out of every list; raise max_hosts", n);
	recs = calloc(n ? n : 1, sizeof(*recs));
	list = json_array();
	if (!recs || !list || !ignored) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		char why[200], key[200];
		json_t *rec;

		if (unusable(c, &kvs[i], &rec, why, sizeof(why)))
			json_array_append_new(ignored, json_pack("{ss ss}", "key",
				shown_key(kvs[i].key, key, sizeof(key)), "why", why));
		else
			recs[kept++] = rec;
	}
	note_ignored(c, ignored);
	ignored = NULL;
	qsort(recs, kept, sizeof(*recs), by_name);
	for (size_t i = 0; i < kept; i++)
		json_array_append_new(list, recs[i]);
	kept = 0;
	*ret = list;
	list = NULL;
out:
	for (size_t i = 0; i < kept; i++)
		json_decref(recs[i]);
	json_decref(list);
	json_decref(ignored);
	free(recs);
	etcd_kvs_free(kvs, n);
	return r;
}

int cluster_hosts(struct cluster *c, json_t **ret, char *err, size_t errlen)
{
	uint64_t keep = c->d->cfg.hosts_cache_ns, now;
	int r;

	if (!keep)
		return read_hosts(c, ret, err, errlen);
	pthread_mutex_lock(&c->hosts_lock);
	now = clock_ns(CLOCK_MONOTONIC);
	/* a failure is kept too: etcd away costs one timeout a period */
	if (!c->hosts_read_ns || now - c->hosts_read_ns >= keep) {
		json_decref(c->hosts);
		c->hosts = NULL;
		c->hosts_read_ns = now;
		c->hosts_r = read_hosts(c, &c->hosts, c->hosts_error, sizeof(c->hosts_error));
	}
	r = c->hosts_r;
	/* a copy: callers add to the records (health, self) */
	if (r == 0 && !(*ret = json_deep_copy(c->hosts))) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
	} else if (r < 0) {
		snprintf(err, errlen, "%s", c->hosts_error);
	}
	pthread_mutex_unlock(&c->hosts_lock);
	return r;
}
