#define _GNU_SOURCE
/* Handlers found by their recorded name or, for dirs made before names
 * were recorded, by their marker; and a state dir's removal that stops at
 * a file system mounted inside it (a data image left mounted). */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/utils.h"
#include "container/handler.h"
#include "unit.h"

static const struct brig_handler test_handler = {
    .name = "test",
    .state_marker = "legacy",
    .image_marker = "legacy-image",
};
static const struct brig_handler *const handlers[] = { &test_handler, NULL };

static void put(int dir_fd, const char *name, const char *text)
{
    int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        if (write(fd, text, strlen(text)) < 0)
            perror(name);
        close(fd);
    }
}

static void test_lookup(int dir_fd)
{
    const struct brig_handler *h = &test_handler;
    brig_error_t err = NULL;
    CHECK(brig_handler_of(dir_fd, BRIG_HANDLER_FILE, &h, &err) == 0 && h == NULL,
          "no name and no marker: no handler");
    put(dir_fd, "legacy", "x");
    CHECK(brig_handler_of(dir_fd, BRIG_HANDLER_FILE, &h, &err) == 0 && h == &test_handler,
          "no name, the state marker: the handler");
    CHECK(brig_handler_of(dir_fd, BRIG_HANDLER_IMAGE_FILE, &h, &err) == 0 && h == NULL,
          "the state marker does not mark an image dir");
    put(dir_fd, "legacy-image", "x");
    CHECK(brig_handler_of(dir_fd, BRIG_HANDLER_IMAGE_FILE, &h, &err) == 0 && h == &test_handler,
          "the image marker marks an image dir");
    unlinkat(dir_fd, "legacy", 0);
    CHECK(brig_handler_record(dir_fd, BRIG_HANDLER_FILE, &test_handler, &err) == 0,
          "a name is recorded");
    CHECK(brig_handler_of(dir_fd, BRIG_HANDLER_FILE, &h, &err) == 0 && h == &test_handler,
          "the recorded name finds the handler");
    put(dir_fd, BRIG_HANDLER_FILE, "other\n");
    CHECK(brig_handler_of(dir_fd, BRIG_HANDLER_FILE, &h, &err) < 0 && err
              && strstr(err->msg, "`other`"),
          "a name this program has not registered is an error, not a plain container");
    brig_error_release(&err);
}

/* A tmpfs mounted on a subdir: the removal refuses before deleting
 * anything, and the files on the mount survive. */
static void test_remove_stops_at_mounts(const char *top)
{
    char dir[64], mnt[128], kept[192], beside[128];
    snprintf(dir, sizeof dir, "%s/state", top);
    snprintf(mnt, sizeof mnt, "%s/data", dir);
    snprintf(kept, sizeof kept, "%s/mine", mnt);
    snprintf(beside, sizeof beside, "%s/state.json", dir);
    mkdir(dir, 0700);
    mkdir(mnt, 0700);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=1m") < 0) {
        CHECK(0, "mount a tmpfs to remove around (needs root)");
        return;
    }
    int fd = open(kept, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    fd = open(beside, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    int top_fd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    brig_error_t err = NULL;
    CHECK(brig_remove_tree_at(top_fd, "state", &err) < 0 && err
              && strstr(err->msg, "a file system is mounted there"),
          "removing a tree with a mount inside fails, naming it");
    brig_error_release(&err);
    CHECK(access(kept, F_OK) == 0, "the mounted file system's files are untouched");
    CHECK(access(beside, F_OK) == 0, "nothing beside it was removed either");
    umount2(mnt, MNT_DETACH);
    CHECK(brig_remove_tree_at(top_fd, "state", &err) == 0 && access(dir, F_OK) < 0,
          "once unmounted, the tree goes");
    brig_error_release(&err);
    close(top_fd);
}

int main(void)
{
    brig_handlers_register(handlers);
    char top[] = "/tmp/brig-handler-XXXXXX";
    if (mkdtemp(top) == NULL)
        return 1;
    int dir_fd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    test_lookup(dir_fd);
    unlinkat(dir_fd, BRIG_HANDLER_FILE, 0);
    unlinkat(dir_fd, "legacy-image", 0);
    close(dir_fd);
    test_remove_stops_at_mounts(top);
    rmdir(top);
    return unit_done();
}
