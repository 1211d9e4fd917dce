/* brig-init's configuration: supervisord-like [program:NAME] sections,
 * parsed into plain structs before anything is started. */
#ifndef BRIG_INIT_CONF_H
#define BRIG_INIT_CONF_H

#include <stddef.h>
#include <stdint.h>

enum init_autorestart {
    INIT_RESTART_FALSE,
    INIT_RESTART_TRUE,
    INIT_RESTART_UNEXPECTED,
};

struct init_log_config {
    char *path;        /* NULL: the stream goes to brig-init's own */
    uint64_t maxbytes; /* 0: never rotated */
    unsigned backups;
};

struct init_program {
    char *name;
    char *command;
    char *user; /* NULL: brig-init's own user */
    char *directory;
    char **environment; /* "KEY=VAL" strings, NULL-terminated */
    enum init_autorestart autorestart;
    unsigned startsecs;
    unsigned startretries;
    uint8_t exitcodes[256]; /* exitcodes[N] != 0: N is expected */
    int stopsignal;
    struct init_log_config out, err;
};

struct init_config {
    struct init_program *programs;
    size_t n_programs;
};

/* Parses the text of a configuration file (NAME is used in messages).
 * On error returns -1 and writes one line "NAME:LINE: what" into ERR. */
int init_config_parse(const char *text, const char *name, struct init_config *cfg, char *err,
                      size_t errlen);

/* Reads and parses the file PATH; errors as above (or "PATH: strerror"). */
int init_config_load(const char *path, struct init_config *cfg, char *err, size_t errlen);

void init_config_free(struct init_config *cfg);

/* The argv of COMMAND: {"/bin/sh", "-c", COMMAND} when it contains a shell
 * metacharacter, else its words split on blanks, where '...' and "..."
 * group words. NULL with errno EINVAL on an unclosed quote or no word. */
char **init_command_argv(const char *command);

/* "TERM", "SIGTERM" or a number; -1 when not a signal. */
int init_signal_number(const char *name);

/* "1024", "10K", "5MB", "1G" (powers of 1024); -1 when malformed. */
int init_parse_size(const char *s, uint64_t *out);

void init_strv_free(char **v);

#endif
