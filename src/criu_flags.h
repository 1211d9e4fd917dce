/* The flags `checkpoint` and `restore` share, runc's names. */
#ifndef BRIG_CRIU_FLAGS_H
#define BRIG_CRIU_FLAGS_H

#include <stdbool.h>

#include "container/checkpoint.h"

#define CRIU_FLAGS_HELP                                                                    \
    "      --image-path DIR     criu's images (default: ./checkpoint)\n"                   \
    "      --work-path DIR      criu's logs and scratch files (default: the image path)\n" \
    "      --tcp-established    allow open TCP connections\n"                              \
    "      --ext-unix-sk        allow unix sockets connected outside the container\n"      \
    "      --shell-job          allow a shell job (stdio on a terminal of the caller)\n"   \
    "      --file-locks         allow file locks\n"                                        \
    "      --auto-dedup         free image pages already restored or dumped\n"             \
    "      --manage-cgroups-mode M  soft (default), full, strict or ignore\n"

struct criu_flags {
    struct brig_criu_options criu;
    /* checkpoint */
    const char *parent_path;
    bool leave_running;
    bool pre_dump;
    /* restore */
    const char *bundle;
    const char *pid_file;
    bool detach;
    bool no_subreaper;
    const char *id;
};

/* Parser (cli.h): the flags of checkpoint (restore false) or restore, and
 * the id. */
int criu_flags_parse(int argc, char **argv, bool restore, const char *usage,
                     struct criu_flags *out);

#endif
