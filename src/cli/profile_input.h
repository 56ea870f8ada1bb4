/* profile_input: reading a profile file in any format nprof reads
 * (collapsed text, pprof gzipped or not, nprof's JFR), recognized from its
 * content. One reading path for every command that takes a profile file
 * (convert, diff), so they accept and refuse the same inputs. */
#ifndef NPROF_CLI_PROFILE_INPUT_H
#define NPROF_CLI_PROFILE_INPUT_H

#include "profile/merge.h"
#include "profile/profile.h"

/* Reads path ("-" for standard input) into a new profile. On failure
 * prints one line naming the file and the cause (cmd names the command in
 * the hint: "convert reads collapsed text, pprof and JFR") and returns
 * EXIT_FAILED; EXIT_OK and *ret_p on success. */
int cli_read_profile(const char *cmd, const char *path, struct profile **ret_p);

/* Reads path, several profiles one after the other, each after its
 * length in bytes, optionally the roots to put it under (each after a
 * tab: "[host b]", "[nginx pid=12]"), and a newline ("51234\n" or
 * "51234\t[nginx pid=12]\n", then the bytes: what nprofd sends to merge
 * a service's recordings or its workers'), and hands each to each with
 * its roots (each owns the profile: EXIT_OK, or EXIT_FAILED after its one
 * line). EXIT_OK, or EXIT_FAILED after the line naming the part. */
int cli_read_parts(const char *cmd, const char *path,
		   int (*each)(void *ctx, struct profile *p, const char *const *roots,
			       unsigned nroots),
		   void *ctx);

/* Profiles read one after another, merged into the first (each
 * process's threads, a service's recordings over time): what
 * profile_merge takes, the same values. Start zeroed; cli_merge_in is
 * an each for cli_read_parts (or called with each profile read), and
 * cli_merged_done ends it: EXIT_OK and *ret (NULL when none), or
 * EXIT_FAILED, everything freed. */
struct cli_merged {
	struct profile *p;
	unsigned n;
};
int cli_merge_in(void *ctx, struct profile *more, const char *const *roots, unsigned nroots);
int cli_merged_done(struct cli_merged *m, int ret, struct profile **ret_p);

#endif
