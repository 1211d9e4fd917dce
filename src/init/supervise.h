/* The services of the configuration: starting them, deciding on restarts
 * with exponential backoff, and stopping them. Single-threaded; the event
 * loop in main.c calls these with the current monotonic time in ms. */
#ifndef BRIG_INIT_SUPERVISE_H
#define BRIG_INIT_SUPERVISE_H

#include <stdint.h>
#include <sys/types.h>

#include "conf.h"
#include "logfile.h"
#include "users.h"

#define INIT_BACKOFF_MAX_MS 60000

enum service_state {
    SERVICE_STOPPED, /* not running, not to be restarted */
    SERVICE_RUNNING,
    SERVICE_BACKOFF, /* waiting for restart_at */
    SERVICE_FATAL,   /* gave up after startretries quick exits */
};

struct service {
    const struct init_program *prog;
    char **argv;
    int has_user;
    struct init_user user;
    enum service_state state;
    pid_t pid; /* also its process group */
    int64_t started_ms, restart_at_ms;
    unsigned failures;      /* consecutive exits within startsecs */
    int out_pipe, err_pipe; /* read ends, -1 when closed */
    struct init_log out_log, err_log;
    struct init_log *out, *err; /* NULL: brig-init's own stdout/stderr */
};

/* Everything that can fail before anything runs: argv, user, log files.
 * -1 with one line in ERR. */
int service_prepare(struct service *svc, const struct init_program *prog, char *err, size_t errlen);

/* Forks and execs the service; a failure is reported and handled like an
 * immediate exit. */
void service_start(struct service *svc, int64_t now);

/* Called with the wait status of its pid; STOPPING says no restart. */
void service_exited(struct service *svc, int status, int stopping, int64_t now);

/* The delay before restart number N (N consecutive quick failures). */
int64_t service_backoff_ms(unsigned failures);

/* Reads what the service wrote on FD into its log; closes FD at EOF. */
void service_pump(struct service *svc, int fd);

void service_signal(struct service *svc, int sig);

void service_release(struct service *svc);

/* The child side of a fork: default signal dispositions, empty mask. */
void init_reset_signals(void);

/* The message "NAME: exit status N" / "NAME: killed by signal SIG". */
const char *init_describe_status(int status, char *buf, size_t len);

#endif
