/* The commands of the brig CLI, one file each. */
#ifndef BRIG_COMMANDS_H
#define BRIG_COMMANDS_H

int brig_cmd_create(int argc, char **argv);
int brig_cmd_start(int argc, char **argv);
int brig_cmd_run(int argc, char **argv);
int brig_cmd_state(int argc, char **argv);
int brig_cmd_kill(int argc, char **argv);
int brig_cmd_delete(int argc, char **argv);
int brig_cmd_list(int argc, char **argv);
int brig_cmd_spec(int argc, char **argv);
int brig_cmd_features(int argc, char **argv);
int brig_cmd_pause(int argc, char **argv);
int brig_cmd_resume(int argc, char **argv);
int brig_cmd_ps(int argc, char **argv);
int brig_cmd_update(int argc, char **argv);
int brig_cmd_events(int argc, char **argv);
int brig_cmd_exec(int argc, char **argv);
int brig_cmd_sandbox(int argc, char **argv);
int brig_cmd_serve(int argc, char **argv);
int brig_cmd_checkpoint(int argc, char **argv);
int brig_cmd_restore(int argc, char **argv);

#endif
