#define _GNU_SOURCE
/*
 * bench-timeit: runs one command (or N copies at once) and prints how long it
 * took and how much memory it used, for tests/bench/run.sh.
 *
 *   bench-timeit [-p N] [-l LOG] -- COMMAND [ARGS...]
 *
 * Prints "ELAPSED_NS MAXRSS_KB" on stdout. The clock starts just before the
 * fork and stops when wait4 returns, so the harness adds one fork of a small
 * process and nothing else, the same for every runtime. MAXRSS_KB is ru_maxrss
 * from wait4: the peak resident set of the command, or of its largest
 * descendant that it waited for itself. With -p N, N copies start together, a
 * "%d" in any argument becomes the copy's index (0..N-1), the time is until
 * the last one exits, and the memory is the largest of them. The commands'
 * stdout goes to /dev/null and their stderr to LOG (default /dev/null); any
 * failure makes bench-timeit exit 1 after naming it on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char **argv_for_copy(char **argv, int argc, int index)
{
    char **out = calloc((size_t) argc + 1, sizeof(*out));
    if (out == NULL)
        return NULL;
    for (int i = 0; i < argc; i++) {
        const char *mark = strstr(argv[i], "%d");
        if (mark == NULL) {
            out[i] = argv[i];
            continue;
        }
        if (asprintf(&out[i], "%.*s%d%s", (int) (mark - argv[i]), argv[i], index, mark + 2) < 0)
            return NULL;
    }
    return out;
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int copies = 1, opt;
    const char *log = "/dev/null";

    while ((opt = getopt(argc, argv, "+p:l:")) != -1) {
        switch (opt) {
        case 'p':
            copies = atoi(optarg);
            break;
        case 'l':
            log = optarg;
            break;
        default:
            return 2;
        }
    }
    if (optind >= argc || copies < 1) {
        fprintf(stderr, "usage: bench-timeit [-p N] [-l LOG] -- COMMAND [ARGS...]\n");
        return 2;
    }
    argv += optind;
    argc -= optind;

    /* Argument vectors are built before the clock starts. */
    char ***vectors = calloc((size_t) copies, sizeof(*vectors));
    if (vectors == NULL)
        return 1;
    for (int i = 0; i < copies; i++) {
        vectors[i] = copies == 1 ? argv : argv_for_copy(argv, argc, i);
        if (vectors[i] == NULL) {
            perror("bench-timeit");
            return 1;
        }
    }
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    int errfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (devnull < 0 || errfd < 0) {
        perror("bench-timeit: open");
        return 1;
    }

    long long start = now_ns();
    for (int i = 0; i < copies; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("bench-timeit: fork");
            return 1;
        }
        if (pid == 0) {
            dup2(devnull, 0);
            dup2(devnull, 1);
            dup2(errfd, 2);
            execvp(vectors[i][0], vectors[i]);
            _exit(127);
        }
    }
    long maxrss = 0;
    int failed = 0;
    for (int i = 0; i < copies; i++) {
        struct rusage ru;
        int status;
        pid_t pid = wait4(-1, &status, 0, &ru);
        if (pid < 0) {
            perror("bench-timeit: wait4");
            return 1;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed++;
        if (ru.ru_maxrss > maxrss)
            maxrss = ru.ru_maxrss;
    }
    long long elapsed = now_ns() - start;

    if (failed) {
        fprintf(stderr, "bench-timeit: %s: %d of %d failed (see %s)\n", argv[0], failed, copies,
                log);
        return 1;
    }
    printf("%lld %ld\n", elapsed, maxrss);
    return 0;
}
