#define _GNU_SOURCE
/* brig: the command line. Global flags come before the command, as runc
 * takes them, so podman and containerd can drive brig unchanged. */
#include "config.h"

#include <getopt.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>

#include "brig.h"
#include "cli.h"
#include "sandbox/sandbox.h"
#include "selfexe/selfexe.h"
#include "container/state.h"

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    { "create", brig_cmd_create, "create a container, its init blocked before exec" },
    { "start", brig_cmd_start, "start the process of a created container" },
    { "run", brig_cmd_run, "create and start a container, wait for it" },
    { "exec", brig_cmd_exec, "run a new process in a running container" },
    { "state", brig_cmd_state, "print the state of a container as JSON" },
    { "kill", brig_cmd_kill, "send a signal to a container's init (or all its processes)" },
    { "delete", brig_cmd_delete, "remove a container and everything it left" },
    { "list", brig_cmd_list, "list the containers under --root" },
    { "spec", brig_cmd_spec, "write a default config.json" },
    { "pause", brig_cmd_pause, "freeze every process of a container" },
    { "resume", brig_cmd_resume, "thaw a paused container" },
    { "ps", brig_cmd_ps, "list the processes of a container" },
    { "update", brig_cmd_update, "change the resource limits of a running container" },
    { "events", brig_cmd_events, "print resource statistics and OOM events of a container" },
    { "sandbox", brig_cmd_sandbox, "create, use and remove sandboxes (brig-sandbox(8))" },
    { "serve", brig_cmd_serve, "serve the sandbox API over HTTP (brig-serve(8))" },
    { "features", brig_cmd_features, "print what this runtime supports, as OCI features JSON" },
    { "checkpoint", brig_cmd_checkpoint, "checkpoint a running container with criu" },
    { "restore", brig_cmd_restore, "restore a container from a checkpoint" },
};

static int usage(FILE *out)
{
    fputs("Usage: brig [global options] COMMAND [options] [args]\n\n"
          "An OCI container runtime for hardened, disposable sandboxes.\n\n"
          "Commands:\n",
          out);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fputs("\nGlobal options:\n"
          "  --root DIR           state directory (default " BRIG_DEFAULT_ROOT ")\n"
          "  --log FILE           also write log lines to FILE\n"
          "  --log-format FORMAT  text (default) or json\n"
          "  --debug              log debug lines too\n"
          "  --systemd-cgroup     cgroups through systemd: cgroupsPath is slice:prefix:name\n"
          "  --cgroup-manager M   cgroupfs (default), systemd, or disabled: the caller\n"
          "                       manages cgroups\n"
          "  -v, --version        print the version\n"
          "  -h, --help           print this help\n\n"
          "`brig COMMAND --help` describes a command; `man brig-COMMAND` has more.\n",
          out);
    return out == stdout ? 0 : 1;
}

static int version(void)
{
    const struct scmp_version *v = seccomp_version();
    printf("brig version %s\nspec: %s\nlibseccomp: %u.%u.%u\n", PACKAGE_VERSION, BRIG_OCI_VERSION,
           v ? v->major : 0, v ? v->minor : 0, v ? v->micro : 0);
    return 0;
}

enum {
    OPT_ROOT = 256,
    OPT_LOG,
    OPT_LOG_FORMAT,
    OPT_DEBUG,
    OPT_SYSTEMD_CGROUP,
    OPT_ROOTLESS,
    OPT_CGROUP_MANAGER,
};

/* Runs the command argv[0] names with its own arguments; `all` is brig's
 * whole command line, for the re-execution of the guard. */
static int run_command(int argc, char **argv, char **all)
{
    const char *name = argv[0];
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(name, commands[i].name) != 0)
            continue;
        brig_command_name = name;
        /* These put processes into a container: what enters it runs from a
         * read-only view of brig's file (or a sealed copy), so the
         * container can't reach the host's file. exec moves onto it at
         * once; the others leave the move to the init they start, when it
         * is alone in a new pid namespace (libcontainer/selfexe/selfexe.c). */
        brig_error_t err = NULL;
        bool starts = strcmp(name, "create") == 0 || strcmp(name, "run") == 0
                      || strcmp(name, "sandbox") == 0;
        if ((starts && brig_selfexe_defer(all, &err) < 0)
            || (strcmp(name, "exec") == 0 && brig_selfexe_protect(all, &err) < 0))
            return brig_fail(&err);
        brig_log("debug", "%s", name);
        optind = 0; /* re-initialise getopt for the command's own flags */
        return commands[i].fn(argc, argv);
    }
    return brig_fail_msg("unknown command `%s` (see `brig --help`)", name);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "root", required_argument, NULL, OPT_ROOT },
        { "log", required_argument, NULL, OPT_LOG },
        { "log-format", required_argument, NULL, OPT_LOG_FORMAT },
        { "debug", no_argument, NULL, OPT_DEBUG },
        { "systemd-cgroup", no_argument, NULL, OPT_SYSTEMD_CGROUP },
        { "rootless", required_argument, NULL, OPT_ROOTLESS },
        { "cgroup-manager", required_argument, NULL, OPT_CGROUP_MANAGER },
        { "version", no_argument, NULL, 'v' },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    brig_command_name = "brig";
    /* The kinds of container brig makes beyond plain ones: later commands
     * (exec, delete, checkpoint) find a sandbox's handler by its name. */
    brig_handlers_register(brig_sandbox_handlers);
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+vh", opts, NULL)) != -1) {
        switch (c) {
        case OPT_ROOT:
            brig_globals.root = optarg;
            break;
        case OPT_LOG:
            brig_globals.log_path = optarg;
            break;
        case OPT_LOG_FORMAT:
            if (strcmp(optarg, "json") == 0)
                brig_globals.log_json = true;
            else if (strcmp(optarg, "text") == 0)
                brig_globals.log_json = false;
            else
                return brig_fail_msg("--log-format: unknown format `%s` (text or json)", optarg);
            break;
        case OPT_DEBUG:
            brig_globals.debug = true;
            break;
        case OPT_SYSTEMD_CGROUP:
            brig_globals.systemd_cgroup = true;
            break;
        case OPT_CGROUP_MANAGER:
            if (strcmp(optarg, "disabled") == 0)
                brig_globals.no_cgroup = true;
            else if (strcmp(optarg, "systemd") == 0)
                brig_globals.systemd_cgroup = true;
            else if (strcmp(optarg, "cgroupfs") != 0)
                return brig_fail_msg(
                    "--cgroup-manager: `%s` is not supported (cgroupfs, systemd or disabled)",
                    optarg);
            break;
        case OPT_ROOTLESS:
            break; /* runc's "auto|true|false": brig decides by itself */
        case 'v':
            return version();
        case 'h':
            return usage(stdout);
        default:
            return brig_bad_option(argv);
        }
    }
    if (optind >= argc)
        return usage(stderr);
    return run_command(argc - optind, argv + optind, argv);
}
