#define _GNU_SOURCE
/* Compiled seccomp programs, kept by what they were compiled from.
 *
 * libseccomp builds its program anew for every process: for a profile of
 * some 370 syscalls that is a third of an exec's time. Every
 * process of a container, and every container of one profile, gets the
 * same program, so the program is written once to the state root as
 * `.seccomp-<key>`, where the key is the SHA-256 of every field of the
 * profile, of libseccomp's version, of this format and of the brig binary
 * (its inode, size and mtime: an upgrade compiles anew), and read back
 * after. The state root is the runtime's own (0700): nobody else can put
 * a program there, and a file that is not ours alone is ignored all the
 * same. A file that does not read back whole and well-formed
 * is ignored and compiled anew. The cache costs a file per distinct
 * profile until the state root goes (a tmpfs, at the latest at reboot). */
#include "process/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/sha256.h"
#include "process/seccomp_int.h"

#define MAGIC "brig-seccomp-1\n"

/* A string, its length first, so that no two profiles feed the same bytes. */
static void feed_str(struct brig_sha256 *c, const char *s)
{
    uint64_t n = s ? strlen(s) : UINT64_MAX;
    brig_sha256_update(c, &n, sizeof n);
    if (s)
        brig_sha256_update(c, s, strlen(s));
}

static void feed_u64(struct brig_sha256 *c, uint64_t v)
{
    brig_sha256_update(c, &v, sizeof v);
}

static void feed_strv(struct brig_sha256 *c, const struct brig_strv *v)
{
    feed_u64(c, v->n);
    for (size_t i = 0; i < v->n; i++)
        feed_str(c, v->v[i]);
}

static void feed_syscall(struct brig_sha256 *c, const struct brig_seccomp_syscall *sc)
{
    feed_strv(c, &sc->names);
    feed_str(c, sc->action);
    feed_u64(c, sc->has_errno_ret ? sc->errno_ret : UINT64_MAX);
    feed_u64(c, sc->n_args);
    for (size_t i = 0; i < sc->n_args; i++) {
        feed_u64(c, sc->args[i].index);
        feed_u64(c, sc->args[i].value);
        feed_u64(c, sc->args[i].value_two);
        feed_str(c, sc->args[i].op);
    }
}

void brig_seccomp_key(const struct brig_seccomp *s, char out[65])
{
    struct brig_sha256 c;
    brig_sha256_init(&c);
    feed_str(&c, MAGIC);
    /* This very binary: another build of brig may compile otherwise. */
    struct stat exe;
    if (stat("/proc/self/exe", &exe) == 0) {
        feed_u64(&c, exe.st_dev);
        feed_u64(&c, exe.st_ino);
        feed_u64(&c, (uint64_t) exe.st_size);
        feed_u64(&c, (uint64_t) exe.st_mtim.tv_sec);
        feed_u64(&c, (uint64_t) exe.st_mtim.tv_nsec);
    }
    const struct scmp_version *v = seccomp_version();
    feed_u64(&c, v ? ((uint64_t) v->major << 32) | (v->minor << 16) | v->micro : 0);
    feed_str(&c, s->default_action);
    feed_u64(&c, s->has_default_errno_ret ? s->default_errno_ret : UINT64_MAX);
    feed_strv(&c, &s->architectures);
    feed_strv(&c, &s->flags);
    /* A listener changes the flags and the program's notify rules. */
    feed_u64(&c, s->listener_path != NULL);
    feed_u64(&c, s->n_syscalls);
    for (size_t i = 0; i < s->n_syscalls; i++)
        feed_syscall(&c, &s->syscalls[i]);
    brig_sha256_final_hex(&c, out);
}

/* The file: MAGIC, then notify, kernel flags and length (uint32_t each),
 * then the instructions. */
struct header {
    char magic[sizeof MAGIC - 1];
    uint32_t notify, kernel_flags, len;
};

/* 1 with *out filled from the cache, 0 on a miss. */
static int read_cached(int dir_fd, const char *name, struct brig_seccomp_filter **out)
{
    cleanup_close int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct header h;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()
        || (st.st_mode & 022) || read(fd, &h, sizeof h) != (ssize_t) sizeof h
        || memcmp(h.magic, MAGIC, sizeof h.magic) || h.len == 0 || h.len > BPF_MAXINSNS
        || st.st_size != (off_t) (sizeof h + h.len * sizeof(struct sock_filter)))
        return 0;
    cleanup_seccomp_filter struct brig_seccomp_filter *f = calloc(1, sizeof *f);
    if (f == NULL || (f->prog = calloc(h.len, sizeof *f->prog)) == NULL)
        return 0;
    size_t bytes = h.len * sizeof *f->prog;
    if (read(fd, f->prog, bytes) != (ssize_t) bytes)
        return 0;
    f->len = h.len;
    f->notify = h.notify != 0;
    f->kernel_flags = h.kernel_flags;
    *out = brig_steal_ptr(f);
    return 1;
}

/* Best effort: written under a temporary name, renamed into place whole. */
static void write_cached(int dir_fd, const char *name, const struct brig_seccomp_filter *f)
{
    char tmp[128];
    snprintf(tmp, sizeof tmp, ".seccomp-tmp-%d", (int) getpid());
    cleanup_close int fd = openat(dir_fd, tmp,
                                  O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    struct header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, MAGIC, sizeof h.magic);
    h.notify = f->notify;
    h.kernel_flags = f->kernel_flags;
    h.len = (uint32_t) f->len;
    size_t bytes = f->len * sizeof *f->prog;
    if (write(fd, &h, sizeof h) != (ssize_t) sizeof h
        || write(fd, f->prog, bytes) != (ssize_t) bytes || renameat(dir_fd, tmp, dir_fd, name) < 0)
        unlinkat(dir_fd, tmp, 0);
}

int brig_seccomp_compile_cached(const struct brig_seccomp *s, int dir_fd,
                                struct brig_seccomp_filter **out, brig_error_t *err)
{
    *out = NULL;
    char key[65], name[80];
    if (dir_fd >= 0) {
        brig_seccomp_key(s, key);
        snprintf(name, sizeof name, ".seccomp-%s", key);
        if (read_cached(dir_fd, name, out) == 1)
            return 0;
    }
    cleanup_seccomp_filter struct brig_seccomp_filter *f = NULL;
    if (brig_seccomp_compile(s, &f, err) < 0)
        return -1;
    if (brig_seccomp_program(f->ctx, f->enosys, f->n_enosys, &f->prog, &f->len, err) < 0)
        return -1;
    if (dir_fd >= 0)
        write_cached(dir_fd, name, f);
    *out = brig_steal_ptr(f);
    return 0;
}
