#define _GNU_SOURCE
#include "create_flags.h"

#include "cli.h"

const struct option create_flag_options[] = {
    { "bundle", required_argument, NULL, 'b' },
    { "pid-file", required_argument, NULL, CREATE_OPT_PID_FILE },
    { "console-socket", required_argument, NULL, CREATE_OPT_CONSOLE_SOCKET },
    { "no-pivot", no_argument, NULL, CREATE_OPT_NO_PIVOT },
    { "no-new-keyring", no_argument, NULL, CREATE_OPT_NO_NEW_KEYRING },
    { "preserve-fds", required_argument, NULL, CREATE_OPT_PRESERVE_FDS },
    { "detach", no_argument, NULL, 'd' },
    { "keep", no_argument, NULL, CREATE_OPT_KEEP },
    { "no-subreaper", no_argument, NULL, CREATE_OPT_NO_SUBREAPER },
    { "help", no_argument, NULL, 'h' },
    { 0 },
};

int create_flag_apply(int c, struct brig_create_options *o, struct create_flags *extra)
{
    switch (c) {
    case 'b':
        o->bundle = optarg;
        return 0;
    case CREATE_OPT_PID_FILE:
        o->pid_file = optarg;
        return 0;
    case CREATE_OPT_CONSOLE_SOCKET:
        extra->console_socket = optarg;
        return 0;
    case CREATE_OPT_NO_PIVOT:
        o->no_pivot = true;
        return 0;
    case CREATE_OPT_NO_NEW_KEYRING:
        o->no_new_keyring = true;
        return 0;
    case CREATE_OPT_PRESERVE_FDS:
        return brig_parse_uint("--preserve-fds", optarg, &o->preserve_fds) ? 1 : 0;
    case 'd':
        extra->detach = true;
        return 0;
    case CREATE_OPT_KEEP:
        extra->keep = true;
        return 0;
    case CREATE_OPT_NO_SUBREAPER:
        extra->no_subreaper = true;
        return 0;
    default:
        return -1;
    }
}
