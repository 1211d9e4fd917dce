#define _GNU_SOURCE
/* brig-systemd: the bus half of the systemd cgroup driver
 * (libcontainer/cgroup/systemd.c), linked with libsystemd's sd-bus, which
 * can't be linked into the static brig. brig runs it for each call:
 *
 *   brig-systemd start [--user] UNIT PID [Name=value...]
 *   brig-systemd set   [--user] UNIT Name=value...
 *   brig-systemd stop  [--user] UNIT
 *
 * start is StartTransientUnit with PIDs=[PID] and the properties, set is
 * SetUnitProperties (runtime), stop is StopUnit ("no such unit" is
 * stopped) and then ResetFailedUnit; start and stop wait for their job to
 * finish. A value is GVariant text ("uint64 1048576", "true", "'x'"),
 * read by the driver's own parser (cgroup/systemd.h). Root talks to
 * systemd's private socket, which needs no D-Bus daemon, and falls back
 * to the system bus; --user talks to the caller's user instance.
 *
 * Exits 0 on success; else one line on stderr and 1 (2 for bad usage). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "cgroup/systemd.h"

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
#define JOB_TIMEOUT_USEC (30ULL * 1000000ULL)

static int fail(const char *what, int r, const sd_bus_error *e)
{
    if (e && sd_bus_error_is_set(e))
        fprintf(stderr, "%s: %s\n", what, e->message ? e->message : e->name);
    else
        fprintf(stderr, "%s: %s\n", what, strerror(r < 0 ? -r : r));
    return 1;
}

static int connect_bus(bool user, sd_bus **out)
{
    if (!user && geteuid() == 0) {
        sd_bus *b = NULL;
        if (sd_bus_new(&b) >= 0 && sd_bus_set_address(b, "unix:path=/run/systemd/private") >= 0
            && sd_bus_start(b) >= 0) {
            *out = b;
            return 0;
        }
        sd_bus_unref(b);
    }
    return user ? sd_bus_open_user(out) : sd_bus_open_system(out);
}

/* ---- values ---- */

static int append_value(sd_bus_message *m, const struct brig_variant *v)
{
    union {
        int b;
        uint8_t y;
        int16_t n;
        uint16_t q;
        int32_t i;
        uint32_t u;
        int64_t x;
        uint64_t t;
    } n;
    char t = v->sig[0];
    switch (t) {
    case 'a':
    case '(': {
        cleanup_free char *inner = t == 'a' ? strdup(v->sig + 1)
                                            : strndup(v->sig + 1, strlen(v->sig) - 2);
        if (inner == NULL)
            return -ENOMEM;
        int r = sd_bus_message_open_container(m, t == 'a' ? 'a' : 'r', inner);
        for (size_t i = 0; r >= 0 && i < v->n; i++)
            r = append_value(m, &v->items[i]);
        return r < 0 ? r : sd_bus_message_close_container(m);
    }
    case 's':
    case 'o':
    case 'g':
        return sd_bus_message_append_basic(m, t, v->s);
    case 'd':
        return sd_bus_message_append_basic(m, t, &v->d);
    case 'b':
        n.b = v->u != 0;
        break;
    case 'y':
        n.y = (uint8_t) v->u;
        break;
    case 'n':
        n.n = (int16_t) v->u;
        break;
    case 'q':
        n.q = (uint16_t) v->u;
        break;
    case 'i':
        n.i = (int32_t) v->u;
        break;
    case 'u':
        n.u = (uint32_t) v->u;
        break;
    case 'x':
        n.x = (int64_t) v->u;
        break;
    default:
        n.t = v->u;
        break;
    }
    return sd_bus_message_append_basic(m, t, &n);
}

/* One "Name=value" as an (sv) of the properties array. */
static int append_property(sd_bus_message *m, const char *item)
{
    cleanup_free char *name = NULL;
    struct brig_variant v;
    brig_error_t err = NULL;
    if (brig_systemd_prop_parse(item, &name, &v, &err) < 0) {
        fprintf(stderr, "%s\n", err->msg);
        brig_error_release(&err);
        return -EINVAL;
    }
    int r = sd_bus_message_open_container(m, 'r', "sv");
    if (r >= 0)
        r = sd_bus_message_append_basic(m, 's', name);
    if (r >= 0)
        r = sd_bus_message_open_container(m, 'v', v.sig);
    if (r >= 0)
        r = append_value(m, &v);
    if (r >= 0)
        r = sd_bus_message_close_container(m);
    if (r >= 0)
        r = sd_bus_message_close_container(m);
    brig_variant_free(&v);
    if (r < 0)
        fprintf(stderr, "unit property %s: %s\n", name, strerror(-r));
    return r;
}

static int append_properties(sd_bus_message *m, char **items, int n, const char *pid)
{
    int r = sd_bus_message_open_container(m, 'a', "(sv)");
    if (r >= 0 && pid)
        r = sd_bus_message_append(m, "(sv)", "PIDs", "au", 1, (uint32_t) strtoul(pid, NULL, 10));
    for (int i = 0; r >= 0 && i < n; i++)
        r = append_property(m, items[i]);
    return r < 0 ? r : sd_bus_message_close_container(m);
}

/* ---- jobs ---- */

struct job_wait {
    const char *path; /* the job's object, once the call has answered */
    char *result;     /* "done", "failed", ... */
};

static int on_job_removed(sd_bus_message *m, void *data, sd_bus_error *e)
{
    struct job_wait *w = data;
    uint32_t id;
    const char *path, *unit, *result;
    if (sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) >= 0 && w->path
        && strcmp(path, w->path) == 0 && w->result == NULL)
        w->result = strdup(result);
    return 0;
}

static int wait_job(sd_bus *bus, struct job_wait *w, const char *what)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t start = (uint64_t) now.tv_sec * 1000000 + (uint64_t) now.tv_nsec / 1000;
    for (;;) {
        int r = sd_bus_process(bus, NULL);
        if (r < 0)
            return fail(what, r, NULL);
        if (w->result)
            break;
        if (r > 0)
            continue;
        clock_gettime(CLOCK_MONOTONIC, &now);
        uint64_t spent = (uint64_t) now.tv_sec * 1000000 + (uint64_t) now.tv_nsec / 1000 - start;
        if (spent >= JOB_TIMEOUT_USEC) {
            fprintf(stderr, "%s: the job did not finish in 30 s\n", what);
            return 1;
        }
        if ((r = sd_bus_wait(bus, JOB_TIMEOUT_USEC - spent)) < 0)
            return fail(what, r, NULL);
    }
    if (strcmp(w->result, "done") != 0) {
        fprintf(stderr, "%s: the job ended `%s`\n", what, w->result);
        return 1;
    }
    return 0;
}

/* A method that answers with a job, then the job's end. `absent_ok`: no
 * such unit is success. */
static int call_job(sd_bus *bus, sd_bus_message *m, const char *what, bool absent_ok)
{
    struct job_wait w = { 0 };
    sd_bus_slot *slot = NULL;
    sd_bus_error e = SD_BUS_ERROR_NULL;
    sd_bus_message *reply = NULL;
    /* no sender in the match: a direct connection's messages have none */
    int r = sd_bus_match_signal(bus, &slot, NULL, SD_PATH, SD_MANAGER, "JobRemoved", on_job_removed,
                                &w);
    if (r < 0)
        return fail(what, r, NULL);
    /* the system bus sends a job's signals to subscribers */
    sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "Subscribe", NULL, NULL, "");
    r = sd_bus_call(bus, m, JOB_TIMEOUT_USEC, &e, &reply);
    int rc;
    if (r < 0 && absent_ok && sd_bus_error_has_name(&e, "org.freedesktop.systemd1.NoSuchUnit"))
        rc = 0;
    else if (r < 0)
        rc = fail(what, r, &e);
    else if ((r = sd_bus_message_read(reply, "o", &w.path)) < 0)
        rc = fail(what, r, NULL);
    else
        rc = wait_job(bus, &w, what);
    free(w.result);
    sd_bus_message_unref(reply);
    sd_bus_error_free(&e);
    sd_bus_slot_unref(slot);
    return rc;
}

/* ---- the verbs ---- */

static int start(sd_bus *bus, const char *unit, const char *pid, char **props, int n)
{
    sd_bus_message *m = NULL;
    int r = sd_bus_message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_MANAGER,
                                           "StartTransientUnit");
    if (r >= 0)
        r = sd_bus_message_append(m, "ss", unit, "replace");
    if (r >= 0)
        r = append_properties(m, props, n, pid);
    if (r >= 0)
        r = sd_bus_message_append(m, "a(sa(sv))", 0);
    int rc = r < 0 ? (r == -EINVAL ? 1 : fail("StartTransientUnit", r, NULL))
                   : call_job(bus, m, "StartTransientUnit", false);
    sd_bus_message_unref(m);
    return rc;
}

static int set(sd_bus *bus, const char *unit, char **props, int n)
{
    sd_bus_message *m = NULL;
    sd_bus_error e = SD_BUS_ERROR_NULL;
    int r = sd_bus_message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_MANAGER,
                                           "SetUnitProperties");
    if (r >= 0)
        r = sd_bus_message_append(m, "sb", unit, 1);
    if (r >= 0)
        r = append_properties(m, props, n, NULL);
    int rc = r == -EINVAL ? 1 : 0;
    if (r >= 0 && (r = sd_bus_call(bus, m, JOB_TIMEOUT_USEC, &e, NULL)) < 0)
        rc = fail("SetUnitProperties", r, &e);
    else if (r < 0 && rc == 0)
        rc = fail("SetUnitProperties", r, NULL);
    sd_bus_error_free(&e);
    sd_bus_message_unref(m);
    return rc;
}

static int stop(sd_bus *bus, const char *unit)
{
    sd_bus_message *m = NULL;
    int r = sd_bus_message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_MANAGER, "StopUnit");
    if (r >= 0)
        r = sd_bus_message_append(m, "ss", unit, "replace");
    int rc = r < 0 ? fail("StopUnit", r, NULL) : call_job(bus, m, "StopUnit", true);
    sd_bus_message_unref(m);
    /* a unit that failed stays listed until its failure is reset */
    sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "ResetFailedUnit", NULL, NULL, "s", unit);
    return rc;
}

static int usage(void)
{
    fputs("usage: brig-systemd start [--user] UNIT PID [Name=value...]\n"
          "       brig-systemd set [--user] UNIT Name=value...\n"
          "       brig-systemd stop [--user] UNIT\n",
          stderr);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return usage();
    const char *verb = argv[1];
    int at = 2;
    bool user = strcmp(argv[at], "--user") == 0;
    at += user;
    if (at >= argc)
        return usage();
    const char *unit = argv[at++];
    bool is_start = strcmp(verb, "start") == 0;
    if ((is_start && at >= argc) || (!is_start && strcmp(verb, "set") && strcmp(verb, "stop"))
        || (strcmp(verb, "stop") == 0 && at != argc))
        return usage();
    sd_bus *bus = NULL;
    int r = connect_bus(user, &bus);
    if (r < 0) {
        fprintf(stderr, "connect to systemd's %s bus: %s\n", user ? "user" : "system",
                strerror(-r));
        return 1;
    }
    int rc = is_start                   ? start(bus, unit, argv[at], argv + at + 1, argc - at - 1)
             : strcmp(verb, "set") == 0 ? set(bus, unit, argv + at, argc - at)
                                        : stop(bus, unit);
    sd_bus_flush_close_unref(bus);
    return rc;
}
