#define _GNU_SOURCE
/* /v1/sandboxes/ID/sessions: the sandbox layer's sessions (session.h).
 * A session's holder outlives the server, so a restarted server finds
 * every session as it left it. Starting one forks, so it runs in a
 * worker child; the rest talks to the holder's socket. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "base/cleanup.h"
#include "sandbox/manage.h"
#include "sandbox/session.h"

#define DEFAULT_WAIT_MS 500

static void gen_info(yajl_gen g, const struct brig_session_info *s)
{
    yajl_gen_map_open(g);
    api_gen_key(g, "name");
    api_gen_string(g, s->name);
    /* The sandbox's pid while it runs; none once it ended. */
    api_gen_key(g, "pid");
    if (s->alive)
        yajl_gen_integer(g, s->pid);
    else
        yajl_gen_null(g);
    api_gen_key(g, "cmd");
    yajl_gen_array_open(g);
    for (size_t i = 0; s->argv && s->argv[i]; i++)
        api_gen_string(g, s->argv[i]);
    yajl_gen_array_close(g);
    api_gen_key(g, "alive");
    yajl_gen_bool(g, s->alive);
    api_gen_key(g, "exit");
    if (s->alive)
        yajl_gen_null(g);
    else
        yajl_gen_integer(g, s->exit_status);
    api_gen_key(g, "unread");
    yajl_gen_integer(g, (long long) s->unread);
    yajl_gen_map_close(g);
}

enum MHD_Result api_sessions_list(struct MHD_Connection *c, struct api_request *r)
{
    struct brig_session_info *list;
    size_t n;
    brig_error_t err = NULL;
    int found = brig_sandbox_exists(api_config.root, r->parts[1], &err);
    if (found <= 0)
        return found < 0 ? api_reply_brig_error(c, &err)
                         : api_reply_error(c, 404, "no sandbox `%s`", r->parts[1]);
    if (brig_session_list(r->parts[1], &list, &n, &err) < 0)
        return api_reply_brig_error(c, &err);
    yajl_gen g = api_gen();
    if (g) {
        yajl_gen_map_open(g);
        api_gen_key(g, "sessions");
        yajl_gen_array_open(g);
        for (size_t i = 0; i < n; i++)
            gen_info(g, &list[i]);
        yajl_gen_array_close(g);
        yajl_gen_map_close(g);
    }
    brig_session_list_free(list, n);
    return api_reply_gen(c, 200, g);
}

/* The session's entry as `sessions` lists it. */
static enum MHD_Result reply_info(struct MHD_Connection *c, unsigned status, const char *id,
                                  const char *name)
{
    struct brig_session_info *list;
    size_t n;
    brig_error_t err = NULL;
    if (brig_session_list(id, &list, &n, &err) < 0)
        return api_reply_brig_error(c, &err);
    yajl_gen g = NULL;
    for (size_t i = 0; i < n && g == NULL; i++)
        if (strcmp(list[i].name, name) == 0 && (g = api_gen()) != NULL)
            gen_info(g, &list[i]);
    brig_session_list_free(list, n);
    return g ? api_reply_gen(c, status, g) : api_reply_error(c, 404, "no session `%s`", name);
}

/* session ROOT ID NAME CWD USER N ENV... [ARGV...] */
static int start_argv(const char *id, const char *name, const char *cwd, const char *user,
                      char **env, char **argv, struct api_argv *a)
{
    size_t n_env = 0;
    while (env && env[n_env])
        n_env++;
    int r = api_argv_add(a, "brig-api") | api_argv_add(a, "--job") | api_argv_add(a, "session")
            | api_argv_add(a, "%s", api_config.root) | api_argv_add(a, "%s", id)
            | api_argv_add(a, "%s", name) | api_argv_add(a, "%s", cwd ? cwd : "")
            | api_argv_add(a, "%s", user ? user : "") | api_argv_add(a, "%zu", n_env);
    for (size_t i = 0; r == 0 && i < n_env; i++)
        r = api_argv_add(a, "%s", env[i]);
    for (size_t i = 0; r == 0 && argv && argv[i]; i++)
        r = api_argv_add(a, "%s", argv[i]);
    return r;
}

enum MHD_Result api_session_start(struct MHD_Connection *c, struct api_request *r)
{
    static const char *const allowed[] = { "name", "cmd", "cwd", "env", "user", NULL };
    yajl_val body = NULL;
    brig_error_t err = NULL;
    char **argv = NULL, **env = NULL;
    const char *name = NULL, *cwd = NULL, *user = NULL;
    struct api_argv a = { 0 };
    int rc = api_body_object(r, allowed, &body, &err);
    if (rc == 0 && (rc = api_field_string(body, "name", &name, &err)) == 0)
        rc = brig_error_kind(&err, BRIG_E_INPUT, "body: `name` is required");
    if (rc >= 0
        && (api_field_strv(body, "cmd", &argv, &err) < 0
            || api_field_env(body, "env", &env, &err) < 0
            || api_field_string(body, "cwd", &cwd, &err) < 0
            || api_field_string(body, "user", &user, &err) < 0))
        rc = -1;
    if (rc >= 0 && argv && argv[0] == NULL)
        rc = brig_error_kind(&err, BRIG_E_INPUT, "body: `cmd` is empty");
    if (rc >= 0 && start_argv(r->parts[1], name, cwd, user, env, argv, &a) != 0)
        rc = brig_error_set(&err, ENOMEM, "session");
    if (rc >= 0)
        rc = api_job_run(&a, NULL, &err);
    enum MHD_Result res = rc < 0 ? api_reply_brig_error(c, &err)
                                 : reply_info(c, 201, r->parts[1], name);
    api_argv_free(&a);
    free(argv);
    api_strv_free(env);
    yajl_tree_free(body);
    return res;
}

/* The answer of input and read. */
static enum MHD_Result reply_output(struct MHD_Connection *c, const struct brig_session_output *o)
{
    yajl_gen g = api_gen();
    if (g == NULL)
        return api_reply_error(c, 500, "out of memory");
    yajl_gen_map_open(g);
    api_gen_key(g, "output");
    api_gen_bytes(g, o->data ? o->data : "", o->len);
    api_gen_key(g, "dropped");
    yajl_gen_integer(g, (long long) o->dropped);
    api_gen_key(g, "alive");
    yajl_gen_bool(g, o->alive);
    api_gen_key(g, "exit");
    if (o->alive)
        yajl_gen_null(g);
    else
        yajl_gen_integer(g, o->exit_status);
    yajl_gen_map_close(g);
    return api_reply_gen(c, 200, g);
}

static enum MHD_Result talk(struct MHD_Connection *c, struct api_request *r, const char *chars,
                            int64_t wait_ms, const char *until)
{
    struct brig_session_output out = { 0 };
    brig_error_t err = NULL;
    if (wait_ms > 600000)
        wait_ms = 600000;
    /* wait 0 answers at once with what is there; the sandbox layer's 0
     * would mean no quiet period at all (only `until` or the end). */
    if (wait_ms <= 0)
        wait_ms = 1;
    if (brig_session_input(r->parts[1], r->parts[3], chars, chars ? strlen(chars) : 0,
                           (int) wait_ms, until, 0, &out, &err)
        < 0)
        return api_reply_brig_error(c, &err);
    enum MHD_Result res = reply_output(c, &out);
    brig_session_output_clear(&out);
    return res;
}

/* Seconds to wait for quiet: 0 (answer at once) to 600. */
static int wait_field(yajl_val body, int64_t *ms, brig_error_t *err)
{
    yajl_val v = api_field(body, "wait");
    if (v == NULL)
        return 0;
    if (!YAJL_IS_NUMBER(v) || !(YAJL_GET_DOUBLE(v) >= 0) || YAJL_GET_DOUBLE(v) > 600)
        return brig_error_kind(err, BRIG_E_INPUT, "body: `wait` must be seconds (0 to 600)");
    *ms = (int64_t) (YAJL_GET_DOUBLE(v) * 1000);
    return 1;
}

enum MHD_Result api_session_input(struct MHD_Connection *c, struct api_request *r)
{
    static const char *const allowed[] = { "chars", "wait", "until", NULL };
    yajl_val body = NULL;
    brig_error_t err = NULL;
    const char *chars = NULL, *until = NULL;
    int64_t wait_ms = DEFAULT_WAIT_MS;
    if (api_body_object(r, allowed, &body, &err) < 0
        || api_field_string(body, "chars", &chars, &err) < 0
        || api_field_string(body, "until", &until, &err) < 0
        || wait_field(body, &wait_ms, &err) < 0) {
        yajl_tree_free(body);
        return api_reply_brig_error(c, &err);
    }
    if (chars == NULL) {
        yajl_tree_free(body);
        return api_reply_error(c, 400, "body: `chars` is required (a plain read is GET)");
    }
    enum MHD_Result res = talk(c, r, chars, wait_ms, until);
    yajl_tree_free(body);
    return res;
}

enum MHD_Result api_session_read(struct MHD_Connection *c, struct api_request *r)
{
    const char *wait = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "wait");
    const char *until = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "until");
    int64_t wait_ms = DEFAULT_WAIT_MS;
    if (wait) {
        char *end;
        double v = strtod(wait, &end);
        if (end == wait || *end || !(v >= 0) || v > 600)
            return api_reply_error(c, 400, "query: `wait` must be seconds (0 to 600)");
        wait_ms = (int64_t) (v * 1000);
    }
    return talk(c, r, NULL, wait_ms, until && *until ? until : NULL);
}

enum MHD_Result api_session_kill(struct MHD_Connection *c, struct api_request *r)
{
    brig_error_t err = NULL;
    if (brig_session_kill(r->parts[1], r->parts[3], &err) < 0)
        return api_reply_brig_error(c, &err);
    return api_reply(c, 204, NULL, "", 0);
}
