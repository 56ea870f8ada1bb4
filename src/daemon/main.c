/* nprofd: the host daemon. Reads its configuration, opens the index and
 * the state directory, marks what an earlier run left running as
 * FAILED, then serves the API on the unix socket and HTTP until SIGTERM
 * or SIGINT, when it stops running instances (keeping what they
 * recorded) and exits. */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "daemon/api/api.h"
#include "daemon/api/reply_cache.h"
#include "daemon/api/schedule_runner.h"
#include "daemon/auth/signin_limit.h"
#include "daemon/cluster/cluster.h"
#include "daemon/cluster/cluster_auth.h"
#include "daemon/core/log.h"
#include "daemon/core/wall_time.h"
#include "daemon/door/listen.h"
#include "daemon/door/server.h"
#include "daemon/jobs/jobs.h"
#include "daemon/store/artifacts.h"
#include "daemon/store/db.h"
#include "daemon/store/instances.h"
#include "engine/events.h"
#include "help/nprofd.h"

#ifndef NPROF_VERSION
#define NPROF_VERSION "0.1.0"
#endif

#define DEFAULT_CONFIG "/etc/nprof/nprofd.conf"
#define SHUTDOWN_GRACE_NS (5ull * 1000000000ull)

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("nprofd: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see nprofd --help)\n", stderr);
	return 2;
}

static int copy_opt(char *dst, size_t len, const char *flag, const char *val)
{
	if (strlen(val) >= len)
		return usage_error("%s: the value is too long", flag);
	strcpy(dst, val);
	return 0;
}

/* state_dir: 0711, so that a command running as a worker's owner can
 * reach its own work/ID directory (0700, theirs) by path, and list
 * nothing; nprofd.db (0600 by the umask: token hashes, the audit log)
 * and artifacts/ (0700: other users' data) are root's alone. */
static int make_state_dir(struct daemon *d)
{
	char db_path[PATH_MAX + 16];
	char err[512];
	const struct { char *path; mode_t mode; } dirs[] = {
		{ d->cfg.state_dir, 0711 }, { d->artifacts_dir, 0700 }, { d->work_dir, 0711 },
	};

	snprintf(d->artifacts_dir, sizeof(d->artifacts_dir), "%s/artifacts", d->cfg.state_dir);
	snprintf(d->work_dir, sizeof(d->work_dir), "%s/work", d->cfg.state_dir);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if ((mkdir(dirs[i].path, dirs[i].mode) < 0 && errno != EEXIST) ||
		    chmod(dirs[i].path, dirs[i].mode) < 0) {
			log_error("cannot create %s (mode %o): %s; check state_dir in nprofd.conf",
				  dirs[i].path, (unsigned)dirs[i].mode, strerror(errno));
			return -1;
		}
	}
	snprintf(db_path, sizeof(db_path), "%s/nprofd.db", d->cfg.state_dir);
	d->db = db_open(db_path, err, sizeof(err));
	if (!d->db) {
		log_error("%s", err);
		return -1;
	}
	return 0;
}

static int find_nprof(struct daemon *d)
{
	char self[PATH_MAX];
	ssize_t n;

	if (d->cfg.nprof_path[0]) {
		snprintf(d->nprof, sizeof(d->nprof), "%s", d->cfg.nprof_path);
	} else {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n < 0)
			return -errno;
		self[n] = '\0';
		snprintf(d->nprof, sizeof(d->nprof), "%s/nprof", dirname(self));
	}
	if (access(d->nprof, X_OK) < 0) {
		log_error("cannot run %s (%s): install nprof beside nprofd or set nprof in nprofd.conf",
			  d->nprof, strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "listen", required_argument, NULL, 'l' },
		{ "socket", required_argument, NULL, 's' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "etcd", required_argument, NULL, 'e' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static struct daemon d;
	const char *config = NULL, *listen = NULL, *sock = NULL, *state = NULL, *etcd = NULL;
	bool check_only = false;
	struct server *srv = NULL;
	struct schedule_runner *runner = NULL;
	char err[1024];
	sigset_t stop;
	int opt, sig, status = 1;

	while ((opt = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c': config = optarg; break;
		case 'l': listen = optarg; break;
		case 's': sock = optarg; break;
		case 'd': state = optarg; break;
		case 'e': etcd = optarg; break;
		case 'C': check_only = true; break;
		case 'h': fputs(nprofd_help, stdout); return 0;
		case 'V': printf("nprofd %s\n", NPROF_VERSION); return 0;
		default: return usage_error("unknown option %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (!config && access(DEFAULT_CONFIG, F_OK) == 0)
		config = DEFAULT_CONFIG;
	if (config_load(&d.cfg, config, err, sizeof(err)) < 0) {
		fprintf(stderr, "nprofd: %s\n", err);
		return 1;
	}
	if ((listen && copy_opt(d.cfg.listen, sizeof(d.cfg.listen), "--listen", listen)) ||
	    (sock && copy_opt(d.cfg.socket_path, sizeof(d.cfg.socket_path), "--socket", sock)) ||
	    (state && copy_opt(d.cfg.state_dir, sizeof(d.cfg.state_dir), "--state-dir", state)) ||
	    (etcd && copy_opt(d.cfg.etcd, sizeof(d.cfg.etcd), "--etcd", etcd)))
		return 2;
	if (etcd) {
		const char *why = config_check_urls(etcd, true);

		if (*why)
			return usage_error("--etcd %s: %s; write for example http://10.0.0.2:2379", etcd,
					   why);
		if (etcd[0] && !d.cfg.cluster_key_file[0])
			return usage_error("--etcd needs the cluster's shared key: set [cluster] key_file "
					   "in nprofd.conf (head -c 32 /dev/urandom | base64 "
					   ">/etc/nprof/cluster.key; chmod 600 it)");
	}
	if (listen && listen[0]) {
		bool loopback;

		if (listen_parse(listen, &loopback) < 0)
			return usage_error("--listen %s: not ADDR:PORT; use for example 127.0.0.1:9700",
					   listen);
	}
	if (check_only) {
		printf("nprofd: %s is valid\n", config ? config : "the built-in configuration");
		return 0;
	}
	snprintf(d.config_path, sizeof(d.config_path), "%s", config ? config : "");
	d.started_ms = now_ms();
	pthread_mutex_init(&d.start_lock, NULL);
	pthread_mutex_init(&d.scanner_lock, NULL);
	pthread_mutex_init(&d.list_lock, NULL);
	/* The signals that stop nprofd are taken by sigwait below; every
	 * thread started from here on inherits the mask. A child's death
	 * is seen through its pidfd, not SIGCHLD. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);
	umask(077);
	/* Eight request threads would each grow an arena of their own to its
	 * peak; two are plenty for what nprofd allocates. */
	mallopt(M_ARENA_MAX, 2);
	if (find_nprof(&d) < 0 || make_state_dir(&d) < 0)
		goto out;
	instances_recover(&d);
	artifacts_retain(&d);
	d.scanner = worker_scanner_new();
	d.jobs = jobs_new(instances_job_done, &d);
	d.replies = reply_cache_new(d.cfg.reply_cache_bytes);
	d.signin_limit = signin_limit_new(&(struct signin_limits){
		.max_failures = d.cfg.max_failures,
		.max_address_failures = d.cfg.max_address_failures,
		.failures_per_minute = d.cfg.failures_per_minute,
		.window_ns = d.cfg.failure_window_ns });
	if (!d.scanner || !d.jobs || !d.replies || !d.signin_limit) {
		log_error("out of memory at start");
		goto out;
	}
	worker_perf_probe(&d.perf_ok, &d.hw_ok);
	d.sched_ok = engine_event_probe(engine_event_find("offcpu")) == 0;
	if (d.cfg.cluster_key_file[0]) {
		d.cluster_auth = cluster_auth_new(d.cfg.cluster_key_file, geteuid(),
						  d.cfg.signature_window_ns / 1000000, err, sizeof(err));
		if (!d.cluster_auth) {
			log_error("%s", err);
			goto out;
		}
	}
	if (d.cfg.etcd[0] && !(d.cluster = cluster_new(&d, err, sizeof(err)))) {
		log_error("%s", err);
		goto out;
	}
	srv = server_start(&d, err, sizeof(err));
	if (!srv) {
		log_error("%s", err);
		goto out;
	}
	log_info("nprofd %s ready: socket %s, state %s, nprof %s", NPROF_VERSION,
		 d.cfg.socket_path[0] ? d.cfg.socket_path : "(none)", d.cfg.state_dir, d.nprof);
	if (d.http_url[0])
		log_info("listening on %s", d.http_url);
	if (d.cluster && cluster_start(d.cluster, err, sizeof(err)) < 0) {
		log_error("%s", err);
		goto out;
	}
	if (schedules_declare(&d, err, sizeof(err)) < 0) {
		log_error("%s", err);
		goto out;
	}
	if (!(runner = schedule_runner_start(&d))) {
		log_error("cannot start the thread that runs schedules: out of memory or threads");
		goto out;
	}
	do {
		sig = 0;
		sigwait(&stop, &sig);
	} while (sig == SIGHUP); /* reloading comes later; HUP does not stop it */
	log_info("%s: stopping", strsignal(sig));
	status = 0;
out:
	/* no period begins while the doors close and the jobs stop */
	schedule_runner_stop(runner);
	server_stop(srv);
	/* no request reads it any more: out of the registry at once */
	cluster_free(d.cluster);
	if (d.jobs) {
		uint64_t end = clock_ns(CLOCK_MONOTONIC) + SHUTDOWN_GRACE_NS;
		int64_t *running = NULL;
		size_t n = 0;

		/* Running instances end as STOPPED, with what they recorded
		 * (those the index cannot name end with nprofd, FAILED at its
		 * next start). */
		if (d.db && instances_running_ids(d.db, &running, &n) < 0)
			log_error("cannot read the running instances to stop them");
		for (size_t i = 0; i < n; i++)
			jobs_stop(d.jobs, running[i]);
		free(running);
		while (jobs_running(d.jobs) && clock_ns(CLOCK_MONOTONIC) < end)
			usleep(20000);
		jobs_free(d.jobs);
	}
	api_release(&d);
	worker_scanner_free(d.scanner);
	reply_cache_free(d.replies);
	signin_limit_free(d.signin_limit);
	cluster_auth_free(d.cluster_auth);
	db_close(d.db);
	return status;
}
