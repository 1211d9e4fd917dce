#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "container/state.h"
#include "base/utils.h"

struct brig_globals brig_globals = { .root = BRIG_DEFAULT_ROOT };
const char *brig_command_name = NULL;

/* JSON string escaping for log lines (control characters, quotes). */
static void append_escaped(FILE *out, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char) *s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", out);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
}

static bool log_wanted(const char *level)
{
    return brig_globals.log_path && (brig_globals.debug || strcmp(level, "debug") != 0);
}

static void write_log_line(const char *level, const char *msg)
{
    if (!log_wanted(level))
        return;
    cleanup_free char *ts = brig_timestamp_now();
    char *line = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&line, &len);
    if (mem == NULL)
        return;
    if (brig_globals.log_json) {
        fprintf(mem, "{\"level\":\"%s\",\"msg\":\"", level);
        append_escaped(mem, msg);
        fprintf(mem, "\",\"time\":\"%s\"}\n", ts ? ts : "");
    } else {
        fprintf(mem, "time=\"%s\" level=%s msg=\"", ts ? ts : "", level);
        append_escaped(mem, msg);
        fputs("\"\n", mem);
    }
    fclose(mem);
    /* O_APPEND and one write per line: concurrent brig processes sharing
     * a log file never interleave inside a line. */
    int fd = open(brig_globals.log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
        brig_write_all(fd, line, len);
        close(fd);
    }
    free(line);
}

void brig_log(const char *level, const char *fmt, ...)
{
    /* Most runs log nothing: no message is formatted for them. */
    if (!log_wanted(level))
        return;
    cleanup_free char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (r >= 0)
        write_log_line(level, msg);
}

static void report(const char *level, const char *msg)
{
    /* One line, always: flatten anything a hook or the kernel gave us. */
    cleanup_free char *flat = strdup(msg ? msg : "unknown error");
    if (flat)
        for (char *p = flat; *p; p++)
            if (*p == '\n' || *p == '\r')
                *p = ' ';
    const char *text = flat ? flat : "out of memory";
    if (strcmp(level, "warning") == 0)
        fprintf(stderr, "brig: warning: %s\n", text);
    else
        fprintf(stderr, "brig: %s\n", text);
    write_log_line(level, text);
}

int brig_fail(brig_error_t *err)
{
    report("error", *err ? (*err)->msg : NULL);
    brig_error_release(err);
    return 1;
}

int brig_fail_msg(const char *fmt, ...)
{
    cleanup_free char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&msg, fmt, ap);
    va_end(ap);
    report("error", r < 0 ? NULL : msg);
    return 1;
}

void brig_warn(brig_error_t *warning)
{
    if (*warning == NULL)
        return;
    report("warning", (*warning)->msg);
    brig_error_release(warning);
}

int brig_parse_flag_uint(const char *flag, const char *value, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno || *end || end == value || v < 0 || v > 1 << 20)
        return brig_fail_msg("%s: invalid value `%s` for %s", brig_command_name, value, flag);
    *out = (int) v;
    return BRIG_CLI_GO_ON;
}

int brig_usage(const char *text)
{
    fputs(text, stdout);
    return 0;
}

int brig_parse_args(int argc, char **argv, int min, int max, const char *what)
{
    int have = argc - optind;
    if (have < min)
        return brig_fail_msg("%s: missing %s (see `brig %s --help`)", brig_command_name, what,
                             brig_command_name);
    if (have > max)
        return brig_fail_msg("%s: unexpected argument `%s` (see `brig %s --help`)",
                             brig_command_name, argv[optind + max], brig_command_name);
    return BRIG_CLI_GO_ON;
}

int brig_bad_option(char **argv)
{
    const char *flag = optind > 0 ? argv[optind - 1] : "?";
    if (optopt && (flag == NULL || flag[0] != '-' || flag[1] == '-' || strlen(flag) > 2)) {
        if (flag && strncmp(flag, "--", 2) == 0)
            return brig_fail_msg("%s: unknown or incomplete option `%s`", brig_command_name, flag);
        return brig_fail_msg("%s: unknown or incomplete option `-%c`", brig_command_name, optopt);
    }
    return brig_fail_msg("%s: unknown or incomplete option `%s`", brig_command_name, flag);
}

/* "5s", "500ms", "1m", "2h", "2" (seconds) → milliseconds, up to a day. */
int brig_parse_duration_ms(const char *text, int *out)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || v < 0)
        return -1;
    double ms;
    if (*end == '\0' || strcmp(end, "s") == 0)
        ms = v * 1000;
    else if (strcmp(end, "ms") == 0)
        ms = v;
    else if (strcmp(end, "m") == 0)
        ms = v * 60000;
    else if (strcmp(end, "h") == 0)
        ms = v * 3600000;
    else
        return -1;
    /* Written so that a NaN ("nan" parses) is out of range too. */
    if (!(ms >= 1 && ms <= 86400000))
        return -1;
    *out = (int) ms;
    return 0;
}

int brig_parse_plain(int argc, char **argv, const char *usage, int n_args, const char *what)
{
    static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, { 0 } };
    int c;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1)
        return c == 'h' ? brig_usage(usage) : brig_bad_option(argv);
    return brig_parse_args(argc, argv, n_args, n_args, what);
}

int brig_ms_until(const struct timespec *t)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long ms = (long long) (t->tv_sec - now.tv_sec) * 1000
                   + (t->tv_nsec - now.tv_nsec) / 1000000;
    return ms > 0 ? (int) ms : 0;
}
