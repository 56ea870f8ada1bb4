/* nprof token: API tokens for nprofd's HTTP listener
 * (docs/nprof-token.1.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/daemon_cmd.h"
#include "help/nprof-token.h"

enum long_only { OPT_EXPIRES = 1000, OPT_JSON };

struct token_args {
	const char *verb, *arg, *expires;
	bool json, quiet;
};

static int parse_args(int argc, char **argv, struct token_args *a)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "expires", required_argument, NULL, OPT_EXPIRES },
		{ "json", no_argument, NULL, OPT_JSON },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":qh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_EXPIRES:
			a->expires = optarg;
			break;
		case OPT_JSON:
			a->json = true;
			break;
		case 'q':
			a->quiet = true;
			break;
		case 'h':
			fputs(nprof_token_help, stdout);
			return -1;
		case ':':
		default:
			return cli_option_error("token", c, argv);
		}
	}
	if (optind >= argc)
		return cli_usage_error("token", "use nprof token create|list|revoke");
	a->verb = argv[optind++];
	if (optind < argc)
		a->arg = argv[optind++];
	if (optind < argc)
		return cli_usage_error("token", "unexpected '%s'", argv[optind]);
	if (!strcmp(a->verb, "create"))
		return EXIT_OK;
	if (a->expires)
		return cli_usage_error("token", "--expires goes with create");
	if (!strcmp(a->verb, "list"))
		return a->arg ? cli_usage_error("token", "unexpected '%s' after list", a->arg) : EXIT_OK;
	if (!strcmp(a->verb, "revoke"))
		return a->arg ? EXIT_OK
			      : cli_usage_error("token", "no token id given; use nprof token revoke "
						"ID (nprof token list shows them)");
	return cli_usage_error("token", "'%s' is not a token command; use create, list or revoke",
			       a->verb);
}

/* The URL of nprofd's HTTP listener, as it says, or NULL without one. */
static char *http_url(void)
{
	json_t *who = NULL;
	struct diag d;
	char *url = NULL;

	diag_clear(&d);
	if (daemon_call("GET", "/api/v1/whoami", NULL, &who, NULL, &d) == 0 &&
	    json_is_string(json_object_get(who, "http")))
		url = strdup(json_string_value(json_object_get(who, "http")));
	json_decref(who);
	return url;
}

static int create(const struct token_args *a)
{
	json_t *body = json_object(), *reply = NULL;
	char *text = NULL, *url = NULL, when[40];
	struct diag d;
	int ret = EXIT_FAILED;

	if (a->arg)
		json_object_set_new(body, "name", json_string(a->arg));
	if (a->expires)
		json_object_set_new(body, "expires_in", json_string(a->expires));
	text = json_dumps(body, JSON_COMPACT);
	diag_clear(&d);
	if (!text) {
		cli_error("out of memory");
	} else if (daemon_call("POST", "/api/v1/tokens", text, &reply, NULL, &d) < 0) {
		cli_error("%s", d.msg);
	} else if (a->json) {
		ret = daemon_cmd_print_json(reply);
	} else if (a->quiet) {
		printf("%s\n", daemon_cmd_str(reply, "token", "?"));
		ret = EXIT_OK;
	} else {
		const char *token = daemon_cmd_str(reply, "token", "?");

		url = http_url();
		printf("token %lld \"%s\" of %s, expires %s; it is shown this once:\n%s\n",
		       (long long)json_integer_value(json_object_get(reply, "id")),
		       daemon_cmd_str(reply, "name", "?"), daemon_cmd_str(reply, "user", "?"),
		       daemon_cmd_time(daemon_cmd_str(reply, "expires", NULL), when, sizeof(when)),
		       token);
		if (url)
			printf("Send it to nprofd's HTTP listener:\n"
			       "  curl -H \"Authorization: Bearer %s\" %sapi/v1/workers\n", token, url);
		else
			printf("nprofd has no HTTP listener now: set listen in nprofd.conf to use it\n");
		ret = EXIT_OK;
	}
	free(url);
	free(text);
	json_decref(body);
	json_decref(reply);
	return ret;
}

static void print_list(const json_t *list)
{
	char created[40], expires[40];
	size_t i;
	json_t *t;

	printf("%5s %-16s %-12s %-19s %-19s %s\n", "ID", "NAME", "USER", "CREATED", "EXPIRES",
	       "STATE");
	json_array_foreach(list, i, t) {
		const char *exp = daemon_cmd_str(t, "expires", NULL);
		char now[40];
		time_t tt = time(NULL);
		struct tm tm;

		/* ISO 8601 UTC times compare as text */
		gmtime_r(&tt, &tm);
		strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%S", &tm);
		printf("%5lld ", (long long)json_integer_value(json_object_get(t, "id")));
		daemon_cmd_cell(stdout, daemon_cmd_str(t, "name", "?"), 16, true);
		daemon_cmd_cell(stdout, daemon_cmd_str(t, "user", "?"), 12, true);
		printf("%-19s %-19s %s\n",
		       daemon_cmd_time(daemon_cmd_str(t, "created", NULL), created, sizeof(created)),
		       daemon_cmd_time(exp, expires, sizeof(expires)),
		       json_is_string(json_object_get(t, "revoked")) ? "revoked"
		       : exp && strcmp(exp, now) < 0 ? "expired" : "active");
	}
}

int cmd_token(int argc, char **argv)
{
	struct token_args a = { 0 };
	json_t *reply = NULL;
	char path[64];
	long long id;
	struct diag d;
	int ret;

	ret = parse_args(argc, argv, &a);
	if (ret != EXIT_OK)
		return ret < 0 ? EXIT_OK : ret;
	if (!strcmp(a.verb, "create"))
		return create(&a);
	diag_clear(&d);
	if (!strcmp(a.verb, "list")) {
		if (daemon_call("GET", "/api/v1/tokens", NULL, &reply, NULL, &d) < 0) {
			cli_error("%s", d.msg);
			return EXIT_FAILED;
		}
		if (a.json)
			ret = daemon_cmd_print_json(reply);
		else
			print_list(json_object_get(reply, "tokens"));
		json_decref(reply);
		return ret;
	}
	if (daemon_cmd_parse_id(a.arg, &id) < 0)
		return cli_usage_error("token", "'%s' is not a token id (a positive number)", a.arg);
	snprintf(path, sizeof(path), "/api/v1/tokens/%lld", id);
	if (daemon_call("DELETE", path, NULL, NULL, NULL, &d) < 0) {
		cli_error("%s", d.msg);
		return EXIT_FAILED;
	}
	printf("token %lld revoked: nprofd refuses it from now on\n", id);
	return EXIT_OK;
}
