#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "conf.h"

/* Whoever writes a service line expects a shell where these appear. */
#define SHELL_CHARS "|&;<>()$`\\*?[]{}~!#\n"

struct parser {
    const char *name;
    unsigned line;
    char *err;
    size_t errlen;
};

__attribute__((format(printf, 2, 3))) static int fail(struct parser *p, const char *fmt, ...)
{
    int n = snprintf(p->err, p->errlen, "%s:%u: ", p->name, p->line);
    if (n < 0 || (size_t) n >= p->errlen)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err + n, p->errlen - n, fmt, ap);
    va_end(ap);
    return -1;
}

void init_strv_free(char **v)
{
    if (!v)
        return;
    for (char **s = v; *s; s++)
        free(*s);
    free(v);
}

static int strv_push(char ***v, size_t *n, char *s)
{
    char **nv = realloc(*v, (*n + 2) * sizeof *nv);
    if (!nv) {
        free(s);
        return -1;
    }
    nv[(*n)++] = s;
    nv[*n] = NULL;
    *v = nv;
    return 0;
}

char **init_command_argv(const char *command)
{
    char **argv = NULL;
    size_t n = 0;

    if (strpbrk(command, SHELL_CHARS)) {
        if (strv_push(&argv, &n, strdup("/bin/sh")) < 0 || strv_push(&argv, &n, strdup("-c")) < 0
            || strv_push(&argv, &n, strdup(command)) < 0 || !argv[0] || !argv[1] || !argv[2]) {
            init_strv_free(argv);
            return NULL;
        }
        return argv;
    }

    const char *s = command;
    for (;;) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s)
            break;
        cleanup_free char *word = malloc(strlen(s) + 1);
        if (!word)
            goto fail;
        size_t len = 0;
        while (*s && *s != ' ' && *s != '\t') {
            if (*s == '\'' || *s == '"') {
                char q = *s++;
                const char *end = strchr(s, q);
                if (!end) {
                    errno = EINVAL;
                    goto fail;
                }
                memcpy(word + len, s, end - s);
                len += end - s;
                s = end + 1;
            } else {
                word[len++] = *s++;
            }
        }
        word[len] = '\0';
        if (strv_push(&argv, &n, brig_steal_ptr(word)) < 0)
            goto fail;
    }
    if (n == 0) {
        errno = EINVAL;
        goto fail;
    }
    return argv;
fail:
    init_strv_free(argv);
    return NULL;
}

static const struct {
    const char *name;
    int number;
} signals[] = {
    { "HUP", SIGHUP },   { "INT", SIGINT },   { "QUIT", SIGQUIT }, { "KILL", SIGKILL },
    { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "TERM", SIGTERM }, { "ALRM", SIGALRM },
    { "CONT", SIGCONT }, { "STOP", SIGSTOP }, { "PWR", SIGPWR },   { "WINCH", SIGWINCH },
};

int init_signal_number(const char *name)
{
    if (strncasecmp(name, "SIG", 3) == 0)
        name += 3;
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        if (strcasecmp(name, signals[i].name) == 0)
            return signals[i].number;
    char *end;
    errno = 0;
    long n = strtol(name, &end, 10);
    if (errno || end == name || *end || n < 1 || n >= NSIG)
        return -1;
    return (int) n;
}

/* A non-negative decimal that fits MAX. */
static int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
    if (!isdigit((unsigned char) *s))
        return -1;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(s, &end, 10);
    if (errno || n > max)
        return -1;
    *out = n;
    return (int) (end - s);
}

int init_parse_size(const char *s, uint64_t *out)
{
    unsigned long long n;
    int len = parse_uint(s, UINT64_MAX, &n);
    if (len < 0)
        return -1;
    const char *unit = s + len;
    unsigned shift = 0;
    switch (toupper((unsigned char) *unit)) {
    case '\0':
        break;
    case 'K':
        shift = 10;
        break;
    case 'M':
        shift = 20;
        break;
    case 'G':
        shift = 30;
        break;
    default:
        return -1;
    }
    if (*unit) {
        unit++;
        if (toupper((unsigned char) *unit) == 'B')
            unit++;
        if (*unit)
            return -1;
    }
    if (shift && n > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t) n << shift;
    return 0;
}

static int parse_bool(const char *v, int *out)
{
    if (strcasecmp(v, "true") == 0)
        *out = 1;
    else if (strcasecmp(v, "false") == 0)
        *out = 0;
    else
        return -1;
    return 0;
}

static int parse_exitcodes(struct parser *p, const char *v, uint8_t codes[256])
{
    memset(codes, 0, 256);
    cleanup_free char *copy = strdup(v);
    if (!copy)
        return fail(p, "out of memory");
    char *save = NULL;
    int any = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char) *tok))
            tok++;
        char *end = tok + strlen(tok);
        while (end > tok && isspace((unsigned char) end[-1]))
            *--end = '\0';
        unsigned long long n;
        if (parse_uint(tok, 255, &n) != (int) strlen(tok))
            return fail(p, "exitcodes: `%s` is not an exit code (0-255)", tok);
        codes[n] = 1;
        any = 1;
    }
    if (!any)
        return fail(p, "exitcodes: no exit code");
    return 0;
}

/* KEY=VAL,KEY2="VAL, with comma": commas inside double quotes don't split. */
static int parse_environment(struct parser *p, const char *v, char ***out)
{
    char **env = NULL;
    size_t n = 0;
    const char *s = v;
    while (*s) {
        while (*s == ' ' || *s == '\t' || *s == ',')
            s++;
        if (!*s)
            break;
        const char *eq = s;
        while (*eq && *eq != '=' && *eq != ',')
            eq++;
        if (*eq != '=' || eq == s) {
            init_strv_free(env);
            return fail(p, "environment: expected KEY=VALUE at `%s`", s);
        }
        size_t keylen = eq - s;
        while (keylen && isspace((unsigned char) s[keylen - 1]))
            keylen--;
        char *entry = malloc(strlen(s) + 2);
        if (!entry) {
            init_strv_free(env);
            return fail(p, "out of memory");
        }
        memcpy(entry, s, keylen);
        size_t len = keylen;
        entry[len++] = '=';
        const char *c = eq + 1;
        int quoted = 0;
        for (; *c && (quoted || *c != ','); c++) {
            if (*c == '"')
                quoted = !quoted;
            else
                entry[len++] = *c;
        }
        /* Blanks before the comma separate; quoted ones were kept above. */
        while (len > keylen + 1 && (entry[len - 1] == ' ' || entry[len - 1] == '\t')
               && c[-1] != '"')
            len--;
        if (quoted) {
            free(entry);
            init_strv_free(env);
            return fail(p, "environment: unclosed quote");
        }
        entry[len] = '\0';
        if (strv_push(&env, &n, entry) < 0) {
            init_strv_free(env);
            return fail(p, "out of memory");
        }
        s = c;
    }
    init_strv_free(*out);
    *out = env;
    return 0;
}

static void program_defaults(struct init_program *prog)
{
    memset(prog, 0, sizeof *prog);
    prog->autorestart = INIT_RESTART_UNEXPECTED;
    prog->startsecs = 1;
    prog->startretries = 3;
    prog->exitcodes[0] = 1;
    prog->stopsignal = SIGTERM;
    prog->out.maxbytes = prog->err.maxbytes = 50 << 20;
    prog->out.backups = prog->err.backups = 10;
}

static int set_string(struct parser *p, const char *key, const char *v, char **field)
{
    if (!*v)
        return fail(p, "%s: empty value", key);
    char *s = strdup(v);
    if (!s)
        return fail(p, "out of memory");
    free(*field);
    *field = s;
    return 0;
}

static int set_unsigned(struct parser *p, const char *key, const char *v, unsigned *field)
{
    unsigned long long n;
    if (parse_uint(v, UINT_MAX, &n) != (int) strlen(v))
        return fail(p, "%s: `%s` is not a non-negative integer", key, v);
    *field = (unsigned) n;
    return 0;
}

static int set_log_key(struct parser *p, const char *key, const char *v, struct init_program *prog)
{
    struct init_log_config *log = strncmp(key, "stdout_", 7) == 0 ? &prog->out : &prog->err;
    const char *what = key + 7;
    if (strcmp(what, "logfile") == 0) {
        if (v[0] != '/')
            return fail(p, "%s: `%s` is not an absolute path", key, v);
        return set_string(p, key, v, &log->path);
    }
    if (strcmp(what, "logfile_maxbytes") == 0) {
        if (init_parse_size(v, &log->maxbytes) < 0)
            return fail(p, "%s: `%s` is not a size (bytes, or with K, M, G)", key, v);
        return 0;
    }
    if (strcmp(what, "logfile_backups") == 0)
        return set_unsigned(p, key, v, &log->backups);
    return fail(p, "unknown key `%s` in [program:%s]", key, prog->name);
}

static int set_key(struct parser *p, struct init_program *prog, const char *key, const char *v)
{
    if (strcmp(key, "command") == 0) {
        if (set_string(p, key, v, &prog->command) < 0)
            return -1;
        char **argv = init_command_argv(v);
        if (!argv)
            return fail(p, "command: unclosed quote in `%s`", v);
        init_strv_free(argv);
        return 0;
    }
    if (strcmp(key, "user") == 0)
        return set_string(p, key, v, &prog->user);
    if (strcmp(key, "directory") == 0) {
        if (v[0] != '/')
            return fail(p, "directory: `%s` is not an absolute path", v);
        return set_string(p, key, v, &prog->directory);
    }
    if (strcmp(key, "environment") == 0)
        return parse_environment(p, v, &prog->environment);
    if (strcmp(key, "autorestart") == 0) {
        int b;
        if (strcasecmp(v, "unexpected") == 0)
            prog->autorestart = INIT_RESTART_UNEXPECTED;
        else if (parse_bool(v, &b) == 0)
            prog->autorestart = b ? INIT_RESTART_TRUE : INIT_RESTART_FALSE;
        else
            return fail(p, "autorestart: `%s` is not true, false or unexpected", v);
        return 0;
    }
    if (strcmp(key, "startsecs") == 0)
        return set_unsigned(p, key, v, &prog->startsecs);
    if (strcmp(key, "startretries") == 0)
        return set_unsigned(p, key, v, &prog->startretries);
    if (strcmp(key, "exitcodes") == 0)
        return parse_exitcodes(p, v, prog->exitcodes);
    if (strcmp(key, "stopsignal") == 0) {
        int sig = init_signal_number(v);
        if (sig < 0)
            return fail(p, "stopsignal: `%s` is not a signal", v);
        prog->stopsignal = sig;
        return 0;
    }
    if (strncmp(key, "stdout_", 7) == 0 || strncmp(key, "stderr_", 7) == 0)
        return set_log_key(p, key, v, prog);
    return fail(p, "unknown key `%s` in [program:%s]", key, prog->name);
}

static void program_free(struct init_program *prog)
{
    free(prog->name);
    free(prog->command);
    free(prog->user);
    free(prog->directory);
    init_strv_free(prog->environment);
    free(prog->out.path);
    free(prog->err.path);
}

void init_config_free(struct init_config *cfg)
{
    for (size_t i = 0; i < cfg->n_programs; i++)
        program_free(&cfg->programs[i]);
    free(cfg->programs);
    cfg->programs = NULL;
    cfg->n_programs = 0;
}

static char *trim(char *s)
{
    while (isspace((unsigned char) *s))
        s++;
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char) end[-1]))
        *--end = '\0';
    return s;
}

static int valid_name(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char) *s) && !strchr("_.-", *s))
            return 0;
    return 1;
}

static int open_section(struct parser *p, char *line, struct init_config *cfg,
                        unsigned *section_line)
{
    char *end = strchr(line, ']');
    if (!end || end[1] != '\0')
        return fail(p, "malformed section header `%s`", line);
    *end = '\0';
    char *name = trim(line + 1);
    if (strncmp(name, "program:", 8) != 0)
        return fail(p, "unknown section [%s] (only [program:NAME])", name);
    name += 8;
    if (!valid_name(name))
        return fail(p, "bad program name `%s` (letters, digits, '_', '.', '-')", name);
    for (size_t i = 0; i < cfg->n_programs; i++)
        if (strcmp(cfg->programs[i].name, name) == 0)
            return fail(p, "[program:%s] is defined twice", name);
    struct init_program *progs = realloc(cfg->programs, (cfg->n_programs + 1) * sizeof *progs);
    if (!progs)
        return fail(p, "out of memory");
    cfg->programs = progs;
    struct init_program *prog = &progs[cfg->n_programs];
    program_defaults(prog);
    prog->name = strdup(name);
    if (!prog->name)
        return fail(p, "out of memory");
    cfg->n_programs++;
    *section_line = p->line;
    return 0;
}

/* The checks that need a whole section. */
static int close_section(struct parser *p, struct init_config *cfg, unsigned section_line)
{
    if (cfg->n_programs == 0)
        return 0;
    struct init_program *prog = &cfg->programs[cfg->n_programs - 1];
    if (!prog->command) {
        p->line = section_line;
        return fail(p, "[program:%s] has no command", prog->name);
    }
    return 0;
}

int init_config_parse(const char *text, const char *name, struct init_config *cfg, char *err,
                      size_t errlen)
{
    struct parser p = { .name = name, .line = 0, .err = err, .errlen = errlen };
    unsigned section_line = 0;
    memset(cfg, 0, sizeof *cfg);

    const char *s = text;
    while (*s) {
        const char *nl = strchrnul(s, '\n');
        cleanup_free char *raw = strndup(s, nl - s);
        s = *nl ? nl + 1 : nl;
        p.line++;
        if (!raw)
            goto fail_oom;
        char *line = trim(raw);
        if (!*line || *line == '#' || *line == ';')
            continue;
        if (*line == '[') {
            if (close_section(&p, cfg, section_line) < 0
                || open_section(&p, line, cfg, &section_line) < 0)
                goto fail;
            continue;
        }
        char *eq = strchr(line, '=');
        if (!eq) {
            fail(&p, "expected `key = value` or `[program:NAME]`, got `%s`", line);
            goto fail;
        }
        *eq = '\0';
        char *key = trim(line), *value = trim(eq + 1);
        if (!*key) {
            fail(&p, "missing key before `=`");
            goto fail;
        }
        if (cfg->n_programs == 0) {
            fail(&p, "`%s` outside a [program:NAME] section", key);
            goto fail;
        }
        if (set_key(&p, &cfg->programs[cfg->n_programs - 1], key, value) < 0)
            goto fail;
    }
    if (close_section(&p, cfg, section_line) < 0)
        goto fail;
    return 0;
fail_oom:
    fail(&p, "out of memory");
fail:
    init_config_free(cfg);
    return -1;
}

int init_config_load(const char *path, struct init_config *cfg, char *err, size_t errlen)
{
    cleanup_file FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    cleanup_free char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, n, mem);
    int read_err = ferror(f);
    if (fclose(mem) != 0 || read_err) {
        snprintf(err, errlen, "%s: read failed", path);
        return -1;
    }
    if (memchr(text, '\0', len)) {
        snprintf(err, errlen, "%s: not a text file", path);
        return -1;
    }
    return init_config_parse(text, path, cfg, err, errlen);
}
