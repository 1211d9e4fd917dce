#define _GNU_SOURCE
#include "sandbox/userns.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utils.h"
#include "process/idmap.h"
#include "sandbox/dataimage.h"
#include "sandbox/idrange.h"
#include "sandbox/pod_userns.h"

int brig_sandbox_make_reachable(const char *dir, brig_error_t *err)
{
    cleanup_free char *path = strdup(dir);
    if (path == NULL)
        return brig_error_set(err, ENOMEM, "user namespace");
    for (char *p = strchr(path + 1, '/');; p = strchr(p + 1, '/')) {
        if (p)
            *p = '\0';
        if (mkdir(path, 0711) < 0 && errno != EEXIST)
            return brig_error_set(err, errno, "mkdir `%s`", path);
        if (p == NULL)
            break;
        *p = '/';
    }
    if (chmod(dir, 0711) < 0)
        return brig_error_set(err, errno, "chmod `%s`", dir);
    return brig_sandbox_check_reachable(dir, err);
}

int brig_sandbox_check_reachable(const char *path, brig_error_t *err)
{
    cleanup_free char *copy = strdup(path);
    if (copy == NULL)
        return brig_error_set(err, ENOMEM, "user namespace");
    /* The dirs above: the host's to open, ours only to check. */
    for (char *p = strrchr(copy, '/'); p && p != copy; p = strrchr(copy, '/')) {
        *p = '\0';
        struct stat st;
        if (stat(copy, &st) == 0 && !(st.st_mode & S_IXOTH))
            return brig_error_set(err, 0,
                                  "`%s` (mode %04o) is not searchable by others, so the "
                                  "sandbox's root, an unmapped id on the host, can't reach `%s`: "
                                  "chmod o+x it, or create with --userns host",
                                  copy, (unsigned) (st.st_mode & 07777), path);
    }
    return 0;
}

int brig_sandbox_private_reset(const char *dir, brig_error_t *err)
{
    struct stat st;
    if (stat(dir, &st) < 0)
        return errno == ENOENT ? 0 : brig_error_set(err, errno, "`%s`", dir);
    if (brig_data_image_unmount(dir, err) < 0 || brig_sandbox_pod_binds_remove(dir, err) < 0
        || brig_sandbox_tree_unmount(dir, err) < 0 || brig_idrange_release(dir, err) < 0)
        return -1;
    return brig_sandbox_private_remove(dir, err);
}

int brig_sandbox_private_remove(const char *dir, brig_error_t *err)
{
    cleanup_free char *parent = strdup(dir);
    char *slash = parent ? strrchr(parent, '/') : NULL;
    if (slash == NULL)
        return brig_error_set(err, ENOMEM, "remove `%s`", dir);
    *slash = '\0';
    cleanup_close int fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : brig_error_set(err, errno, "open `%s`", parent);
    if (faccessat(fd, slash + 1, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
        return 0;
    return brig_remove_tree_at(fd, slash + 1, err);
}

int brig_sandbox_data_close(const char *data_dir, brig_error_t *err)
{
    cleanup_free char *mnt = NULL;
    if (asprintf(&mnt, "%s/%s", data_dir, BRIG_DATA_MOUNT) < 0) {
        mnt = NULL;
        return brig_error_set(err, ENOMEM, "sandbox data");
    }
    if (chmod(mnt, 0700) < 0)
        return brig_error_set(err, errno, "chmod `%s`", mnt);
    return 0;
}

/* One image made readable by the group: a regular file of root's with no
 * other name, opened without following a link, changed through its fd. */
static int share_image(int image_fd, const char *name, gid_t gid, brig_error_t *err)
{
    struct stat st;
    /* Links (criu's `parent`) and dirs are left as they are. */
    if (fstatat(image_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
        return 0;
    cleanup_close int fd = openat(image_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        return brig_error_set(err, fd < 0 ? errno : EINVAL, "image `%s`", name);
    if (st.st_uid != 0 || st.st_nlink != 1)
        return brig_error_set(err, 0, "image `%s`: not a file of root's with one name", name);
    if (fchown(fd, (uid_t) -1, gid) < 0 || fchmod(fd, 0640) < 0)
        return brig_error_set(err, errno, "image `%s`: share with the sandbox's root", name);
    return 0;
}

int brig_sandbox_images_share(int image_fd, const struct brig_profile_settings *s,
                              brig_error_t *err)
{
    if (!brig_profile_userns_auto(s) || s->userns_gid <= 0)
        return 0;
    gid_t gid = (gid_t) s->userns_gid;
    struct stat top;
    if (fstat(image_fd, &top) < 0)
        return brig_error_set(err, errno, "the images");
    /* Only a dir nobody else could have filled. */
    if (top.st_uid != 0 || (top.st_mode & 022))
        return brig_error_set(err, 0,
                              "the images: their dir must be root's and writable by "
                              "root alone");
    if (fchown(image_fd, (uid_t) -1, gid) < 0 || fchmod(image_fd, 0750) < 0)
        return brig_error_set(err, errno, "the images: share with the sandbox's root");
    int fd = dup(image_fd);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (d == NULL) {
        if (fd >= 0)
            close(fd);
        return brig_error_set(err, errno, "read the images");
    }
    cleanup_dir DIR *dir = d;
    rewinddir(dir);
    struct dirent *de;
    while ((de = readdir(dir)) != NULL)
        if (de->d_name[0] != '.' && share_image(image_fd, de->d_name, gid, err) < 0)
            return -1;
    return 0;
}

int brig_sandbox_userns_acquire(struct brig_profile_settings *s, brig_error_t *err)
{
    struct brig_idrange r = { (uint32_t) s->userns_uid, (uint32_t) s->userns_gid };
    if (brig_sandbox_make_reachable(s->data_dir, err) < 0)
        return -1;
    int rc = s->userns_uid > 0 ? brig_idrange_claim(s->data_dir, &r, err)
                               : brig_idrange_acquire(s->data_dir, &r, err);
    if (rc < 0)
        return brig_error_wrap(err, "user namespace");
    s->userns_uid = r.uid;
    s->userns_gid = r.gid;
    return 0;
}

void brig_sandbox_user_on_host(const struct brig_profile_settings *s, uint32_t *uid, uint32_t *gid)
{
    uint32_t in_uid, in_gid;
    brig_profile_user(s, &in_uid, &in_gid);
    *uid = (uint32_t) s->userns_uid + in_uid;
    *gid = (uint32_t) s->userns_gid + in_gid;
}

static int tree_path(const char *data_dir, char **out, brig_error_t *err)
{
    if (asprintf(out, "%s/%s", data_dir, BRIG_SANDBOX_TREE) < 0) {
        *out = NULL;
        return brig_error_set(err, ENOMEM, "sandbox tree");
    }
    return 0;
}

int brig_sandbox_unmount_all(const char *path, brig_error_t *err)
{
    /* Detached: a sandbox's mount namespace may still hold a copy, and
     * the host's view goes now either way. */
    while (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
        ;
    if (errno != EINVAL && errno != ENOENT)
        return brig_error_set(err, errno, "unmount `%s`", path);
    return 0;
}

int brig_sandbox_tree_unmount(const char *data_dir, brig_error_t *err)
{
    cleanup_free char *tree = NULL;
    if (tree_path(data_dir, &tree, err) < 0 || brig_sandbox_unmount_all(tree, err) < 0)
        return -1;
    if (rmdir(tree) < 0 && errno != ENOENT)
        return brig_error_set(err, errno, "rmdir `%s`", tree);
    return 0;
}

int brig_sandbox_tree_mount(const struct brig_profile_settings *s, brig_error_t *err)
{
    cleanup_free char *tree = NULL;
    if (brig_sandbox_tree_unmount(s->data_dir, err) < 0 || tree_path(s->data_dir, &tree, err) < 0)
        return -1;
    if (mkdir(tree, 0755) < 0 && errno != EEXIST)
        return brig_error_set(err, errno, "mkdir `%s`", tree);
    struct brig_id_mapping uids = { 0, (uint32_t) s->userns_uid, BRIG_SANDBOX_IDS };
    struct brig_id_mapping gids = { 0, (uint32_t) s->userns_gid, BRIG_SANDBOX_IDS };
    cleanup_close int userns = brig_userns_for_maps(&uids, 1, &gids, 1, err);
    if (userns < 0)
        return brig_error_wrap(err, "user namespace");
    if (brig_idmap_bind(s->rootfs, tree, userns, true, err) < 0) {
        rmdir(tree);
        if (!brig_idmap_unsupported((*err)->errnum))
            return brig_error_wrap(err, "user namespace");
        cleanup_free char *why = strdup((*err)->msg);
        return brig_error_set(err, 0, "user namespace: %s; create with --userns host",
                              why ? why : "id-mapped mounts unsupported");
    }
    return 0;
}
