#define _GNU_SOURCE
/* The shim's OOM watch, on a directory standing in for a v2 cgroup: a new
 * kill in memory.events is told once; a notification without one is
 * looked at again, so a kill counted a little later (as v1 counts it) is
 * told too, as is one the last look at an init's death finds (waiting a
 * little while a notification is outstanding); a callback may unwatch. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core.h"
#include "unit.h"

struct seen {
    struct shim_loop *loop;
    struct shim_oom *o;
    int fired;
    void *key;
    bool unwatch;
};

static void on_fire(void *data, void *key)
{
    struct seen *s = data;
    s->fired++;
    s->key = key;
    if (s->unwatch)
        shim_oom_unwatch(s->o, key);
}

static void stop(struct shim_loop *l, void *data)
{
    (void) data;
    shim_loop_stop(l);
}

static int dfd = -1;

/* In place: the watched file changes (IN_MODIFY). */
static void put(const char *text)
{
    int fd = openat(dfd, "memory.events", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        if (write(fd, text, strlen(text)) < 0)
            perror("memory.events");
        close(fd);
    }
}

/* A new file renamed over it: the count changes without a notification. */
static void put_quietly(struct shim_loop *l, void *data)
{
    (void) l;
    int fd = openat(dfd, "memory.events.new", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        if (write(fd, data, strlen(data)) < 0)
            perror("memory.events.new");
        close(fd);
    }
    renameat(dfd, "memory.events.new", dfd, "memory.events");
}

static void run_for(struct shim_loop *l, int ms)
{
    brig_error_t err = NULL;
    shim_loop_after(l, ms, stop, NULL, &err);
    shim_loop_run(l, &err);
    brig_error_release(&err);
}

int main(void)
{
    char dir[] = "/tmp/brig-unit-oom-XXXXXX";
    if (mkdtemp(dir) == NULL)
        return perror("mkdtemp"), 1;
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    brig_error_t err = NULL;
    struct seen s = { 0 };
    int key = 0;
    CHECK(shim_loop_new(&s.loop, &err) == 0 && shim_oom_new(s.loop, on_fire, &s, &s.o, &err) == 0,
          "loop and OOM watch made");
    CHECK(shim_oom_watch(s.o, dir, &key, &err) == -1 && err != NULL,
          "no memory.events: no watch, an error");
    brig_error_release(&err);

    put("max 0\noom 0\noom_kill 0\n");
    CHECK(shim_oom_watch(s.o, dir, &key, &err) == 0, "watch");
    put("max 1\noom 1\noom_kill 1\n");
    run_for(s.loop, 100);
    CHECK(s.fired == 1 && s.key == &key, "a new kill told once, with its key");

    put("max 2\noom 2\noom_kill 1\n");
    shim_loop_after(s.loop, 30, put_quietly, "max 2\noom 2\noom_kill 2\n", &err);
    run_for(s.loop, 400);
    CHECK(s.fired == 2, "notified before the kill was counted: told at a later look");
    /* The watch followed the file renamed over; watch the new one. */
    shim_oom_unwatch(s.o, &key);
    CHECK(shim_oom_watch(s.o, dir, &key, &err) == 0, "watched anew");

    put("max 3\noom 2\noom_kill 2\n");
    run_for(s.loop, 800);
    CHECK(s.fired == 2, "a change without a new kill: nothing told");

    /* An init dead of an OOM kill whose rechecks are not due yet. */
    put_quietly(s.loop, "max 3\noom 3\noom_kill 3\n");
    shim_oom_settle(s.o, &key);
    CHECK(s.fired == 3, "a kill counted without a notification: told by the last look");
    shim_oom_settle(s.o, &key);
    CHECK(s.fired == 3, "and told once");
    shim_oom_unwatch(s.o, &key);
    CHECK(shim_oom_watch(s.o, dir, &key, &err) == 0, "watched anew after the rename");

    /* A notification not read yet, and the kill counted 20 ms after the
     * init's death, as the kernel may count it. */
    put("max 3\noom 4\noom_kill 3\n");
    pid_t child = fork();
    if (child == 0) {
        usleep(20000);
        put_quietly(NULL, "max 3\noom 4\noom_kill 4\n");
        _exit(0);
    }
    shim_oom_settle(s.o, &key);
    waitpid(child, NULL, 0);
    CHECK(s.fired == 4, "a kill counted just after the death: the last look waits for it");
    shim_oom_unwatch(s.o, &key);
    CHECK(shim_oom_watch(s.o, dir, &key, &err) == 0, "watched anew after the rename");

    s.unwatch = true;
    put("max 3\noom 5\noom_kill 5\n");
    run_for(s.loop, 100);
    put("max 3\noom 6\noom_kill 6\n");
    run_for(s.loop, 100);
    CHECK(s.fired == 5, "the callback unwatched: nothing more");

    CHECK(shim_oom_watch(s.o, dir, &key, &err) == 0, "watched again");
    put("max 4\noom 7\noom_kill 7\n");
    shim_oom_free(s.o);
    run_for(s.loop, 50);
    CHECK(s.fired == 5, "freed with a notification pending: nothing told");
    shim_loop_free(s.loop);

    unlinkat(dfd, "memory.events", 0);
    close(dfd);
    CHECK(rmdir(dir) == 0, "scratch directory removed");
    return unit_done();
}
