#define _GNU_SOURCE
/* Deep copies of a process object: exec hands a handler a process of its
 * own to rewrite, so the caller's stays as the caller made it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "spec/spec.h"

/* strdup that keeps NULL as NULL; false only when memory ran out. */
static bool dup_str(char **to, const char *from)
{
    *to = from ? strdup(from) : NULL;
    return from == NULL || *to != NULL;
}

int brig_strv_copy(struct brig_strv *to, const struct brig_strv *from)
{
    *to = (struct brig_strv){ NULL, 0 };
    if (from->n == 0)
        return 0;
    if ((to->v = calloc(from->n + 1, sizeof *to->v)) == NULL)
        return -1;
    for (; to->n < from->n; to->n++)
        if ((to->v[to->n] = strdup(from->v[to->n])) == NULL)
            return -1;
    return 0;
}

static int copy_user(struct brig_user *to, const struct brig_user *from)
{
    *to = *from;
    to->additional_gids = NULL;
    to->username = NULL;
    if (from->n_additional_gids) {
        size_t size = from->n_additional_gids * sizeof *to->additional_gids;
        if ((to->additional_gids = malloc(size)) == NULL)
            return -1;
        memcpy(to->additional_gids, from->additional_gids, size);
    }
    return dup_str(&to->username, from->username) ? 0 : -1;
}

static int copy_capabilities(struct brig_capabilities **to, const struct brig_capabilities *from)
{
    *to = NULL;
    if (from == NULL)
        return 0;
    struct brig_capabilities *c = calloc(1, sizeof *c);
    if (c == NULL)
        return -1;
    *to = c;
    if (brig_strv_copy(&c->bounding, &from->bounding) < 0
        || brig_strv_copy(&c->effective, &from->effective) < 0
        || brig_strv_copy(&c->inheritable, &from->inheritable) < 0
        || brig_strv_copy(&c->permitted, &from->permitted) < 0
        || brig_strv_copy(&c->ambient, &from->ambient) < 0)
        return -1;
    return 0;
}

int brig_rlimits_copy(struct brig_rlimit **to, size_t *n_to, const struct brig_rlimit *from,
                      size_t n)
{
    *to = NULL;
    *n_to = 0;
    if (n == 0)
        return 0;
    if ((*to = calloc(n, sizeof **to)) == NULL)
        return -1;
    for (; *n_to < n; (*n_to)++) {
        (*to)[*n_to] = from[*n_to];
        if (((*to)[*n_to].type = strdup(from[*n_to].type)) == NULL)
            return -1;
    }
    return 0;
}

static int copy_scheduler(struct brig_scheduler **to, const struct brig_scheduler *from)
{
    *to = NULL;
    if (from == NULL)
        return 0;
    if ((*to = calloc(1, sizeof **to)) == NULL)
        return -1;
    **to = *from;
    (*to)->policy = NULL;
    (*to)->flags = (struct brig_strv){ NULL, 0 };
    if (!dup_str(&(*to)->policy, from->policy) || brig_strv_copy(&(*to)->flags, &from->flags) < 0)
        return -1;
    return 0;
}

static int copy_io_priority(struct brig_io_priority **to, const struct brig_io_priority *from)
{
    *to = NULL;
    if (from == NULL)
        return 0;
    if ((*to = calloc(1, sizeof **to)) == NULL)
        return -1;
    (*to)->priority = from->priority;
    return dup_str(&(*to)->class, from->class) ? 0 : -1;
}

/* Every owned field copied; the scalars come along with the struct copy.
 * On failure the half-made copy is freed here. */
int brig_process_copy(const struct brig_process *from, struct brig_process **out, brig_error_t *err)
{
    struct brig_process *p = calloc(1, sizeof *p);
    if (p == NULL)
        return brig_error_set(err, ENOMEM, "copy process");
    p->terminal = from->terminal;
    p->terminal_raw_newlines = from->terminal_raw_newlines;
    p->has_console_size = from->has_console_size;
    p->console_height = from->console_height;
    p->console_width = from->console_width;
    p->no_new_privileges = from->no_new_privileges;
    p->has_oom_score_adj = from->has_oom_score_adj;
    p->oom_score_adj = from->oom_score_adj;
    if (copy_user(&p->user, &from->user) < 0 || brig_strv_copy(&p->args, &from->args) < 0
        || brig_strv_copy(&p->env, &from->env) < 0 || !dup_str(&p->cwd, from->cwd)
        || copy_capabilities(&p->capabilities, from->capabilities) < 0
        || brig_rlimits_copy(&p->rlimits, &p->n_rlimits, from->rlimits, from->n_rlimits) < 0
        || !dup_str(&p->apparmor_profile, from->apparmor_profile)
        || !dup_str(&p->selinux_label, from->selinux_label)
        || copy_scheduler(&p->scheduler, from->scheduler) < 0
        || copy_io_priority(&p->io_priority, from->io_priority) < 0
        || !dup_str(&p->exec_cpu_affinity_initial, from->exec_cpu_affinity_initial)
        || !dup_str(&p->exec_cpu_affinity_final, from->exec_cpu_affinity_final)) {
        brig_process_free(p);
        return brig_error_set(err, ENOMEM, "copy process");
    }
    *out = p;
    return 0;
}

char **brig_env_overlay(const struct brig_strv *base, char *const *extra, size_t n_extra,
                        size_t *n_out)
{
    char **env = calloc(base->n + n_extra + 1, sizeof *env);
    size_t n = 0;
    if (env == NULL)
        return NULL;
    for (size_t i = 0; i < base->n; i++)
        env[n++] = base->v[i];
    for (size_t i = 0; i < n_extra; i++) {
        size_t key = strcspn(extra[i], "=");
        size_t j = 0;
        while (j < n && !(strncmp(env[j], extra[i], key) == 0 && env[j][key] == '='))
            j++;
        env[j] = extra[i];
        if (j == n)
            n++;
    }
    env[n] = NULL;
    *n_out = n;
    return env;
}
