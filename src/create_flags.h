/* The flags `create` and `run` share. */
#ifndef BRIG_CREATE_FLAGS_H
#define BRIG_CREATE_FLAGS_H

#include <getopt.h>
#include <stdbool.h>

#include "container/container.h"
#include "sandbox/profile.h"

#define CREATE_FLAGS_HELP                                                             \
    "  -b, --bundle DIR         the bundle (default: the current directory)\n"        \
    "      --pid-file FILE      write the init's pid to FILE\n"                       \
    "      --console-socket S   unix socket that receives the terminal's master fd\n" \
    "      --no-pivot           MS_MOVE + chroot instead of pivot_root (ramdisks)\n"  \
    "      --no-new-keyring     keep the caller's session keyring\n"                  \
    "      --preserve-fds N     pass N extra fds (from 3) to the process\n"           \
    "      --profile sandbox    apply the sandbox profile (see brig-sandbox(8))\n"

/* Flags of run only, parsed by the same loop. */
struct create_flags {
    bool detach;
    bool tty;
    bool keep;
    bool no_subreaper;
    const char *console_socket;
    const char *profile; /* --profile */
};

/* The bundle a create works on, and the sandbox's settings when the
 * profile applies: both must outlive the create. */
struct create_bundle {
    struct brig_bundle bundle;
    struct brig_profile_settings sandbox;
};

enum {
    CREATE_OPT_PID_FILE = 300,
    CREATE_OPT_CONSOLE_SOCKET,
    CREATE_OPT_NO_PIVOT,
    CREATE_OPT_NO_NEW_KEYRING,
    CREATE_OPT_PRESERVE_FDS,
    CREATE_OPT_KEEP,
    CREATE_OPT_NO_SUBREAPER,
    CREATE_OPT_TTY,
    CREATE_OPT_PROFILE,
};

/* Parser (cli.h): create/run's flags and the id. */
int create_flags_parse(int argc, char **argv, const char *shortopts, const char *usage,
                       struct brig_create_options *o, struct create_flags *extra);

/* Parser's kin: loads the bundle into cb, checks what the flags say of
 * its terminal, and applies the sandbox profile when --profile or the
 * annotation asks. Returns BRIG_CLI_GO_ON or the exit status (the error
 * reported); cb is the caller's to clear either way. */
int create_prepare(struct brig_create_options *o, const struct create_flags *extra,
                   struct create_bundle *cb);
void create_bundle_clear(struct create_bundle *cb);

#endif
