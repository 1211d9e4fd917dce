#define _GNU_SOURCE
#include "criu_flags.h"

#include <getopt.h>
#include <string.h>

#include "cli.h"

enum {
    OPT_IMAGE_PATH = 400,
    OPT_WORK_PATH,
    OPT_PARENT_PATH,
    OPT_LEAVE_RUNNING,
    OPT_TCP_ESTABLISHED,
    OPT_EXT_UNIX_SK,
    OPT_SHELL_JOB,
    OPT_FILE_LOCKS,
    OPT_PRE_DUMP,
    OPT_MANAGE_CGROUPS_MODE,
    OPT_EMPTY_NS,
    OPT_AUTO_DEDUP,
    OPT_LAZY_PAGES,
    OPT_PAGE_SERVER,
    OPT_STATUS_FD,
    OPT_PID_FILE,
    OPT_NO_SUBREAPER,
    OPT_NO_PIVOT,
    OPT_CONSOLE_SOCKET,
};

static const struct option options[] = {
    { "image-path", required_argument, NULL, OPT_IMAGE_PATH },
    { "work-path", required_argument, NULL, OPT_WORK_PATH },
    { "parent-path", required_argument, NULL, OPT_PARENT_PATH },
    { "leave-running", no_argument, NULL, OPT_LEAVE_RUNNING },
    { "tcp-established", no_argument, NULL, OPT_TCP_ESTABLISHED },
    { "ext-unix-sk", no_argument, NULL, OPT_EXT_UNIX_SK },
    { "shell-job", no_argument, NULL, OPT_SHELL_JOB },
    { "file-locks", no_argument, NULL, OPT_FILE_LOCKS },
    { "pre-dump", no_argument, NULL, OPT_PRE_DUMP },
    { "manage-cgroups-mode", required_argument, NULL, OPT_MANAGE_CGROUPS_MODE },
    { "empty-ns", required_argument, NULL, OPT_EMPTY_NS },
    { "auto-dedup", no_argument, NULL, OPT_AUTO_DEDUP },
    { "lazy-pages", no_argument, NULL, OPT_LAZY_PAGES },
    { "page-server", required_argument, NULL, OPT_PAGE_SERVER },
    { "status-fd", required_argument, NULL, OPT_STATUS_FD },
    { "bundle", required_argument, NULL, 'b' },
    { "detach", no_argument, NULL, 'd' },
    { "pid-file", required_argument, NULL, OPT_PID_FILE },
    { "no-subreaper", no_argument, NULL, OPT_NO_SUBREAPER },
    { "no-pivot", no_argument, NULL, OPT_NO_PIVOT },
    { "console-socket", required_argument, NULL, OPT_CONSOLE_SOCKET },
    { "help", no_argument, NULL, 'h' },
    { 0 },
};

/* Flags of one command only: the other one refuses them by name. */
static bool for_checkpoint_only(int c)
{
    return c == OPT_PARENT_PATH || c == OPT_LEAVE_RUNNING || c == OPT_PRE_DUMP
           || c == OPT_PAGE_SERVER || c == OPT_STATUS_FD;
}

static bool for_restore_only(int c)
{
    return c == 'b' || c == 'd' || c == OPT_PID_FILE || c == OPT_NO_SUBREAPER || c == OPT_NO_PIVOT
           || c == OPT_CONSOLE_SOCKET;
}

static const char *flag_name(int c)
{
    for (const struct option *o = options; o->name; o++)
        if (o->val == c)
            return o->name;
    return "?";
}

/* Parser: one flag of the loop below. */
static int apply(int c, char **argv, struct criu_flags *f)
{
    brig_error_t err = NULL;
    switch (c) {
    case OPT_IMAGE_PATH:
        f->criu.image_path = optarg;
        break;
    case OPT_WORK_PATH:
        f->criu.work_path = optarg;
        break;
    case OPT_PARENT_PATH:
        f->parent_path = optarg;
        break;
    case OPT_LEAVE_RUNNING:
        f->leave_running = true;
        break;
    case OPT_TCP_ESTABLISHED:
        f->criu.tcp_established = true;
        break;
    case OPT_EXT_UNIX_SK:
        f->criu.ext_unix_sk = true;
        break;
    case OPT_SHELL_JOB:
        f->criu.shell_job = true;
        break;
    case OPT_FILE_LOCKS:
        f->criu.file_locks = true;
        break;
    case OPT_PRE_DUMP:
        f->pre_dump = true;
        break;
    case OPT_AUTO_DEDUP:
        f->criu.auto_dedup = true;
        break;
    case 'b':
        f->bundle = optarg;
        break;
    case 'd':
        f->detach = true;
        break;
    case OPT_PID_FILE:
        f->pid_file = optarg;
        break;
    case OPT_NO_SUBREAPER:
        f->no_subreaper = true;
        break;
    case OPT_NO_PIVOT:
        break; /* criu pivots into the restored root itself */
    case OPT_MANAGE_CGROUPS_MODE:
        if (brig_cg_mode_parse(optarg, &f->criu.cg_mode, &err) < 0) {
            brig_error_wrap(&err, "--manage-cgroups-mode");
            return brig_fail(&err);
        }
        break;
    /* Refused rather than ignored: a user relying on one must know. */
    case OPT_EMPTY_NS:
    case OPT_LAZY_PAGES:
        return brig_fail_msg("%s: --%s is not supported (libcriu has no call for it)",
                             brig_command_name, flag_name(c));
    case OPT_PAGE_SERVER:
    case OPT_STATUS_FD:
        return brig_fail_msg("%s: --%s is not supported by brig yet", brig_command_name,
                             flag_name(c));
    case OPT_CONSOLE_SOCKET:
        return brig_fail_msg("%s: --console-socket is not supported (a container with a terminal "
                             "can't be checkpointed)",
                             brig_command_name);
    default:
        return brig_bad_option(argv);
    }
    return BRIG_CLI_GO_ON;
}

int criu_flags_parse(int argc, char **argv, bool restore, const char *usage, struct criu_flags *out)
{
    *out = (struct criu_flags){ .criu.image_path = "checkpoint" };
    int c;
    while ((c = getopt_long(argc, argv, "+b:dh", options, NULL)) != -1) {
        if (c == 'h')
            return brig_usage(usage);
        if ((restore && for_checkpoint_only(c)) || (!restore && for_restore_only(c)))
            return brig_fail_msg("%s: unknown option `--%s` (it is an option of %s)",
                                 brig_command_name, flag_name(c),
                                 restore ? "checkpoint" : "restore");
        int done = apply(c, argv, out);
        if (done != BRIG_CLI_GO_ON)
            return done;
    }
    int done = brig_parse_args(argc, argv, 1, 1, "container id");
    if (done != BRIG_CLI_GO_ON)
        return done;
    out->id = argv[optind];
    return BRIG_CLI_GO_ON;
}
