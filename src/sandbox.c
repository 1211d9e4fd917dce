#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "brig.h"
#include "base/cleanup.h"
#include "cli.h"
#include "container/container.h"
#include "sandbox/dataimage.h"
#include "sandbox/profile.h"
#include "sandbox_cmd.h"
#include "spec/spec.h"
#include "base/utils.h"

static const char usage[] =
    "Usage: brig sandbox COMMAND [options] ...\n\n"
    "Sandboxes: containers with the sandbox profile (the shared read-only\n"
    "Debian tree, brig-init as PID 1, the non-root user, a /mnt/data workspace\n"
    "with a quota that lasts until `rm`).\n\n"
    "Commands:\n"
    "  create [options] ID          start a sandbox\n"
    "  exec [options] ID -- CMD...  run a command in it (user sandbox, cwd /mnt/data)\n"
    "  cp SRC ID:PATH | ID:PATH DST copy a file into or out of /mnt/data\n"
    "  ls                           the sandboxes: state, age, /mnt/data use\n"
    "  rm ID                        kill it and remove everything, /mnt/data included\n"
    "  checkpoint [options] ID      dump its processes to disk (criu), data kept\n"
    "  restore [options] ID         bring a checkpointed sandbox back\n\n"
    "See `brig sandbox COMMAND --help` and brig-sandbox(8).\n";

/* Where sandboxes keep their bundle and data image: $BRIG_SANDBOX_DIR, or
 * the default next to the shared tree. */
const char *sandbox_home(void)
{
    const char *env = getenv("BRIG_SANDBOX_DIR");
    return env && *env ? env : "/var/lib/brig/sandboxes";
}

int sandbox_dir(const char *id, char **out)
{
    if (*id == '\0' || strchr(id, '/') || strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
        return brig_fail_msg("sandbox: invalid id `%s`", id);
    if (asprintf(out, "%s/%s", sandbox_home(), id) < 0)
        return brig_fail_msg("sandbox: out of memory");
    return 0;
}

/* ---- rm ---- */

static const char rm_usage[] =
    "Usage: brig sandbox rm ID\n\n"
    "Kill the sandbox and remove it: its processes, cgroup, mounts, loop\n"
    "device, state and /mnt/data. Works on a half-created sandbox too.\n";

int sandbox_remove(const char *id, brig_error_t *err)
{
    cleanup_free char *dir = NULL;
    if (asprintf(&dir, "%s/%s", sandbox_home(), id) < 0)
        return brig_error_set(err, ENOMEM, "sandbox");
    brig_error_t warning = NULL;
    if (brig_container_delete(brig_globals.root, id, true, &warning, err) < 0)
        return -1;
    brig_error_release(&warning);
    /* A create that died before the container existed can still have
     * mounted the data. */
    if (brig_data_image_unmount(dir, err) < 0)
        return -1;
    cleanup_close int home = open(sandbox_home(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (home < 0)
        return errno == ENOENT ? 0 : brig_error_set(err, errno, "open `%s`", sandbox_home());
    if (faccessat(home, id, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
        return 0;
    return brig_remove_tree_at(home, id, err);
}

static int cmd_rm(int argc, char **argv)
{
    int done = brig_parse_plain(argc, argv, rm_usage, 1, "sandbox id");
    if (done >= 0)
        return done;
    const char *id = argv[optind];
    cleanup_free char *dir = NULL;
    if (sandbox_dir(id, &dir))
        return 1;
    struct stat st;
    brig_error_t err = NULL;
    struct brig_state *state = NULL;
    enum brig_status status;
    if (stat(dir, &st) < 0 && brig_container_state(brig_globals.root, id, &state, &status, &err) < 0) {
        brig_error_release(&err);
        return brig_fail_msg("sandbox rm: no sandbox `%s`", id);
    }
    brig_state_free(state);
    if (sandbox_remove(id, &err) < 0)
        return brig_fail(&err);
    return 0;
}

/* ---- ls ---- */

static void print_age(time_t since, char *buf, size_t len)
{
    long s = (long) (time(NULL) - since);
    if (s < 0)
        s = 0;
    if (s < 120)
        snprintf(buf, len, "%lds", s);
    else if (s < 7200)
        snprintf(buf, len, "%ldm", s / 60);
    else if (s < 172800)
        snprintf(buf, len, "%ldh", s / 3600);
    else
        snprintf(buf, len, "%ldd", s / 86400);
}

static void print_size(uint64_t bytes, char *buf, size_t len)
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

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *) a, *(char *const *) b);
}

static int cmd_ls(int argc, char **argv)
{
    static const char ls_usage[] =
        "Usage: brig sandbox ls\n\n"
        "List the sandboxes: ID, STATE (running, stopped, ... or `broken` for\n"
        "leftovers of a failed create; `rm` them), AGE and DATA (used/size of\n"
        "/mnt/data).\n";
    int done = brig_parse_plain(argc, argv, ls_usage, 0, "");
    if (done >= 0)
        return done;
    cleanup_dir DIR *d = opendir(sandbox_home());
    printf("%-20s %-10s %-6s %s\n", "ID", "STATE", "AGE", "DATA");
    if (d == NULL)
        return errno == ENOENT ? 0 : brig_fail_msg("sandbox ls: open `%s`: %s", sandbox_home(), strerror(errno));
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char **bigger = realloc(names, (n + 1) * sizeof *names);
        if (bigger == NULL || (bigger[n] = strdup(de->d_name)) == NULL) {
            free(bigger ? bigger : names);
            return brig_fail_msg("sandbox ls: out of memory");
        }
        names = bigger;
        n++;
    }
    qsort(names, n, sizeof *names, name_cmp);
    for (size_t i = 0; i < n; i++) {
        cleanup_free char *dir = NULL;
        struct stat st;
        if (asprintf(&dir, "%s/%s", sandbox_home(), names[i]) < 0 || stat(dir, &st) < 0) {
            free(names[i]);
            continue;
        }
        struct brig_state *state = NULL;
        enum brig_status status;
        brig_error_t err = NULL;
        const char *state_name = "broken";
        if (brig_container_state(brig_globals.root, names[i], &state, &status, &err) == 0)
            state_name = brig_status_name(status);
        brig_error_release(&err);
        brig_state_free(state);
        char age[32], used_s[16], size_s[16], data[40] = "-";
        print_age(st.st_mtime, age, sizeof age);
        uint64_t used, size;
        if (brig_data_image_usage(dir, &used, &size, &err) == 0) {
            print_size(used, used_s, sizeof used_s);
            print_size(size, size_s, sizeof size_s);
            snprintf(data, sizeof data, "%s/%s", used_s, size_s);
        }
        brig_error_release(&err);
        printf("%-20s %-10s %-6s %s\n", names[i], state_name, age, data);
        free(names[i]);
    }
    free(names);
    return 0;
}

/* ---- dispatch ---- */

int brig_cmd_sandbox(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } commands[] = {
        { "create", sandbox_cmd_create }, { "exec", sandbox_cmd_exec },
        { "cp", sandbox_cmd_cp }, { "ls", cmd_ls }, { "rm", cmd_rm },
        { "checkpoint", sandbox_cmd_checkpoint }, { "restore", sandbox_cmd_restore },
    };
    if (argc < 2)
        return brig_fail_msg("sandbox: missing command (create, exec, cp, ls, rm, checkpoint, restore; see `brig sandbox --help`)");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
        return brig_usage(usage);
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        if (strcmp(argv[1], commands[i].name) == 0) {
            optind = 0; /* getopt starts afresh for the subcommand */
            return commands[i].fn(argc - 1, argv + 1);
        }
    }
    return brig_fail_msg("sandbox: unknown command `%s` (create, exec, cp, ls, rm, checkpoint, restore)", argv[1]);
}
