#define _GNU_SOURCE
/* /v1/sandboxes: create, list, describe, remove. A sandbox's object is
 * what `sandbox ls` knows of it (state, age, workspace), its limits from
 * its settings, its cgroup's figures and its lifetime. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "base/cleanup.h"
#include "cgroup/cgroup.h"
#include "container/container.h"
#include "container/state.h"
#include "sandbox/layout.h"
#include "sandbox/lifetime.h"
#include "sandbox/manage.h"
#include "sandbox/sandbox.h"

static void gen_int(yajl_gen g, const char *key, long long v)
{
    api_gen_key(g, key);
    yajl_gen_integer(g, v);
}

static void gen_limits(yajl_gen g, const char *id)
{
    struct brig_profile_settings s;
    brig_error_t err = NULL;
    api_gen_key(g, "limits");
    if (brig_sandbox_settings_read(api_config.root, id, &s, &err) < 0) {
        brig_error_release(&err);
        yajl_gen_null(g);
        api_gen_key(g, "network");
        yajl_gen_null(g);
        return;
    }
    yajl_gen_map_open(g);
    gen_int(g, "memory", s.memory);
    gen_int(g, "pids", s.pids);
    api_gen_key(g, "cpus");
    yajl_gen_double(g, (double) s.cpus_milli / 1000);
    gen_int(g, "data_size", s.data_size);
    yajl_gen_map_close(g);
    api_gen_key(g, "network");
    api_gen_string(g, brig_profile_on_packages(&s) ? BRIG_NETWORK_PACKAGES
                      : s.netns                    ? "path"
                                                   : BRIG_NETWORK_NONE);
    brig_profile_settings_clear(&s);
}

static void gen_usage(yajl_gen g, const struct brig_sandbox_entry *e)
{
    struct brig_cgroup_stats st = { 0 };
    brig_error_t err = NULL;
    api_gen_key(g, "usage");
    if (!e->has_container || e->status != BRIG_STATUS_RUNNING
        || brig_container_stats(api_config.root, e->id, &st, &err) < 0) {
        brig_error_release(&err);
        yajl_gen_null(g);
        return;
    }
    yajl_gen_map_open(g);
    gen_int(g, "memory", (long long) st.memory_current);
    gen_int(g, "cpu_ns", (long long) st.cpu_usage_usec * 1000);
    gen_int(g, "pids", (long long) st.pids_current);
    yajl_gen_map_close(g);
}

/* Milliseconds as seconds with three decimals at most. */
static void gen_ms(yajl_gen g, int64_t ms)
{
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%lld.%03lld", (long long) (ms / 1000),
                     (long long) (ms % 1000));
    while (buf[n - 1] == '0')
        n--;
    if (buf[n - 1] == '.')
        n--;
    yajl_gen_number(g, buf, (size_t) n);
}

/* Seconds, or null for none. */
static void gen_seconds(yajl_gen g, const char *key, int64_t ms)
{
    api_gen_key(g, key);
    if (ms > 0)
        gen_ms(g, ms);
    else
        yajl_gen_null(g);
}

static void gen_lifetime(yajl_gen g, const struct brig_sandbox_entry *e)
{
    api_gen_key(g, "lifetime");
    yajl_gen_map_open(g);
    gen_seconds(g, "ttl", e->ttl_ms);
    gen_seconds(g, "idle_timeout", e->idle_ms);
    gen_seconds(g, "exec_timeout", e->exec_timeout_ms);
    api_gen_key(g, "expires_in");
    if (e->deadline_ms == INT64_MAX || e->deadline_why == NULL) {
        yajl_gen_null(g);
    } else {
        /* Whole seconds, rounded up: 0 only once it is due. */
        int64_t left = e->deadline_ms - brig_sandbox_now_ms();
        yajl_gen_integer(g, left > 0 ? (left + 999) / 1000 : 0);
    }
    api_gen_key(g, "expires_for");
    if (e->deadline_why)
        api_gen_string(g, e->deadline_why);
    else
        yajl_gen_null(g);
    yajl_gen_map_close(g);
}

static void gen_sandbox(yajl_gen g, const struct brig_sandbox_entry *e)
{
    yajl_gen_map_open(g);
    api_gen_key(g, "id");
    api_gen_string(g, e->id);
    api_gen_key(g, "state");
    api_gen_string(g, e->has_container ? brig_status_name(e->status) : "broken");
    api_gen_time(g, "created", e->mtime);
    gen_int(g, "age", (long long) (time(NULL) - e->mtime));
    gen_limits(g, e->id);
    api_gen_key(g, "data");
    if (e->data_mounted) {
        yajl_gen_map_open(g);
        gen_int(g, "used", (long long) e->data_used);
        gen_int(g, "size", (long long) e->data_size);
        yajl_gen_map_close(g);
    } else {
        yajl_gen_null(g);
    }
    gen_usage(g, e);
    gen_lifetime(g, e);
    yajl_gen_map_close(g);
}

enum MHD_Result api_sandboxes_list(struct MHD_Connection *c, struct api_request *r)
{
    struct brig_sandbox_entry *entries;
    size_t n;
    brig_error_t err = NULL;
    if (brig_sandbox_list(api_config.root, &entries, &n, &err) < 0)
        return api_reply_brig_error(c, &err);
    yajl_gen g = api_gen();
    if (g) {
        yajl_gen_map_open(g);
        api_gen_key(g, "sandboxes");
        yajl_gen_array_open(g);
        for (size_t i = 0; i < n; i++)
            gen_sandbox(g, &entries[i]);
        yajl_gen_array_close(g);
        yajl_gen_map_close(g);
    }
    brig_sandbox_list_free(entries, n);
    return api_reply_gen(c, 200, g);
}

static enum MHD_Result reply_sandbox(struct MHD_Connection *c, unsigned status, const char *id)
{
    struct brig_sandbox_entry e;
    brig_error_t err = NULL;
    if (brig_sandbox_get(api_config.root, id, &e, &err) < 0)
        return api_reply_brig_error(c, &err);
    yajl_gen g = api_gen();
    if (g)
        gen_sandbox(g, &e);
    free(e.id);
    return api_reply_gen(c, status, g);
}

enum MHD_Result api_sandbox_get(struct MHD_Connection *c, struct api_request *r)
{
    return reply_sandbox(c, 200, r->parts[1]);
}

/* ---- create ---- */

/* A size or count given as a number or as a string ("512M", "1.5"). */
static int setting_field(struct brig_profile_settings *s, struct api_argv *a, yajl_val body,
                         const char *field, const char *key, brig_error_t *err)
{
    yajl_val v = api_field(body, field);
    if (v == NULL)
        return 0;
    char text[64];
    if (YAJL_IS_STRING(v))
        snprintf(text, sizeof text, "%s", YAJL_GET_STRING(v));
    else if (YAJL_IS_INTEGER(v))
        snprintf(text, sizeof text, "%lld", YAJL_GET_INTEGER(v));
    else if (YAJL_IS_DOUBLE(v))
        snprintf(text, sizeof text, "%g", YAJL_GET_DOUBLE(v));
    else
        return brig_error_kind(err, BRIG_E_INPUT, "body: `%s` must be a number or a string", field);
    if (brig_sandbox_setting(s, key, field, text, false, err) < 0)
        return -1;
    return api_argv_add(a, "%s=%s", key, text) == 0 ? 0 : brig_error_set(err, ENOMEM, "create");
}

/* ttl, idle_timeout, exec_timeout: seconds or durations, checked and
 * passed on in ms. */
static int limits_from(yajl_val body, struct api_argv *a, brig_error_t *err)
{
    static const char *const limits[][2] = { { "ttl", "ttl" },
                                             { "idle_timeout", "idle-timeout" },
                                             { "exec_timeout", "exec-timeout" } };
    struct brig_sandbox_create_options checked = { 0 };
    for (size_t i = 0; i < 3; i++) {
        int64_t ms;
        int got = api_field_seconds_ms(body, limits[i][0], &ms, err);
        if (got <= 0) {
            if (got < 0)
                return -1;
            continue;
        }
        if (brig_sandbox_lifetime_setting(&checked, limits[i][1], limits[i][0], NULL, ms, err) < 0)
            return -1;
        if (api_argv_add(a, "%s=%lld", limits[i][1], (long long) ms) != 0)
            return brig_error_set(err, ENOMEM, "create");
    }
    return 0;
}

static int settings_from(yajl_val body, struct brig_profile_settings *s, struct api_argv *a,
                         brig_error_t *err)
{
    static const char *const knobs[][2] = {
        { "memory", "memory" },       { "pids", "pids" },       { "cpus", "cpus" },
        { "data_size", "data-size" }, { "network", "network" }, { "rootfs", "rootfs" },
        { "template", "template" },
    };
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
        if (setting_field(s, a, body, knobs[i][0], knobs[i][1], err) < 0)
            return -1;
    return 0;
}

/* The create's job, every field checked first (400 here, not in the
 * job): create ROOT ID [KEY=VALUE]... */
static int create_argv(yajl_val body, const char *id, struct api_argv *a, brig_error_t *err)
{
    struct brig_profile_settings s;
    if (brig_sandbox_id_validate(id, err) < 0 || brig_profile_settings_default(&s, err) < 0)
        return -1;
    int r = api_argv_add(a, "brig-api") | api_argv_add(a, "--job") | api_argv_add(a, "create")
            | api_argv_add(a, "%s", api_config.root) | api_argv_add(a, "%s", id);
    if (r == 0 && api_config.rootfs)
        r = api_argv_add(a, "rootfs=%s", api_config.rootfs);
    if (r != 0)
        r = brig_error_set(err, ENOMEM, "create");
    if (r == 0)
        r = settings_from(body, &s, a, err);
    brig_profile_settings_clear(&s);
    return r < 0 ? -1 : limits_from(body, a, err);
}

enum MHD_Result api_sandboxes_create(struct MHD_Connection *c, struct api_request *r)
{
    static const char *const allowed[] = { "id",           "memory",       "pids",     "cpus",
                                           "data_size",    "network",      "rootfs",   "ttl",
                                           "idle_timeout", "exec_timeout", "template", NULL };
    yajl_val body = NULL;
    brig_error_t err = NULL;
    const char *id = NULL;
    struct api_argv a = { 0 };
    int rc = api_body_object(r, allowed, &body, &err);
    if (rc == 0 && (rc = api_field_string(body, "id", &id, &err)) == 0)
        rc = brig_error_kind(&err, BRIG_E_INPUT, "body: `id` is required");
    if (rc >= 0)
        rc = create_argv(body, id, &a, &err);
    if (rc >= 0 && brig_sandbox_exists(api_config.root, id, &err) != 0)
        rc = err ? -1 : brig_error_kind(&err, EEXIST, "sandbox `%s` exists", id);
    if (rc >= 0)
        rc = api_job_run(&a, NULL, &err);
    api_argv_free(&a);
    enum MHD_Result res = rc < 0 ? api_reply_brig_error(c, &err) : reply_sandbox(c, 201, id);
    yajl_tree_free(body);
    return res;
}

/* ---- remove ---- */

enum MHD_Result api_sandbox_delete(struct MHD_Connection *c, struct api_request *r)
{
    const char *id = r->parts[1];
    brig_error_t err = NULL;
    int found = brig_sandbox_exists(api_config.root, id, &err);
    if (found < 0)
        return api_reply_brig_error(c, &err);
    if (!found)
        return api_reply_error(c, 404, "no sandbox `%s`", id);
    struct api_argv a = { 0 };
    int rc = api_argv_add(&a, "brig-api") | api_argv_add(&a, "--job") | api_argv_add(&a, "remove")
             | api_argv_add(&a, "%s", api_config.root) | api_argv_add(&a, "%s", id);
    rc = rc != 0 ? brig_error_set(&err, ENOMEM, "remove") : api_job_run(&a, NULL, &err);
    api_argv_free(&a);
    if (rc < 0)
        return api_reply_brig_error(c, &err);
    return api_reply(c, 204, NULL, "", 0);
}
