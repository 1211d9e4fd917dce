#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "brig.h"
#include "base/cleanup.h"
#include "cli.h"
#include "container/container.h"

static const char usage[] =
    "Usage: brig ps [options] ID [-- PS-OPTIONS...]\n\n"
    "List the processes of a container (from its cgroup). The table comes from\n"
    "ps(1) (default options -ef), keeping only the container's processes.\n\n"
    "Options:\n"
    "  -f, --format FORMAT  table (default) or json (an array of pids)\n"
    "  -h, --help           print this help\n";

static bool has_pid(const pid_t *pids, size_t n, long pid)
{
    for (size_t i = 0; i < n; i++)
        if (pids[i] == pid)
            return true;
    return false;
}

/* Index of the PID column in ps's header line, or -1. */
static int pid_column(char *header)
{
    int col = 0;
    char *save = NULL;
    for (char *tok = strtok_r(header, " \t\n", &save); tok;
         tok = strtok_r(NULL, " \t\n", &save), col++)
        if (strcmp(tok, "PID") == 0)
            return col;
    return -1;
}

static long field_at(const char *line, int col)
{
    cleanup_free char *copy = strdup(line);
    char *save = NULL;
    int i = 0;
    for (char *tok = copy ? strtok_r(copy, " \t\n", &save) : NULL; tok;
         tok = strtok_r(NULL, " \t\n", &save), i++)
        if (i == col)
            return strtol(tok, NULL, 10);
    return -1;
}

static int ps_table(const pid_t *pids, size_t n, char **ps_args, int n_args)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return brig_fail_msg("ps: pipe: %s", strerror(errno));
    pid_t child = fork();
    if (child < 0) {
        close(fds[0]);
        close(fds[1]);
        return brig_fail_msg("ps: fork: %s", strerror(errno));
    }
    if (child == 0) {
        dup2(fds[1], STDOUT_FILENO);
        char **argv_ps = calloc((size_t) n_args + 3, sizeof *argv_ps);
        if (argv_ps == NULL)
            _exit(127);
        argv_ps[0] = (char *) "ps";
        if (n_args == 0) {
            argv_ps[1] = (char *) "-ef";
            argv_ps[2] = NULL;
        } else {
            memcpy(argv_ps + 1, ps_args, (size_t) n_args * sizeof *ps_args);
            argv_ps[n_args + 1] = NULL;
        }
        execvp("ps", argv_ps);
        _exit(127);
    }
    close(fds[1]);
    FILE *out = fdopen(fds[0], "r");
    char *line = NULL;
    size_t cap = 0;
    int col = -1;
    for (bool first = true; out && getline(&line, &cap, out) > 0; first = false) {
        if (first) {
            fputs(line, stdout);
            cleanup_free char *header = strdup(line);
            col = header ? pid_column(header) : -1;
            continue;
        }
        if (col >= 0 && has_pid(pids, n, field_at(line, col)))
            fputs(line, stdout);
    }
    free(line);
    if (out)
        fclose(out);
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return brig_fail_msg("ps: ps(1) failed (status %d)",
                             WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    if (col < 0)
        return brig_fail_msg("ps: the output of ps has no PID column");
    return 0;
}

int brig_cmd_ps(int argc, char **argv)
{
    static const struct option opts[] = {
        { "format", required_argument, NULL, 'f' },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    bool json = false;
    int c;
    while ((c = getopt_long(argc, argv, "+f:h", opts, NULL)) != -1) {
        if (c == 'f' && strcmp(optarg, "json") == 0)
            json = true;
        else if (c == 'f' && strcmp(optarg, "table") != 0)
            return brig_fail_msg("ps: unknown format `%s` (table or json)", optarg);
        else if (c == 'h')
            return brig_usage(usage);
        else if (c != 'f')
            return brig_bad_option(argv);
    }
    /* What follows the id is ps's own arguments. */
    int done = brig_parse_args(argc, argv, 1, argc, "container id");
    if (done != BRIG_CLI_GO_ON)
        return done;
    const char *id = argv[optind++];
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    if (json && optind < argc)
        return brig_fail_msg("ps: ps options make no sense with --format json");
    brig_error_t err = NULL;
    cleanup_free pid_t *pids = NULL;
    size_t n = 0;
    if (brig_container_pids(brig_globals.root, id, &pids, &n, &err) < 0)
        return brig_fail(&err);
    if (!json)
        return ps_table(pids, n, argv + optind, argc - optind);
    fputc('[', stdout);
    for (size_t i = 0; i < n; i++)
        printf("%s%d", i ? "," : "", pids[i]);
    fputs("]\n", stdout);
    return 0;
}
