#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "brig.h"
#include "cli.h"
#include "sandbox/lifetime.h"
#include "sandbox/manage.h"
#include "sandbox_cmd.h"

static const char usage[] =
    "Usage: brig sandbox COMMAND [options] ...\n\n"
    "Sandboxes: containers with the sandbox profile (the shared read-only\n"
    "Debian tree, brig-init as PID 1, the non-root user, a /mnt/data workspace\n"
    "with a quota that lasts until `rm`).\n\n"
    "Commands:\n"
    "  create [options] ID          start a sandbox\n"
    "  exec [options] ID -- CMD...  run a command in it (user sandbox, cwd /mnt/data)\n"
    "  cp SRC ID:PATH | ID:PATH DST copy a file into or out of /mnt/data\n"
    "  download ID URL PATH         fetch URL on the host's side into /mnt/data\n"
    "  session COMMAND ID ...       named processes on a pty that take input and\n"
    "                               keep their output (start, input, read, ls, kill)\n"
    "  ls                           the sandboxes: state, age, time left, /mnt/data use\n"
    "  rm ID                        kill it and remove everything, /mnt/data included\n"
    "  reap                         remove the sandboxes whose ttl or idle timeout passed\n"
    "  checkpoint [options] ID      dump its processes to disk (criu), data kept\n"
    "  restore [options] ID         bring a checkpointed sandbox back\n"
    "  template COMMAND ...         trees from OCI image archives and docker-archives\n"
    "                               (import NAME IMAGE.tar, ls, rm NAME)\n\n"
    "See `brig sandbox COMMAND --help` and brig-sandbox(8).\n";

/* ---- rm ---- */

static const char rm_usage[] =
    "Usage: brig sandbox rm ID\n\n"
    "Kill the sandbox and remove it: its processes, cgroup, mounts, loop\n"
    "device, state and /mnt/data. Works on a half-created sandbox too.\n";

static int cmd_rm(int argc, char **argv)
{
    int done = brig_parse_plain(argc, argv, rm_usage, 1, "sandbox id");
    if (done != BRIG_CLI_GO_ON)
        return done;
    const char *id = argv[optind];
    brig_error_t err = NULL;
    int found = brig_sandbox_exists(brig_globals.root, id, &err);
    if (found < 0)
        return brig_fail(&err);
    if (!found) {
        brig_sandbox_sweep(); /* a killed rm of it may have left its range's record */
        return brig_fail_msg("sandbox rm: no sandbox `%s`", id);
    }
    if (brig_sandbox_remove(brig_globals.root, id, &err) < 0)
        return brig_fail(&err);
    return 0;
}

/* ---- ls ---- */

/* Until its deadline: `-` for none, 0s once it passed (the reaper's
 * next pass removes it). */
static void print_left(const struct brig_sandbox_entry *e, char *buf, size_t len)
{
    if (e->deadline_ms == INT64_MAX)
        snprintf(buf, len, "-");
    else
        brig_sandbox_span(e->deadline_ms - brig_sandbox_now_ms(), buf, len);
}

void sandbox_print_size(uint64_t bytes, char *buf, size_t len)
{
    static const char units[] = "BKMGT";
    double v = (double) bytes;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%lluB", (unsigned long long) bytes);
    else
        snprintf(buf, len, v < 10 ? "%.1f%c" : "%.0f%c", v, units[u]);
}

static void print_entry(const struct brig_sandbox_entry *e)
{
    char age[32], left[32], used[16], size[16], data[40] = "-";
    brig_sandbox_span((int64_t) (time(NULL) - e->mtime) * 1000, age, sizeof age);
    print_left(e, left, sizeof left);
    if (e->data_mounted) {
        sandbox_print_size(e->data_used, used, sizeof used);
        sandbox_print_size(e->data_size, size, sizeof size);
        snprintf(data, sizeof data, "%s/%s", used, size);
    }
    /* No container: the leftovers of a failed create. */
    const char *state = e->has_container ? brig_status_name(e->status) : "broken";
    printf("%-20s %-10s %-6s %-6s %s\n", e->id, state, age, left, data);
}

static int cmd_ls(int argc, char **argv)
{
    static const char ls_usage[] =
        "Usage: brig sandbox ls\n\n"
        "List the sandboxes: ID, STATE (running, stopped, ... or `broken` for\n"
        "leftovers of a failed create; `rm` them), AGE, LEFT (the time until its\n"
        "--ttl or --idle-timeout removes it, `-` for none) and DATA (used/size\n"
        "of /mnt/data).\n";
    int done = brig_parse_plain(argc, argv, ls_usage, 0, "");
    if (done != BRIG_CLI_GO_ON)
        return done;
    printf("%-20s %-10s %-6s %-6s %s\n", "ID", "STATE", "AGE", "LEFT", "DATA");
    struct brig_sandbox_entry *entries;
    size_t n;
    brig_error_t err = NULL;
    if (brig_sandbox_list(brig_globals.root, &entries, &n, &err) < 0)
        return brig_error_wrap(&err, "sandbox ls"), brig_fail(&err);
    for (size_t i = 0; i < n; i++)
        print_entry(&entries[i]);
    brig_sandbox_list_free(entries, n);
    return 0;
}

/* ---- dispatch ---- */

int sandbox_dispatch(int argc, char **argv, const char *what, const char *help,
                     const struct sandbox_subcommand *commands, size_t n)
{
    char names[256] = "";
    for (size_t i = 0; i < n; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                 commands[i].name);
    if (argc < 2)
        return brig_fail_msg("%s: missing command (%s; see `brig %s --help`)", what, names, what);
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
        return brig_usage(help);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(argv[1], commands[i].name) == 0) {
            optind = 0; /* getopt starts afresh for the subcommand */
            return commands[i].fn(argc - 1, argv + 1);
        }
    }
    return brig_fail_msg("%s: unknown command `%s` (%s)", what, argv[1], names);
}

int brig_cmd_sandbox(int argc, char **argv)
{
    static const struct sandbox_subcommand commands[] = {
        { "create", sandbox_cmd_create },
        { "exec", sandbox_cmd_exec },
        { "cp", sandbox_cmd_cp },
        { "download", sandbox_cmd_download },
        { "ls", cmd_ls },
        { "rm", cmd_rm },
        { "checkpoint", sandbox_cmd_checkpoint },
        { "restore", sandbox_cmd_restore },
        { "reap", sandbox_cmd_reap },
        { "session", sandbox_cmd_session },
        { "template", sandbox_cmd_template },
    };
    return sandbox_dispatch(argc, argv, "sandbox", usage, commands,
                            sizeof commands / sizeof *commands);
}
