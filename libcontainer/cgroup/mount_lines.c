#define _GNU_SOURCE
/* The host's cgroup mounts as lines of /proc/self/mountinfo, without the
 * kernel writing out the whole table where a saved copy still holds.
 *
 * Containers whose root or data are mounts of their own (an id-mapped
 * tree, a disk image) add them to the host's table, and a read of
 * mountinfo prints every mount: with a thousand such containers, some
 * 2000 lines for each create, exec and delete that needs only the ten
 * cgroup ones, so each costs more the more containers there are. The
 * cgroup lines are kept in BRIG_CGROUP_MOUNTS_CACHE and taken from there
 * while every one of them still names the mount at its mount point
 * (statx's mount id and device agree with the line) and
 * /proc/self/cgroup still counts the hierarchies it counted then. Anything
 * else (no file, a file not root's alone, a line that no longer holds, a
 * hierarchy more or less, not root) reads mountinfo, as before, and
 * saves its lines anew. Mount ids are per mount namespace: in another
 * one the lines don't hold and mountinfo is read there. */
#include "cgroup/backend.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "rootfs/mountinfo.h"

#define MAGIC "brig-cgroup-mounts-1"

static bool is_cgroup_line(const char *line, size_t len)
{
    const char *sep = memmem(line, len, " - ", 3);
    if (sep == NULL)
        return false;
    const char *type = sep + 3;
    size_t rest = len - (size_t) (type - line);
    return (rest > 7 && strncmp(type, "cgroup ", 7) == 0)
           || (rest > 8 && strncmp(type, "cgroup2 ", 8) == 0);
}

/* The active v1 hierarchies /proc/self/cgroup names ("4:memory:/a"): a
 * hierarchy mounted (or gone) since the lines were saved changes it. */
static long count_hierarchies(void)
{
    cleanup_free char *text = NULL;
    brig_error_t ignored = NULL;
    if (brig_read_file("/proc/self/cgroup", &text, NULL, &ignored) < 0) {
        brig_error_release(&ignored);
        return -1;
    }
    long n = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        n += strncmp(line, "0:", 2) != 0 && strchr(line, ':') != NULL;
    return n;
}

/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT ...": the mount at MOUNTPOINT is
 * still mount ID, of the same device. */
static bool line_holds(const char *line)
{
    unsigned long long id;
    unsigned major, minor;
    if (sscanf(line, "%llu %*u %u:%u ", &id, &major, &minor) != 3)
        return false;
    char copy[PATH_MAX + 512];
    size_t len = strcspn(line, "\n");
    struct brig_mountinfo e;
    if (len >= sizeof copy)
        return false;
    memcpy(copy, line, len);
    copy[len] = '\0';
    if (!brig_mountinfo_parse_line(copy, &e))
        return false;
    struct statx stx;
    if (statx(AT_FDCWD, e.mountpoint, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_MNT_ID, &stx) < 0
        || !(stx.stx_mask & STATX_MNT_ID))
        return false;
    return stx.stx_mnt_id == id && stx.stx_dev_major == major && stx.stx_dev_minor == minor;
}

/* The saved lines, when every one holds and the count is the same. */
static char *load_saved(long hierarchies)
{
    if (geteuid() != 0 || hierarchies < 0)
        return NULL;
    cleanup_close int fd = open(BRIG_CGROUP_MOUNTS_CACHE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022)
        || st.st_size > 65536)
        return NULL;
    cleanup_free char *text = malloc((size_t) st.st_size + 1);
    if (text == NULL || brig_read_all(fd, text, (size_t) st.st_size) != st.st_size)
        return NULL;
    text[st.st_size] = '\0';
    long saved = -1;
    int body = 0;
    if (sscanf(text, MAGIC " %ld\n%n", &saved, &body) != 1 || body == 0 || saved != hierarchies)
        return NULL;
    size_t lines = 0;
    for (char *line = text + body; *line; line += strcspn(line, "\n") + 1, lines++)
        if (line[strcspn(line, "\n")] != '\n' || !line_holds(line))
            return NULL;
    if (lines == 0)
        return NULL;
    memmove(text, text + body, strlen(text + body) + 1);
    return brig_steal_ptr(text);
}

/* Best effort: a cache that can't be written is read anew next time. */
static void save(const char *lines, long hierarchies)
{
    if (geteuid() != 0 || hierarchies < 0 || *lines == '\0')
        return;
    const char *dir = BRIG_CGROUP_MOUNTS_CACHE;
    cleanup_free char *parent = strndup(dir, (size_t) (strrchr(dir, '/') - dir));
    if (parent == NULL || (mkdir(parent, 0700) < 0 && errno != EEXIST))
        return;
    cleanup_close int dfd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    cleanup_free char *text = NULL;
    int len = asprintf(&text, MAGIC " %ld\n%s", hierarchies, lines);
    brig_error_t ignored = NULL;
    if (dfd < 0 || len < 0
        || brig_write_file_atomic_at(dfd, strrchr(dir, '/') + 1, text, (size_t) len, 0600, &ignored)
               < 0)
        brig_error_release(&ignored);
}

static int read_mountinfo(char **out, brig_error_t *err)
{
    cleanup_free char *all = NULL;
    if (brig_read_file("/proc/self/mountinfo", &all, NULL, err) < 0)
        return brig_error_wrap(err, "cgroup: read /proc/self/mountinfo");
    char *w = all;
    for (char *line = all; *line;) {
        size_t len = strcspn(line, "\n");
        size_t whole = len + (line[len] == '\n'); /* with its newline */
        if (is_cgroup_line(line, len)) {
            memmove(w, line, whole);
            w += whole;
        }
        line += whole;
    }
    *w = '\0';
    *out = brig_steal_ptr(all);
    return 0;
}

static char *found;

const char *brig_cgroup_mount_lines(brig_error_t *err)
{
    if (found)
        return found;
    long hierarchies = count_hierarchies();
    found = load_saved(hierarchies);
    if (found)
        return found;
    if (read_mountinfo(&found, err) < 0)
        return NULL;
    save(found, hierarchies);
    return found;
}

const char *brig_cgroup_mount_lines_known(void)
{
    return found;
}
