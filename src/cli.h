/* What every command shares: global flags, logging in runc's shapes, the
 * one-line error report, and option parsing helpers. */
#ifndef BRIG_CLI_H
#define BRIG_CLI_H

#include <getopt.h>
#include <stdbool.h>

#include "base/error.h"

struct brig_globals {
    const char *root;
    const char *log_path;
    bool log_json;
    bool debug;
    bool systemd_cgroup;
    bool no_cgroup;        /* --cgroup-manager=disabled */
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

/* Parses a non-negative int option; fails with a message naming the flag. */
int brig_parse_uint(const char *flag, const char *value, int *out);

/* "5s", "500ms", "1m", "2" (seconds) → milliseconds; -1 when malformed. */
int brig_parse_duration_ms(const char *text, int *out);

/* Milliseconds from now (CLOCK_MONOTONIC) to *t; 0 once it has passed. */
struct timespec;
int brig_ms_until(const struct timespec *t);

/* Prints usage (to stdout for --help) and returns 0. */
int brig_usage(const char *text);

/* Expect exactly `n` positional args; else one-line error naming the command. */
int brig_expect_args(int argc, char **argv, int n, const char *what);



/* For commands with no option but --help: parses that and checks there are
 * exactly n_args arguments. Returns -1 to go on, else the exit status
 * (0 after --help, 1 after a reported error). */
int brig_parse_plain(int argc, char **argv, const char *usage, int n_args, const char *what);

/* getopt_long returned '?' or ':': one line naming the flag. */
int brig_bad_option(char **argv);
#endif
