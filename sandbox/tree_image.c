/* A tree shipped as a squashfs image (tree_image.h): mounted read-only
 * once, beside the image, and shared by every sandbox from then on. */
#define _GNU_SOURCE
#include "sandbox/tree_image.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "sandbox/dataimage.h"

#define SQUASHFS_MAGIC 0x73717368
#define SUFFIX ".squashfs"

static bool mounted_squashfs(const char *dir)
{
    struct statfs fs;
    return statfs(dir, &fs) == 0 && fs.f_type == SQUASHFS_MAGIC;
}

int brig_tree_ensure(const char *dir, brig_error_t *err)
{
    cleanup_free char *image = NULL, *usr = NULL;
    if (asprintf(&usr, "%s/usr", dir) < 0 || asprintf(&image, "%s" SUFFIX, dir) < 0)
        return brig_error_set(err, ENOMEM, "tree image");
    if (access(usr, F_OK) == 0)
        return 1;
    cleanup_close int fd = open(image, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return errno == ENOENT ? 0 : brig_error_set(err, errno, "tree image `%s`", image);
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        return brig_error_set(err, EINVAL, "tree image `%s`: not a file", image);
    /* One mounter at a time: the second finds the first's mount. */
    if (flock(fd, LOCK_EX) < 0)
        return brig_error_set(err, errno, "tree image `%s`: lock", image);
    if (mounted_squashfs(dir))
        return 1;
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, "tree image: mkdir `%s`", dir);
    char loop[64];
    cleanup_close int loop_fd = brig_loop_attach(fd, true, loop, err);
    if (loop_fd < 0)
        return brig_error_wrap(err, "tree image `%s`", image);
    if (mount(loop, dir, "squashfs", MS_RDONLY | MS_NODEV, NULL) < 0)
        return brig_error_set(err, errno, "tree image: mount `%s` on `%s`", image, dir);
    return 1;
}

int brig_tree_image_strip(const char *path, char **dir, brig_error_t *err)
{
    size_t n = strlen(path), s = strlen(SUFFIX);
    *dir = NULL;
    if (n <= s || strcmp(path + n - s, SUFFIX) != 0)
        return 0;
    if ((*dir = strndup(path, n - s)) == NULL)
        return brig_error_set(err, ENOMEM, "tree image");
    return 1;
}
