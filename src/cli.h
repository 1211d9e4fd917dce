/* What every command shares: global flags, logging in runc's shapes, the
 * one-line error report, and option parsing helpers.
 *
 * How the pieces of a command answer:
 *
 * - A command (brig_cmd_*), and each step of its work, returns brig's exit
 *   status.
 * - A parser, anything that reads the command line (its flags, their
 *   values, the positional arguments), returns BRIG_CLI_GO_ON when the
 *   command goes on, else the exit status to return at once: 0 after
 *   --help printed the usage, 1 after an error it reported. Every call site
 *   reads the same:
 *
 *       int done = create_flags_parse(argc, argv, ...);
 *       if (done != BRIG_CLI_GO_ON)
 *           return done;
 *
 * - A reporter (brig_usage, brig_fail, brig_fail_msg, brig_bad_option)
 *   says its piece and returns the exit status that goes with it, so a
 *   parser can end with `return brig_bad_option(argv);`.
 *
 * BRIG_CLI_GO_ON is negative: no exit status is. */
#ifndef BRIG_CLI_H
#define BRIG_CLI_H

#include <getopt.h>
#include <stdbool.h>

#include "base/error.h"

#define BRIG_CLI_GO_ON (-1)

struct brig_globals {
    const char *root;
    const char *log_path;
    bool log_json;
    bool debug;
    bool systemd_cgroup;
    bool no_cgroup; /* --cgroup-manager=disabled */
};

extern struct brig_globals brig_globals;
extern const char *brig_command_name;

/* Writes a log line to --log (text: time="…" level=… msg="…"; json:
 * {"level":…,"msg":…,"time":…}). Debug lines only with --debug. */
void brig_log(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reports err as one line on stderr and in the log; returns exit status 1. */
int brig_fail(brig_error_t *err);
/* A message-only failure (bad usage): same shape, returns 1. */
int brig_fail_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A warning that doesn't change the outcome (failed poststart hook). */
void brig_warn(brig_error_t *warning);

/* Parser: a non-negative int option value (at most 2^20); the error
 * names the flag. */
int brig_parse_flag_uint(const char *flag, const char *value, int *out);

/* Parser: between min and max positional arguments from optind on; the
 * error names the command and `what` is missing, or the first extra one. */
int brig_parse_args(int argc, char **argv, int min, int max, const char *what);

/* Parser for commands with no option but --help: that, and exactly n_args
 * arguments. */
int brig_parse_plain(int argc, char **argv, const char *usage, int n_args, const char *what);

/* Not a parser, a conversion that reports nothing: "5s", "500ms", "1m",
 * "2h", "2" (seconds) → milliseconds, from 1 ms to a day; -1 when
 * malformed or out of that range. */
int brig_parse_duration_ms(const char *text, int *out);

/* Milliseconds from now (CLOCK_MONOTONIC) to *t; 0 once it has passed. */
struct timespec;
int brig_ms_until(const struct timespec *t);

/* Reporter: prints usage (to stdout, for --help) and returns 0. */
int brig_usage(const char *text);

/* Reporter: getopt_long returned '?' or ':': one line naming the flag;
 * returns 1. */
int brig_bad_option(char **argv);

#endif
