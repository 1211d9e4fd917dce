#define _GNU_SOURCE
#include "base/signals.h"

#include <ctype.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

static const struct {
    const char *name;
    int number;
} signal_table[] = {
    { "HUP", SIGHUP },       { "INT", SIGINT },     { "QUIT", SIGQUIT }, { "ILL", SIGILL },
    { "TRAP", SIGTRAP },     { "ABRT", SIGABRT },   { "IOT", SIGIOT },   { "BUS", SIGBUS },
    { "FPE", SIGFPE },       { "KILL", SIGKILL },   { "USR1", SIGUSR1 }, { "SEGV", SIGSEGV },
    { "USR2", SIGUSR2 },     { "PIPE", SIGPIPE },   { "ALRM", SIGALRM }, { "TERM", SIGTERM },
    { "STKFLT", SIGSTKFLT }, { "CHLD", SIGCHLD },   { "CLD", SIGCHLD },  { "CONT", SIGCONT },
    { "STOP", SIGSTOP },     { "TSTP", SIGTSTP },   { "TTIN", SIGTTIN }, { "TTOU", SIGTTOU },
    { "URG", SIGURG },       { "XCPU", SIGXCPU },   { "XFSZ", SIGXFSZ }, { "VTALRM", SIGVTALRM },
    { "PROF", SIGPROF },     { "WINCH", SIGWINCH }, { "IO", SIGIO },     { "POLL", SIGPOLL },
    { "PWR", SIGPWR },       { "SYS", SIGSYS },
};

static int parse_number(const char *s, int *out)
{
    if (*s == '\0')
        return -1;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end != '\0' || v < 0 || v > 64)
        return -1;
    *out = (int) v;
    return 0;
}

static int parse_realtime(const char *name, int *out)
{
    int offset = 0;
    if (strncasecmp(name, "RTMIN", 5) == 0) {
        if (name[5] == '\0' || (name[5] == '+' && parse_number(name + 6, &offset) == 0)) {
            *out = SIGRTMIN + offset;
            return *out <= SIGRTMAX ? 0 : -1;
        }
    } else if (strncasecmp(name, "RTMAX", 5) == 0) {
        if (name[5] == '\0' || (name[5] == '-' && parse_number(name + 6, &offset) == 0)) {
            *out = SIGRTMAX - offset;
            return *out >= SIGRTMIN ? 0 : -1;
        }
    }
    return -1;
}

int brig_signal_parse(const char *text, int *out, brig_error_t *err)
{
    if (text != NULL && isdigit((unsigned char) text[0])) {
        /* 0: no signal, a check that the process is there (kill(2)) */
        if (parse_number(text, out) == 0 && *out >= 0)
            return 0;
        return brig_error_set(err, 0, "unknown signal `%s`", text);
    }
    const char *name = text ? text : "";
    if (strncasecmp(name, "SIG", 3) == 0)
        name += 3;
    for (size_t i = 0; i < sizeof signal_table / sizeof signal_table[0]; i++) {
        if (strcasecmp(name, signal_table[i].name) == 0) {
            *out = signal_table[i].number;
            return 0;
        }
    }
    if (parse_realtime(name, out) == 0)
        return 0;
    return brig_error_set(err, 0, "unknown signal `%s`", text);
}

/* The kernel's own sigaction: libc's refuses the signals it reserves. */
struct kernel_sigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    unsigned long mask;
};

void brig_signals_default_all(void)
{
    struct kernel_sigaction dfl = { .handler = SIG_DFL };
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof dfl.mask);
}
