/* `brig sandbox`: its subcommands, one or two to a file. The work is
 * sandbox/'s (layout.h, manage.h, transfer.h, download.h, reaper.h); these parse and print. */
#ifndef BRIG_SANDBOX_CMD_H
#define BRIG_SANDBOX_CMD_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

int sandbox_cmd_create(int argc, char **argv);
int sandbox_cmd_exec(int argc, char **argv);
int sandbox_cmd_cp(int argc, char **argv);
int sandbox_cmd_download(int argc, char **argv);
int sandbox_cmd_checkpoint(int argc, char **argv);
int sandbox_cmd_restore(int argc, char **argv);
int sandbox_cmd_reap(int argc, char **argv);
int sandbox_cmd_session(int argc, char **argv);
int sandbox_cmd_template(int argc, char **argv);

/* "512B", "3.4M", "12G": a size as `ls` shows it. */
void sandbox_print_size(uint64_t bytes, char *buf, size_t len);

/* A command of `brig sandbox` (or of one of its own, `session`). */
struct sandbox_subcommand {
    const char *name;
    int (*fn)(int argc, char **argv);
};

/* Runs the subcommand argv[1] names with argv from it on, or answers
 * --help with `help`; `what` ("sandbox", "sandbox session") names the
 * command in the errors, which list the subcommands. */
int sandbox_dispatch(int argc, char **argv, const char *what, const char *help,
                     const struct sandbox_subcommand *commands, size_t n);

#endif
