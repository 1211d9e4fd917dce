/* `brig sandbox`: its subcommands, one or two to a file. The work is
 * sandbox/'s (layout.h, manage.h, transfer.h, download.h, reaper.h); these parse and print. */
#ifndef BRIG_SANDBOX_CMD_H
#define BRIG_SANDBOX_CMD_H

int sandbox_cmd_create(int argc, char **argv);
int sandbox_cmd_exec(int argc, char **argv);
int sandbox_cmd_cp(int argc, char **argv);
int sandbox_cmd_download(int argc, char **argv);
int sandbox_cmd_checkpoint(int argc, char **argv);
int sandbox_cmd_restore(int argc, char **argv);
int sandbox_cmd_reap(int argc, char **argv);

#endif
