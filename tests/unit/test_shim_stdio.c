#define _GNU_SOURCE
/* The shim's stdio copies, with fifos as containerd makes them and pipe
 * ends (or a pty slave) standing in for the container's process. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "core.h"
#include "unit.h"

/* What a client (ctr) reads from a fifo, collected in the same loop. */
struct reader {
    char *buf;
    size_t len, cap;
    bool eof;
};

static void read_cb(struct shim_loop *l, int fd, uint32_t ev, void *data)
{
    struct reader *r = data;
    for (;;) {
        if (r->len == r->cap) {
            r->cap = r->cap ? r->cap * 2 : 4096;
            r->buf = realloc(r->buf, r->cap + 1);
        }
        ssize_t n = read(fd, r->buf + r->len, r->cap - r->len);
        if (n > 0) {
            r->len += (size_t) n;
            continue;
        }
        if (n == 0) {
            r->eof = true;
            shim_loop_del(l, fd);
            shim_loop_stop(l);
        }
        break;
    }
    r->buf[r->len] = '\0';
}

static void timeout_cb(struct shim_loop *l, void *data)
{
    *(bool *) data = true;
    shim_loop_stop(l);
}

/* Runs the loop until the reader sees EOF (or 5 s pass). */
static bool run_until_eof(struct shim_loop *l, struct reader *r)
{
    brig_error_t err = NULL;
    bool timed_out = false;
    shim_loop_after(l, 5000, timeout_cb, &timed_out, &err);
    while (!r->eof && !timed_out)
        shim_loop_run(l, &err);
    return r->eof;
}

static int open_reader(const char *path)
{
    return open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
}

int main(void)
{
    brig_error_t err = NULL;
    char dir[] = "/tmp/shim-stdio.XXXXXX";
    if (mkdtemp(dir) == NULL)
        return 1;
    char in[64], out[64], errp[64];
    snprintf(in, sizeof in, "%s/in", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(errp, sizeof errp, "%s/err", dir);
    if (mkfifo(in, 0600) < 0 || mkfifo(out, 0600) < 0 || mkfifo(errp, 0600) < 0)
        return 1;

    struct shim_loop *l = NULL;
    shim_loop_new(&l, &err);
    /* The reaper's signal mask: SIGPIPE must come back as EPIPE. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    sigprocmask(SIG_BLOCK, &set, NULL);

    /* ---- pipes: stdout and stderr apart, 1 MiB through a full fifo ---- */
    int rout = open_reader(out), rerr = open_reader(errp);
    struct shim_io *io = NULL;
    struct shim_stdio paths = { in, out, errp, false };
    CHECK(shim_io_new(l, &paths, &io, &err) == 0, "stdio with three fifos opens");
    int fds[3], child[3];
    shim_io_child_fds(io, fds);
    for (int i = 0; i < 3; i++)
        child[i] = dup(fds[i]); /* the process's copies */
    CHECK(shim_io_attach(io, -1, &err) == 0, "copying starts");
    int win = open(in, O_WRONLY | O_CLOEXEC);
    CHECK(win >= 0, "the client opens stdin for writing");
    CHECK(write(win, "to stdin", 8) == 8, "the client writes stdin");
    close(win);

    size_t big = 1 << 20;
    char *data = malloc(big);
    for (size_t i = 0; i < big; i++)
        data[i] = (char) ('a' + i % 26);
    /* The process writes more than a pipe and a fifo hold: the copy must
     * wait for the reader instead of dropping or blocking. */
    fcntl(child[1], F_SETFL, O_NONBLOCK);
    size_t written = 0;
    struct reader ro = { 0 }, re = { 0 };
    shim_loop_add(l, rout, EPOLLIN, read_cb, &ro, &err);
    shim_loop_add(l, rerr, EPOLLIN, read_cb, &re, &err);
    while (written < big) {
        ssize_t n = write(child[1], data + written, big - written);
        if (n > 0)
            written += (size_t) n;
        bool t = false;
        shim_loop_after(l, 1, timeout_cb, &t, &err);
        shim_loop_run(l, &err);
    }
    CHECK(write(child[2], "oops", 4) == 4, "the process writes stderr");
    close(child[1]);
    close(child[2]);
    CHECK(run_until_eof(l, &ro), "stdout reaches EOF once the process closed it");
    CHECK(ro.len == big && memcmp(ro.buf, data, big) == 0, "1 MiB of stdout arrives intact");
    CHECK(run_until_eof(l, &re), "stderr reaches EOF");
    CHECK_STR(re.buf, "oops", "stderr arrives apart from stdout");
    char got[16] = { 0 };
    ssize_t n = 0;
    for (int i = 0; i < 100 && n <= 0; i++) {
        bool t = false;
        shim_loop_after(l, 5, timeout_cb, &t, &err);
        shim_loop_run(l, &err);
        n = read(child[0], got, sizeof got - 1);
    }
    CHECK_STR(got, "to stdin", "stdin reaches the process");
    char more;
    ssize_t eof = -1;
    for (int i = 0; i < 100 && eof != 0; i++) {
        bool t = false;
        shim_loop_after(l, 5, timeout_cb, &t, &err);
        shim_loop_run(l, &err);
        eof = read(child[0], &more, 1);
    }
    CHECK(eof == 0, "the client closing stdin is EOF for the process");
    close(child[0]);
    shim_io_free(io);
    close(rout);
    close(rerr);
    free(ro.buf);
    free(re.buf);

    /* ---- CloseIO with stdin still open: what was written still goes in ---- */
    struct shim_stdio only_in = { in, NULL, NULL, false };
    CHECK(shim_io_new(l, &only_in, &io, &err) == 0, "stdio with stdin only");
    shim_io_child_fds(io, fds);
    int proc_in = dup(fds[0]);
    shim_io_attach(io, -1, &err);
    win = open(in, O_WRONLY | O_CLOEXEC);
    CHECK(write(win, "last words", 10) == 10, "the client writes and keeps stdin open");
    shim_io_close_stdin(io);
    memset(got, 0, sizeof got);
    n = read(proc_in, got, sizeof got - 1);
    CHECK_STR(got, "last words", "CloseIO copies what stdin held");
    CHECK(read(proc_in, &more, 1) == 0, "then the process sees EOF");
    close(win);
    close(proc_in);
    shim_io_free(io);

    /* ---- a terminal: the pty slave stands for the process ---- */
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    CHECK(master >= 0 && grantpt(master) == 0 && unlockpt(master) == 0, "a pty is made");
    int slave = open(ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
    struct termios tio;
    tcgetattr(slave, &tio);
    cfmakeraw(&tio);
    tcsetattr(slave, TCSANOW, &tio);
    rout = open_reader(out);
    struct shim_stdio tty = { in, out, errp, true };
    CHECK(shim_io_new(l, &tty, &io, &err) == 0, "stdio with a terminal");
    CHECK(shim_io_attach(io, master, &err) == 0, "copying the terminal starts");
    CHECK(shim_io_resize(io, 100, 30, &err) == 0, "the terminal is resized");
    struct winsize ws = { 0 };
    ioctl(slave, TIOCGWINSZ, &ws);
    CHECK(ws.ws_col == 100 && ws.ws_row == 30, "the process sees the new size");
    win = open(in, O_WRONLY | O_CLOEXEC);
    CHECK(write(win, "typed", 5) == 5, "the client types");
    close(win);
    memset(got, 0, sizeof got);
    n = -1;
    fcntl(slave, F_SETFL, O_NONBLOCK);
    for (int i = 0; i < 100 && n <= 0; i++) {
        bool t = false;
        shim_loop_after(l, 5, timeout_cb, &t, &err);
        shim_loop_run(l, &err);
        n = read(slave, got, sizeof got - 1);
    }
    CHECK_STR(got, "typed", "input reaches the terminal");
    CHECK(write(slave, "shown", 5) == 5, "the process writes to its terminal");
    close(slave); /* the last slave fd: the master reads EIO, the copy ends */
    struct reader rt = { 0 };
    shim_loop_add(l, rout, EPOLLIN, read_cb, &rt, &err);
    CHECK(run_until_eof(l, &rt), "terminal output ends when the process is gone");
    CHECK_STR(rt.buf, "shown", "terminal output reaches stdout");
    shim_io_free(io);
    close(rout);
    free(rt.buf);

    /* ---- bad paths: one clear error ---- */
    struct shim_stdio bad = { NULL, "/nonexistent/out", NULL, false };
    CHECK(shim_io_new(l, &bad, &io, &err) < 0 && err->errnum == ENOENT
              && strstr(err->msg, "/nonexistent/out"),
          "a missing fifo is an error naming it");
    brig_error_release(&err);

    shim_loop_free(l);
    free(data);
    unlink(in);
    unlink(out);
    unlink(errp);
    rmdir(dir);
    return unit_done();
}
