#define _GNU_SOURCE
/* A process's stdio: containerd's fifos on one side, the process's pipes
 * (or its pty master) on the other, copied in the event loop. Pipe to fifo
 * is spliced in the kernel, so a quiet process costs no buffer; a pty
 * master can't be spliced and gets a small buffer on first use. When the
 * destination is full the source is left alone until it drains, so a slow
 * reader slows the process down rather than growing the shim. */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "base/cleanup.h"

#define COPY_BUF 8192
#define SPLICE_MAX (1 << 16)
#define ROUNDS 16 /* per wake-up, so one busy process can't starve the rest */

struct pump {
    struct shim_io *io;
    int src, dst;
    bool active;
    bool no_splice;
    bool closing; /* CloseIO: end once the source is empty */
    bool on_src, on_dst;
    char *buf;
    size_t off, len;
};

struct shim_io {
    struct shim_loop *loop;
    int child[3];
    int devnull;
    int master;
    struct pump in, out, err;
};

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void pump_cb(struct shim_loop *loop, int fd, uint32_t events, void *data);

static void pump_unwatch(struct pump *p)
{
    if (p->on_src)
        shim_loop_del(p->io->loop, p->src);
    if (p->on_dst)
        shim_loop_del(p->io->loop, p->dst);
    p->on_src = p->on_dst = false;
}

static void pump_stop(struct pump *p)
{
    pump_unwatch(p);
    close_fd(&p->src);
    close_fd(&p->dst);
    free(p->buf);
    p->buf = NULL;
    p->off = p->len = 0;
    p->active = false;
}

/* Waits on one side only: the source while there is room, the destination
 * while it is full. A watch that can't be set ends the copy rather than
 * leaving it stuck. */
static void pump_wait(struct pump *p, bool for_dst)
{
    brig_error_t err = NULL;
    pump_unwatch(p);
    int fd = for_dst ? p->dst : p->src;
    if (shim_loop_add(p->io->loop, fd, for_dst ? EPOLLOUT : EPOLLIN, pump_cb, p, &err) < 0) {
        brig_error_release(&err);
        pump_stop(p);
        return;
    }
    if (for_dst)
        p->on_dst = true;
    else
        p->on_src = true;
}

static bool writable(int fd)
{
    struct pollfd pfd = { .fd = fd, .events = POLLOUT };
    return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLOUT);
}

/* Moves data until the source is empty or the destination full; returns
 * with the right side watched, or the pump stopped at end of file. */
static void pump_run(struct pump *p)
{
    for (int round = 0; p->active && round < ROUNDS; round++) {
        if (p->len > p->off) {
            ssize_t n = write(p->dst, p->buf + p->off, p->len - p->off);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && errno == EAGAIN)
                return pump_wait(p, true);
            if (n < 0) /* the reader is gone for good (EPIPE): nothing to copy to */
                return pump_stop(p);
            p->off += (size_t) n;
            if (p->off == p->len)
                p->off = p->len = 0;
            continue;
        }
        ssize_t n;
        if (!p->no_splice) {
            n = splice(p->src, NULL, p->dst, NULL, SPLICE_MAX, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
            if (n > 0)
                continue;
            if (n == 0)
                return pump_stop(p);
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN) {
                if (!writable(p->dst))
                    return pump_wait(p, true);
                return p->closing ? pump_stop(p) : pump_wait(p, false);
            }
            if (errno != EINVAL)
                return pump_stop(p);
            p->no_splice = true; /* a pty: fall back to read and write */
        }
        if (p->buf == NULL && (p->buf = malloc(COPY_BUF)) == NULL)
            return pump_wait(p, false); /* try again on the next wake-up */
        n = read(p->src, p->buf, COPY_BUF);
        if (n > 0) {
            p->len = (size_t) n;
            p->off = 0;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return p->closing ? pump_stop(p) : pump_wait(p, false);
        /* 0, or EIO from a pty master once every slave fd is closed */
        return pump_stop(p);
    }
}

static void pump_cb(struct shim_loop *loop, int fd, uint32_t events, void *data)
{
    (void) loop;
    (void) fd;
    (void) events;
    pump_run(data);
}

static int pump_start(struct shim_io *io, struct pump *p, int src, int dst, brig_error_t *err)
{
    *p = (struct pump){ .io = io, .src = src, .dst = dst, .active = true };
    if (fcntl(src, F_SETFL, fcntl(src, F_GETFL) | O_NONBLOCK) < 0
        || fcntl(dst, F_SETFL, fcntl(dst, F_GETFL) | O_NONBLOCK) < 0) {
        int saved = errno;
        pump_stop(p);
        return brig_error_set(err, saved, "stdio: non-blocking mode");
    }
    pump_wait(p, false);
    return p->active ? 0 : brig_error_set(err, 0, "stdio: cannot watch the copy");
}

static int open_fifo(const char *path, int flags, int *fd, brig_error_t *err)
{
    *fd = -1;
    if (path == NULL || *path == '\0')
        return 0;
    *fd = open(path, flags | O_NONBLOCK | O_CLOEXEC);
    if (*fd < 0)
        return brig_error_set(err, errno, "open `%s`", path);
    return 0;
}

int shim_io_new(struct shim_loop *loop, const struct shim_stdio *paths, struct shim_io **out,
                brig_error_t *err)
{
    struct shim_io *io = calloc(1, sizeof *io);
    if (io == NULL)
        return brig_error_set(err, ENOMEM, "stdio");
    io->loop = loop;
    io->master = -1;
    io->in = io->out = io->err = (struct pump){ .src = -1, .dst = -1 };
    for (int i = 0; i < 3; i++)
        io->child[i] = -1;
    io->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (io->devnull < 0) {
        free(io);
        return brig_error_set(err, errno, "open `/dev/null`");
    }
    bool tty = paths->terminal;
    /* A fifo is kept in the pump's slot until shim_io_attach starts it. */
    if (open_fifo(paths->stdin_path, O_RDONLY, &io->in.src, err) < 0
        || open_fifo(paths->stdout_path, O_RDWR, &io->out.dst, err) < 0
        || (!tty && open_fifo(paths->stderr_path, O_RDWR, &io->err.dst, err) < 0)) {
        shim_io_free(io);
        return -1;
    }
    if (!tty) {
        struct {
            int *shim_end, *child_end, fifo;
            bool child_reads;
        } ends[3] = {
            { &io->in.dst, &io->child[0], io->in.src, true },
            { &io->out.src, &io->child[1], io->out.dst, false },
            { &io->err.src, &io->child[2], io->err.dst, false },
        };
        for (int i = 0; i < 3; i++) {
            if (ends[i].fifo < 0)
                continue;
            int fds[2];
            if (pipe2(fds, O_CLOEXEC) < 0) {
                int saved = errno;
                shim_io_free(io);
                return brig_error_set(err, saved, "stdio: pipe");
            }
            *ends[i].child_end = ends[i].child_reads ? fds[0] : fds[1];
            *ends[i].shim_end = ends[i].child_reads ? fds[1] : fds[0];
        }
    }
    *out = io;
    return 0;
}

void shim_io_child_fds(const struct shim_io *io, int fds[3])
{
    for (int i = 0; i < 3; i++)
        fds[i] = io->child[i] >= 0 ? io->child[i] : io->devnull;
}

int shim_io_attach(struct shim_io *io, int master, brig_error_t *err)
{
    for (int i = 0; i < 3; i++)
        close_fd(&io->child[i]);
    close_fd(&io->devnull);
    int in_src = brig_steal_fd(io->in.src), in_dst = brig_steal_fd(io->in.dst);
    int out_src = brig_steal_fd(io->out.src), out_dst = brig_steal_fd(io->out.dst);
    int err_src = brig_steal_fd(io->err.src), err_dst = brig_steal_fd(io->err.dst);
    if (master >= 0) {
        io->master = master;
        /* One epoll registration per fd, and the master is read by one copy
         * and written by the other: each gets its own descriptor. */
        in_dst = in_src >= 0 ? fcntl(master, F_DUPFD_CLOEXEC, 3) : -1;
        out_src = out_dst >= 0 ? fcntl(master, F_DUPFD_CLOEXEC, 3) : -1;
    }
    int r = 0;
    if (in_src >= 0 && in_dst >= 0)
        r = pump_start(io, &io->in, in_src, in_dst, err);
    else {
        if (in_src >= 0)
            close(in_src);
        if (in_dst >= 0)
            close(in_dst);
    }
    if (r == 0 && out_src >= 0 && out_dst >= 0)
        r = pump_start(io, &io->out, out_src, out_dst, err);
    else if (out_src >= 0 || out_dst >= 0) {
        if (out_src >= 0)
            close(out_src);
        if (out_dst >= 0)
            close(out_dst);
    }
    if (r == 0 && err_src >= 0 && err_dst >= 0)
        r = pump_start(io, &io->err, err_src, err_dst, err);
    else if (err_src >= 0 || err_dst >= 0) {
        if (err_src >= 0)
            close(err_src);
        if (err_dst >= 0)
            close(err_dst);
    }
    return r;
}

void shim_io_drain(struct shim_io *io)
{
    if (io == NULL)
        return;
    if (io->out.active)
        pump_run(&io->out);
    if (io->err.active)
        pump_run(&io->err);
}

void shim_io_close_stdin(struct shim_io *io)
{
    if (io == NULL)
        return;
    if (io->in.active) {
        io->in.closing = true;
        pump_run(&io->in);
    } else {
        /* Not started yet (closed before Start): the process gets EOF. */
        close_fd(&io->in.src);
        close_fd(&io->in.dst);
    }
}

int shim_io_resize(struct shim_io *io, unsigned width, unsigned height, brig_error_t *err)
{
    if (io == NULL || io->master < 0)
        return brig_error_set(err, ENOTTY, "resize: the process has no terminal");
    struct winsize ws = { .ws_row = (unsigned short) height, .ws_col = (unsigned short) width };
    if (ioctl(io->master, TIOCSWINSZ, &ws) < 0)
        return brig_error_set(err, errno, "resize terminal");
    return 0;
}

void shim_io_free(struct shim_io *io)
{
    if (io == NULL)
        return;
    struct pump *pumps[3] = { &io->in, &io->out, &io->err };
    for (int i = 0; i < 3; i++) {
        if (pumps[i]->io)
            pump_stop(pumps[i]);
        close_fd(&pumps[i]->src);
        close_fd(&pumps[i]->dst);
    }
    for (int i = 0; i < 3; i++)
        close_fd(&io->child[i]);
    close_fd(&io->devnull);
    close_fd(&io->master);
    free(io);
}
