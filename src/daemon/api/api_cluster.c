/* api_cluster: the cluster's view (docs/cluster.md). GET /api/v1/hosts
 * lists the hosts registered in etcd, contacting none of them; GET
 * /api/v1/workers?host=NAME|* asks their daemons, at most [cluster]
 * fanout at once, each within host_timeout, signed for the user asking,
 * whom each daemon authorizes by its own rules; a file of every host
 * (ROUTE_GATHER's host=*) is gathered for its handler to merge. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/api/api.h"
#include "daemon/cluster/cluster.h"
#include "daemon/cluster/remote.h"

const char *api_cluster_self(struct daemon *d, char *buf, size_t len)
{
	if (d->cluster)
		return cluster_name(d->cluster);
	buf[0] = '\0';
	gethostname(buf, len - 1);
	buf[len - 1] = '\0';
	return buf;
}

/* This host as the registry would list it, for when etcd cannot. */
static json_t *self_record(struct daemon *d, const char *name)
{
	return json_pack("{ss ss? sb}", "name", name, "url", d->http_url[0] ? d->http_url : NULL,
			 "self", 1);
}

void api_hosts(struct daemon *d, struct request *rq, struct reply *rp)
{
	char buf[256], err[768];
	const char *self = api_cluster_self(d, buf, sizeof(buf));
	json_t *hosts = NULL, *h;
	size_t i;

	(void)rq;
	if (!d->cluster) {
		rp->json = json_pack("{s[o] so sb}", "hosts", self_record(d, self), "cluster",
				     json_null(), "partial", 0);
		return;
	}
	if (cluster_hosts(d->cluster, &hosts, err, sizeof(err)) < 0) {
		/* etcd away: this host still serves, and says what it knows */
		rp->json = json_pack("{s[o] so sb ss}", "hosts", self_record(d, self), "cluster",
				     cluster_status(d->cluster), "partial", 1, "error", err);
		return;
	}
	json_array_foreach(hosts, i, h) {
		/* in the registry: its lease is alive */
		json_object_set_new(h, "health", json_string("registered"));
		json_object_set_new(h, "self", json_boolean(!strcmp(
			json_string_value(json_object_get(h, "name")), self)));
	}
	rp->json = json_pack("{so so sb}", "hosts", hosts, "cluster", cluster_status(d->cluster),
			     "partial", 0);
}

/* rq->args ("LEN:KEY=LEN:VALUE;" or "LEN:KEY;" each) back into pairs,
 * host and the skip keys (NULL-terminated) left out: their count, or -1
 * when they do not fit. */
#define FORWARD_ARGS 32
static int split_args(const char *args, const char *const *skip, char keys[][128],
		      char values[][256], bool *has_value)
{
	const char *s = args;
	int n = 0;

	while (*s) {
		char *end;
		unsigned long kl = strtoul(s, &end, 10), vl;

		if (*end != ':' || kl >= 128 || strlen(end + 1) < kl || n == FORWARD_ARGS)
			return -1;
		memcpy(keys[n], end + 1, kl);
		keys[n][kl] = '\0';
		s = end + 1 + kl;
		has_value[n] = *s == '=';
		values[n][0] = '\0';
		if (has_value[n]) {
			vl = strtoul(s + 1, &end, 10);
			if (*end != ':' || vl >= 256 || strlen(end + 1) < vl)
				return -1;
			memcpy(values[n], end + 1, vl);
			values[n][vl] = '\0';
			s = end + 1 + vl;
		}
		if (*s++ != ';')
			return -1;
		bool skipped = !strcmp(keys[n], "host");

		for (size_t i = 0; skip && skip[i]; i++)
			skipped |= !strcmp(keys[n], skip[i]);
		if (!skipped)
			n++;
	}
	return n;
}

/* One host of a fan-out, filled by the thread that asks it. */
struct target {
	const char *name, *url, *pin;
	json_t *workers;		/* its list, each item with its host */
	char error[512];		/* why not, when workers is NULL */
};

struct fanout {
	struct daemon *d;
	const struct user *user;
	const char *path, *list_key;	/* "/api/v1/workers", "workers" */
	char key_text[FORWARD_ARGS][128], value_text[FORWARD_ARGS][256];
	const char *keys[FORWARD_ARGS], *values[FORWARD_ARGS];
	size_t n_filters;		/* the query passed on: all but host, batch, after */
	struct target *t;
	size_t n;
	size_t next;			/* the next target to ask: atomic */
};

static void with_host(json_t *workers, const char *name)
{
	size_t i;
	json_t *w;

	json_array_foreach(workers, i, w)
		json_object_set_new(w, "host", json_string(name));
}

static void ask(struct fanout *f, struct target *t)
{
	struct remote_reply r;
	json_t *j;

	if (remote_call(f->d, t->url, t->pin, t->name, "GET", f->path, f->keys, f->values,
			f->n_filters, NULL, 0, f->user, f->d->cfg.host_timeout_ns / 1000000,
			f->d->cfg.max_reply, &r, t->error, sizeof(t->error)) < 0)
		return;
	j = r.body ? json_loadb(r.body, r.len, 0, NULL) : NULL;
	if (r.status == 200 && json_is_array(json_object_get(j, f->list_key))) {
		t->workers = json_incref(json_object_get(j, f->list_key));
		with_host(t->workers, t->name);
	} else if (json_is_string(json_object_get(j, "error"))) {
		snprintf(t->error, sizeof(t->error), "HTTP %ld: %.400s", r.status,
			 json_string_value(json_object_get(j, "error")));
	} else {
		snprintf(t->error, sizeof(t->error), "HTTP %ld, and not nprofd's list of %s",
			 r.status, f->list_key);
	}
	json_decref(j);
	free(r.body);
}

static void *asker(void *arg)
{
	struct fanout *f = arg;
	size_t i;

	while ((i = __atomic_fetch_add(&f->next, 1, __ATOMIC_RELAXED)) < f->n)
		ask(f, &f->t[i]);
	return NULL;
}

/* Runs fn(arg) on want threads at once, at most 256 (this thread alone
 * when none can be started), until each has returned: each takes the
 * next host to ask until none is left. */
static void run_askers(size_t want, void *(*fn)(void *), void *arg)
{
	pthread_t th[256];
	pthread_attr_t attr;
	size_t started = 0;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 1u << 20); /* curl and a TLS handshake */
	while (started < want && started < sizeof(th) / sizeof(th[0]) &&
	       pthread_create(&th[started], &attr, fn, arg) == 0)
		started++;
	pthread_attr_destroy(&attr);
	if (!started)
		fn(arg);
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
}

/* Asks every target, at most fanout at once. */
static void ask_all(struct fanout *f)
{
	run_askers(f->n < f->d->cfg.fanout ? f->n : f->d->cfg.fanout, asker, f);
}

/* host=*'s batch: after=NAME (the hosts named after it) and batch=N (at
 * most N hosts; default and limit max_hosts). false when it replied 400. */
static bool batch_of(const struct request *rq, struct reply *rp, size_t max,
		     const char **ret_after, size_t *ret_batch)
{
	const char *b = rq->query(rq, "batch");
	char *end;
	unsigned long n = max;

	if (b) {
		n = strtoul(b, &end, 10);
		if (!*b || *end || n < 1 || n > max) {
			reply_error(rp, 400, "batch", "batch=%.32s: give a number of hosts from 1 to "
				    "%zu ([cluster] max_hosts)", b, max);
			return false;
		}
	}
	*ret_after = rq->query(rq, "after");
	*ret_batch = n;
	return true;
}

/* Newest first, across hosts. */
static int newest_first(const void *a, const void *b)
{
	const char *x = json_string_value(json_object_get(*(json_t *const *)a, "created"));
	const char *y = json_string_value(json_object_get(*(json_t *const *)b, "created"));

	return strcmp(y ? y : "", x ? x : "");
}

static void sort_newest_first(json_t *list)
{
	size_t n = json_array_size(list);
	json_t **items = malloc((n ? n : 1) * sizeof(*items));

	if (!items)
		return;
	for (size_t i = 0; i < n; i++)
		items[i] = json_incref(json_array_get(list, i));
	qsort(items, n, sizeof(*items), newest_first);
	json_array_clear(list);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(list, items[i]);
	free(items);
}

void api_cluster_list(struct daemon *d, struct request *rq, struct reply *rp,
		      const char *host, route_fn *local_list)
{
	static const char *const skip[] = { "batch", "after", NULL };
	bool has_value[FORWARD_ARGS];
	int nargs;
	char buf[256], err[768] = "";
	const char *self = api_cluster_self(d, buf, sizeof(buf));
	bool all = !strcmp(host, "*"), local = all || !strcmp(host, self), self_done = false;
	bool more = false;
	const char *after = NULL, *last = NULL;
	size_t batch = 0, taken = 0;
	struct fanout f = { .d = d, .user = &rq->user };
	json_t *hosts = NULL, *h, *list = json_array(), *answered = json_array(),
	       *unanswered = json_array();
	size_t i;

	if (!strcmp(rq->user.via, "cluster") && !(local && !all)) {
		/* a daemon asks each host itself: never one host for the others */
		reply_error(rp, 400, "host", "host=%.64s in a request from another daemon; each "
			    "daemon asks each host itself", host);
		goto out;
	}
	f.path = rq->path;
	f.list_key = rq->path + 8; /* past "/api/v1/" */
	nargs = rq->args ? split_args(rq->args, skip, f.key_text, f.value_text, has_value) : -1;
	if (nargs < 0) {
		reply_error(rp, 400, NULL, "the query has too many or too long arguments to pass on; "
			    "shorten it");
		goto out;
	}
	for (int k = 0; k < nargs; k++) {
		f.keys[k] = f.key_text[k];
		f.values[k] = has_value[k] ? f.value_text[k] : NULL;
	}
	f.n_filters = (size_t)nargs;
	if (d->cluster && !(local && !all) &&
	    cluster_hosts(d->cluster, &hosts, err, sizeof(err)) < 0)
		hosts = NULL;
	f.t = calloc(json_array_size(hosts) + 1, sizeof(*f.t));
	if (!f.t || !list || !answered || !unanswered) {
		reply_error(rp, 500, NULL, "out of memory");
		goto out;
	}
	if (all && !batch_of(rq, rp, d->cfg.max_hosts, &after, &batch))
		goto out;
	/* In name order, self among them (it serves, registered or not):
	 * those after "after", at most batch of them. */
	local = !all && local;
	for (i = 0; i <= json_array_size(hosts); i++) {
		h = json_array_get(hosts, i);
		const char *name = h ? json_string_value(json_object_get(h, "name")) : NULL;
		bool self_now = all && !self_done && (!name || strcmp(self, name) <= 0);

		if (self_now) {
			self_done = true;
			if ((!after || strcmp(self, after) > 0) && taken < batch) {
				local = true;
				taken++;
				last = self;
			} else if (!after || strcmp(self, after) > 0) {
				more = true;
			}
		}
		if (!name || !strcmp(name, self) || (!all && strcmp(name, host)))
			continue;
		if (all && after && strcmp(name, after) <= 0)
			continue;
		if (all && taken == batch) {
			more = true;
			continue;
		}
		taken++;
		last = name;
		f.t[f.n].name = name;
		f.t[f.n].pin = json_string_value(json_object_get(h, "tls_pin"));
		f.t[f.n++].url = json_string_value(json_object_get(h, "url"));
	}
	if (!all && !local && !f.n) {
		if (err[0])
			reply_error(rp, 503, "host", "cannot reach host %.64s: %s", host, err);
		else
			reply_error(rp, 404, "host", "no host %.64s in the cluster%s; see GET "
				    "/api/v1/hosts", host, d->cluster ? "" : " (this nprofd is in none: "
				    "[cluster] etcd)");
		goto out;
	}
	ask_all(&f);
	if (local) {
		struct reply mine = { .status = 200, .fd = -1 };
		/* no args: the list as JSON, neither from nor into the reply cache */
		struct request here = *rq;

		here.args = NULL;
		local_list(d, &here, &mine);
		if (mine.status == 200 && json_is_array(json_object_get(mine.json, f.list_key))) {
			json_array_extend(list, json_object_get(mine.json, f.list_key));
			json_array_append_new(answered, json_string(self));
		} else {
			json_array_append_new(unanswered, json_pack("{ss ss}", "host", self, "error",
				json_string_value(json_object_get(mine.json, "error")) ?: "?"));
		}
		json_decref(mine.json);
		free(mine.body);
		with_host(list, self);
	}
	for (i = 0; i < f.n; i++) {
		if (f.t[i].workers) {
			json_array_extend(list, f.t[i].workers);
			json_array_append_new(answered, json_string(f.t[i].name));
		} else {
			json_array_append_new(unanswered, json_pack("{ss ss}", "host", f.t[i].name,
								   "error", f.t[i].error));
		}
	}
	if (strcmp(f.list_key, "workers"))
		sort_newest_first(list);
	rp->json = json_pack("{sO sO sO sb}", f.list_key, list, "answered", answered,
			     "unanswered", unanswered, "partial",
			     json_array_size(unanswered) > 0 || (all && err[0]));
	if (all && err[0])
		json_object_set_new(rp->json, "error", json_string(err));
	if (more && last)
		json_object_set_new(rp->json, "next", json_string(last));
out:
	for (i = 0; f.t && i < f.n; i++)
		json_decref(f.t[i].workers);
	free(f.t);
	json_decref(list);
	json_decref(answered);
	json_decref(unanswered);
	json_decref(hosts);
}

/* --- a file of every host: host=* of ROUTE_GATHER ------------------------- */

struct gathering {
	struct daemon *d;
	const struct user *user;
	const char *method, *path, *body;
	size_t body_len;
	const char *keys[FORWARD_ARGS + GATHER_SET_MAX], *values[FORWARD_ARGS + GATHER_SET_MAX];
	size_t nargs;
	struct gathered *g;
	size_t n;
	size_t next;			/* the next host to ask: atomic */
};

static void gather_one(struct gathering *f, struct gathered *g)
{
	struct remote_reply r = { 0 };
	int fd;

	if (strcmp(f->method, "GET")) {
		if (remote_call(f->d, g->url, g->pin, g->name, f->method, f->path, f->keys, f->values,
				f->nargs, f->body, f->body_len, f->user,
				f->d->cfg.forward_timeout_ns / 1000000, f->d->cfg.max_reply, &r,
				g->error, sizeof(g->error)) < 0)
			return;
	} else if (remote_stream(f->d, g->url, g->pin, g->name, f->path, f->keys, f->values, f->nargs,
			  f->user, f->d->cfg.forward_timeout_ns / 1000000, &r, &fd, g->error,
			  sizeof(g->error)) < 0) {
		return;
	} else if (remote_read_whole(f->d, fd, f->d->cfg.max_reply, &r, g->error,
				     sizeof(g->error)) < 0) {
		/* (a file signed by its size is read whole and held to it below;
		 * JSON, an error, is checked by its hash) */
		return;
	}
	if (r.status == 200 && r.length && r.len != r.length) {
		snprintf(g->error, sizeof(g->error), "its file ended after %zu of %llu bytes",
			 r.len, (unsigned long long)r.length);
		free(r.body);
		return;
	}
	g->status = r.status;
	g->body = r.body;
	g->len = r.len;
	if (r.status >= 300) {
		json_t *j = json_loadb(r.body, r.len, 0, NULL);

		snprintf(g->error, sizeof(g->error), "HTTP %ld: %.400s", r.status,
			 json_string_value(json_object_get(j, "error")) ?: "not nprofd's answer");
		json_decref(j);
	}
}

static void *gatherer(void *arg)
{
	struct gathering *f = arg;
	size_t i;

	while ((i = __atomic_fetch_add(&f->next, 1, __ATOMIC_RELAXED)) < f->n)
		gather_one(f, &f->g[i]);
	return NULL;
}

int api_cluster_gather(struct daemon *d, const struct request *rq, struct reply *rp,
		       const char *const *set_keys, const char *const *set_values, size_t nset,
		       const char *body, size_t body_len, struct gathered **ret, size_t *ret_n,
		       json_t **ret_hosts)
{
	const char *skip[GATHER_SET_MAX + 1] = { NULL };
	char key_text[FORWARD_ARGS][128], value_text[FORWARD_ARGS][256], buf[256], err[768];
	bool has_value[FORWARD_ARGS];
	const char *self = api_cluster_self(d, buf, sizeof(buf));
	struct gathering f = { .d = d, .user = &rq->user, .method = rq->method, .path = rq->path,
			       .body = body, .body_len = body_len };
	json_t *hosts = NULL, *h;
	size_t i;
	int nargs;

	*ret = NULL;
	*ret_n = 0;
	*ret_hosts = NULL;
	if (!strcmp(rq->user.via, "cluster")) {
		reply_error(rp, 400, "host", "host=* in a request from another daemon; each daemon "
			    "asks each host itself");
		return -1;
	}
	if (!d->cluster)
		return 0;
	if (nset > GATHER_SET_MAX) {
		reply_error(rp, 500, NULL, "too many arguments to set");
		return -1;
	}
	for (size_t k = 0; k < nset; k++)
		skip[k] = set_keys[k];
	nargs = rq->args ? split_args(rq->args, skip, key_text, value_text, has_value) : 0;
	if (nargs < 0) {
		reply_error(rp, 400, NULL, "the query has too many or too long arguments to pass on; "
			    "shorten it");
		return -1;
	}
	for (int k = 0; k < nargs; k++) {
		f.keys[k] = key_text[k];
		f.values[k] = has_value[k] ? value_text[k] : NULL;
	}
	for (size_t k = 0; k < nset; k++) {
		f.keys[nargs + k] = set_keys[k];
		f.values[nargs + k] = set_values[k];
	}
	f.nargs = (size_t)nargs + nset;
	if (cluster_hosts(d->cluster, &hosts, err, sizeof(err)) < 0) {
		reply_error(rp, 503, "host", "cannot list the cluster's hosts: %s", err);
		return -1;
	}
	f.g = calloc(json_array_size(hosts) + 1, sizeof(*f.g));
	if (!f.g) {
		reply_error(rp, 500, NULL, "out of memory");
		json_decref(hosts);
		return -1;
	}
	json_array_foreach(hosts, i, h) {
		const char *name = json_string_value(json_object_get(h, "name"));

		if (!name || !strcmp(name, self))
			continue;
		f.g[f.n].name = name;
		f.g[f.n].pin = json_string_value(json_object_get(h, "tls_pin"));
		f.g[f.n++].url = json_string_value(json_object_get(h, "url"));
	}
	run_askers(f.n < d->cfg.fanout ? f.n : d->cfg.fanout, gatherer, &f);
	*ret = f.g;
	*ret_n = f.n;
	*ret_hosts = hosts;
	return 0;
}

void api_gathered_free(struct gathered *g, size_t n, json_t *hosts)
{
	for (size_t i = 0; g && i < n; i++)
		free(g[i].body);
	free(g);
	json_decref(hosts);
}

bool api_cluster_is_self(struct daemon *d, const char *host)
{
	char buf[256];

	return !strcmp(host, api_cluster_self(d, buf, sizeof(buf)));
}

/* "attachment; filename=\"x\"" into rp's filename and inline_view. */
static void pass_disposition(struct reply *rp, const char *disposition)
{
	const char *name = strstr(disposition, "filename=\"");

	if (!disposition[0])
		return;
	rp->inline_view = !strncmp(disposition, "inline", 6);
	if (name) {
		name += 10;
		snprintf(rp->filename, sizeof(rp->filename), "%.*s",
			 (int)(strcspn(name, "\"") < sizeof(rp->filename) - 1 ? strcspn(name, "\"")
									  : sizeof(rp->filename) - 1),
			 name);
	}
	/* a name is never empty; send_reply keeps only safe characters */
	if (!rp->filename[0])
		snprintf(rp->filename, sizeof(rp->filename), "download");
}

/* What may be a file of any size: an artifact, a comparison. */
static bool downloads(const struct request *rq)
{
	return !strcmp(rq->method, "GET") && (!strncmp(rq->path, "/api/v1/artifacts/", 18) ||
					       !strcmp(rq->path, "/api/v1/diff"));
}

/* The registry's record of host: the list (decref it; url and pin point
 * into it), or NULL after replying the error (key names the argument). */
static json_t *find_host(struct daemon *d, struct reply *rp, const char *host, const char *key,
			 const char **ret_url, const char **ret_pin)
{
	char err[768];
	json_t *hosts = NULL, *h;
	size_t i;

	*ret_url = *ret_pin = NULL;
	if (!d->cluster) {
		reply_error(rp, 404, key, "no host %.64s: this nprofd is in no cluster ([cluster] "
			    "etcd)", host);
		return NULL;
	}
	if (cluster_hosts(d->cluster, &hosts, err, sizeof(err)) < 0) {
		reply_error(rp, 503, key, "cannot find host %.64s: %s", host, err);
		return NULL;
	}
	json_array_foreach(hosts, i, h) {
		if (!strcmp(json_string_value(json_object_get(h, "name")), host)) {
			*ret_url = json_string_value(json_object_get(h, "url"));
			*ret_pin = json_string_value(json_object_get(h, "tls_pin"));
		}
	}
	if (!*ret_url) {
		reply_error(rp, 404, key, "no host %.64s in the cluster; see GET /api/v1/hosts", host);
		json_decref(hosts);
		return NULL;
	}
	return hosts;
}

void api_cluster_forward(struct daemon *d, const struct request *rq, struct reply *rp,
			 const char *host)
{
	char keys[FORWARD_ARGS][128], values[FORWARD_ARGS][256], err[768] = "";
	const char *kp[FORWARD_ARGS], *vp[FORWARD_ARGS], *url = NULL, *pin = NULL;
	bool has_value[FORWARD_ARGS];
	struct remote_reply r;
	json_t *hosts = NULL, *j;
	int n;

	if (!strcmp(rq->user.via, "cluster")) {
		reply_error(rp, 400, "host", "host=%.64s in a request from another daemon; each "
			    "daemon asks each host itself", host);
		return;
	}
	n = rq->args ? split_args(rq->args, NULL, keys, values, has_value) : -1;
	if (n < 0) {
		reply_error(rp, 400, NULL, "the query has too many or too long arguments to pass to "
			    "host %.64s; shorten it", host);
		return;
	}
	if (!(hosts = find_host(d, rp, host, "host", &url, &pin)))
		return;
	for (int k = 0; k < n; k++) {
		kp[k] = keys[k];
		vp[k] = has_value[k] ? values[k] : NULL;
	}
	if (downloads(rq)) {
		int fd;

		if (remote_stream(d, url, pin, host, rq->path, kp, vp, (size_t)n, &rq->user,
				  d->cfg.forward_timeout_ns / 1000000, &r, &fd, err, sizeof(err)) < 0) {
			reply_error(rp, 502, "host", "host %.64s: %s", host, err);
			goto out;
		}
		if (r.status == 200 && !r.body_unchecked &&
		    strncmp(r.content_type, "application/json", 16)) {
			/* a file: through as it comes, however large */
			rp->fd = fd;
			rp->fd_is_pipe = true;
			rp->size = r.length;
			snprintf(rp->content_type, sizeof(rp->content_type), "%s",
				 r.content_type[0] ? r.content_type : "application/octet-stream");
			pass_disposition(rp, r.disposition);
			if (!r.disposition[0])
				snprintf(rp->filename, sizeof(rp->filename), "download");
			snprintf(rp->result, sizeof(rp->result), "on host %.64s", host);
			goto out;
		}
		/* JSON (an error, ?info=1), or a body signed whole: read whole
		 * and checked, as any other reply */
		if (remote_read_whole(d, fd, d->cfg.max_reply, &r, err, sizeof(err)) < 0) {
			reply_error(rp, 502, "host", "host %.64s: %s", host, err);
			goto out;
		}
	} else if (remote_call(d, url, pin, host, rq->method, rq->path, kp, vp, (size_t)n, rq->body,
			       rq->body_len, &rq->user, d->cfg.forward_timeout_ns / 1000000,
			       d->cfg.max_reply, &r, err, sizeof(err)) < 0) {
		reply_error(rp, 502, "host", "host %.64s: %s", host, err);
		goto out;
	}
	/* A 401 there is about this daemon's signature or the user's account
	 * there, not the user's sign-in here (which a 401 would end). */
	if (r.status == 401) {
		j = r.body ? json_loadb(r.body, r.len, 0, NULL) : NULL;
		reply_error(rp, 502, "host", "host %.64s refused the request passed on for you: %.300s",
			    host, json_string_value(json_object_get(j, "error")) ?: "401");
		json_decref(j);
		free(r.body);
		goto out;
	}
	/* its reply, as it came: status, type, body, file name */
	rp->status = r.status >= 200 && r.status < 600 ? (unsigned)r.status : 502;
	rp->body = r.body ? r.body : strdup("");
	rp->body_len = r.body ? r.len : 0;
	snprintf(rp->content_type, sizeof(rp->content_type), "%s",
		 r.content_type[0] ? r.content_type : "application/octet-stream");
	pass_disposition(rp, r.disposition);
	/* Only JSON is shown as it came: anything else the other daemon did
	 * not name as a file is saved, never rendered in this daemon's origin. */
	if (!r.disposition[0] && strncmp(rp->content_type, "application/json", 16))
		snprintf(rp->filename, sizeof(rp->filename), "download");
	if (rp->status >= 400 && (j = json_loadb(rp->body, rp->body_len, 0, NULL))) {
		snprintf(rp->result, sizeof(rp->result), "host %.64s: %.180s", host,
			 json_string_value(json_object_get(j, "error")) ?: "?");
		json_decref(j);
	} else {
		snprintf(rp->result, sizeof(rp->result), "on host %.64s", host);
	}
out:
	json_decref(hosts);
}

json_t *api_cluster_artifact(struct daemon *d, const struct request *rq, struct reply *rp,
			     const char *host, const char *id, const char *key, int *ret_fd)
{
	static const char *const info_key[] = { "info" }, *const info_value[] = { "1" };
	char path[128], err[768];
	const char *url, *pin, *format;
	struct remote_reply r = { 0 };
	json_t *hosts, *art = NULL;
	uint64_t timeout_ms = d->cfg.forward_timeout_ns / 1000000;

	if (!strcmp(rq->user.via, "cluster")) {
		reply_error(rp, 400, key, "%s_host=%.64s in a request from another daemon; each "
			    "daemon asks each host itself", key, host);
		return NULL;
	}
	if (strspn(id, "0123456789") != strlen(id) || !id[0] || strlen(id) > 20) {
		reply_error(rp, 400, key, "%s=%.32s: an artifact's id is a number (see GET "
			    "/api/v1/artifacts?host=%.64s)", key, id, host);
		return NULL;
	}
	if (!(hosts = find_host(d, rp, host, key, &url, &pin)))
		return NULL;
	snprintf(path, sizeof(path), "/api/v1/artifacts/%s", id);
	/* its record first: a profile, complete, that the user may read there */
	if (remote_call(d, url, pin, host, "GET", path, info_key, info_value, 1, NULL, 0, &rq->user,
			timeout_ms, d->cfg.max_reply, &r, err, sizeof(err)) < 0) {
		reply_error(rp, 502, key, "host %.64s: %s", host, err);
		goto out;
	}
	art = r.body ? json_loadb(r.body, r.len, 0, NULL) : NULL;
	format = json_string_value(json_object_get(art, "format"));
	if (r.status != 200 || !format) {
		reply_error(rp, r.status == 404 ? 404 : 502, key, "artifact %.32s of host %.64s: %.300s",
			    id, host, json_string_value(json_object_get(art, "error")) ?:
			    "its daemon did not describe it");
	} else if (strcmp(format, "pprof")) {
		reply_error(rp, 400, key, "artifact %.32s of host %.64s is a %.32s, not a profile: only "
			    "profiles compare", id, host, format);
	} else if (!json_is_true(json_object_get(art, "complete"))) {
		reply_error(rp, 409, key, "artifact %.32s of host %.64s is still being written; try "
			    "again when its instance has ended", id, host);
	} else {
		free(r.body);
		r = (struct remote_reply){ 0 };
		/* then the file as stored, flowing in as it is read */
		if (remote_stream(d, url, pin, host, path, NULL, NULL, 0, &rq->user, timeout_ms, &r,
				  ret_fd, err, sizeof(err)) < 0) {
			reply_error(rp, 502, key, "host %.64s: %s", host, err);
		} else if (r.status != 200 || r.body_unchecked) {
			/* (a file is sent as it is read; anything else is not the profile) */
			close(*ret_fd);
			reply_error(rp, 502, key, "host %.64s answered %ld%s for artifact %.32s; try "
				    "again", host, r.status, r.body_unchecked ? ", not with a file" : "",
				    id);
		} else {
			free(r.body);
			json_decref(hosts);
			return art;
		}
	}
out:
	free(r.body);
	json_decref(art);
	json_decref(hosts);
	return NULL;
}
