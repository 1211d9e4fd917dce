#define _GNU_SOURCE
/* `brig sandbox template`: import, ls, rm (sandbox/template.h does the
 * work). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "brig.h"
#include "cli.h"
#include "sandbox/template.h"
#include "sandbox_cmd.h"

static const char usage[] =
    "Usage: brig sandbox template COMMAND ...\n\n"
    "Templates: sandbox trees made from OCI image archives and docker-archives\n"
    "(what `podman save`, `docker save` and `skopeo copy ... oci-archive:` write).\n\n"
    "Commands:\n"
    "  import NAME IMAGE.tar   check its digests and unpack its layers once into\n"
    "                          the store, shared read-only by its sandboxes\n"
    "  ls                      the templates: digest, layers, size, created, users\n"
    "  rm NAME                 remove it (refused while a sandbox uses it)\n\n"
    "`brig sandbox create --template NAME ID` starts a sandbox from one; the\n"
    "image's Env, WorkingDir and User (never root) are its defaults. The store is\n"
    "$BRIG_TEMPLATE_DIR, else /var/lib/brig/templates. See brig-sandbox(8).\n";

/* ---- the commands, given their checked arguments ---- */

static int do_import(char **args)
{
    const char *name = args[0], *archive = args[1];
    brig_error_t err = NULL;
    struct brig_template_import_result res;
    if (brig_template_import(name, archive, &res, &err) < 0)
        return brig_error_wrap(&err, "template import `%s`", name), brig_fail(&err);
    if (!res.jemalloc)
        fprintf(stderr,
                "template %s: no libjemalloc.so.2 in the image; its sandboxes run without "
                "jemalloc\n",
                name);
    struct brig_template t;
    if (brig_template_read(name, &t, &err) < 0)
        return brig_fail(&err);
    char size[16];
    sandbox_print_size((uint64_t) t.size, size, sizeof size);
    printf("template %s: sha256:%.12s, %lld layer%s, %s%s\n", name, t.digest, (long long) t.layers,
           t.layers == 1 ? "" : "s", size, res.reused ? " (its tree was there: shared)" : "");
    brig_template_clear(&t);
    return 0;
}

static void print_template(const struct brig_template *t)
{
    char size[16], created[32] = "-";
    time_t when = (time_t) t->created;
    struct tm tm;
    sandbox_print_size((uint64_t) t->size, size, sizeof size);
    if (localtime_r(&when, &tm))
        strftime(created, sizeof created, "%Y-%m-%d %H:%M", &tm);
    printf("%-20s %-12.12s %-6lld %-7s %-16s %zu\n", t->name, t->digest, (long long) t->layers,
           size, created, t->users);
}

static int do_ls(char **args)
{
    struct brig_template *all;
    size_t n;
    brig_error_t err = NULL;
    if (brig_template_list(&all, &n, &err) < 0)
        return brig_error_wrap(&err, "template ls"), brig_fail(&err);
    printf("%-20s %-12s %-6s %-7s %-16s %s\n", "NAME", "DIGEST", "LAYERS", "SIZE", "CREATED",
           "USERS");
    for (size_t i = 0; i < n; i++)
        print_template(&all[i]);
    brig_template_list_free(all, n);
    return 0;
}

static int do_rm(char **args)
{
    brig_error_t err = NULL;
    if (brig_template_remove(args[0], &err) < 0)
        return brig_error_wrap(&err, "template rm"), brig_fail(&err);
    return 0;
}

/* ---- their command lines: only --help, and so many arguments ---- */

static const struct plain_command {
    const char *name, *usage, *what;
    int n_args;
    int (*fn)(char **args);
} plain_commands[] = {
    { "import",
      "Usage: brig sandbox template import NAME IMAGE.tar\n\n"
      "Import an OCI image archive or a docker-archive as the template NAME:\n"
      "every blob is checked against its digest, the layers are unpacked once\n"
      "(whiteouts, hard links, owners and modes kept; an entry that would leave\n"
      "the image is refused) and shared by every image of the same config.\n",
      "template name and image archive", 2, do_import },
    { "ls",
      "Usage: brig sandbox template ls\n\n"
      "List the templates: NAME, DIGEST (of the image's config, short), LAYERS,\n"
      "SIZE (of its files), CREATED (its import) and USERS (sandboxes made from it).\n",
      "", 0, do_ls },
    { "rm",
      "Usage: brig sandbox template rm NAME\n\n"
      "Remove the template NAME, and its tree when no other name shares it.\n"
      "Refused while a sandbox made from it exists: `brig sandbox rm` it first.\n",
      "template name", 1, do_rm },
};

static int run_plain(const char *name, int argc, char **argv)
{
    for (size_t i = 0; i < sizeof plain_commands / sizeof *plain_commands; i++) {
        const struct plain_command *c = &plain_commands[i];
        if (strcmp(c->name, name) != 0)
            continue;
        int done = brig_parse_plain(argc, argv, c->usage, c->n_args, c->what);
        return done != BRIG_CLI_GO_ON ? done : c->fn(argv + optind);
    }
    return 1;
}

static int cmd_import(int argc, char **argv)
{
    return run_plain("import", argc, argv);
}

static int cmd_ls(int argc, char **argv)
{
    return run_plain("ls", argc, argv);
}

static int cmd_rm(int argc, char **argv)
{
    return run_plain("rm", argc, argv);
}

int sandbox_cmd_template(int argc, char **argv)
{
    static const struct sandbox_subcommand commands[] = {
        { "import", cmd_import },
        { "ls", cmd_ls },
        { "rm", cmd_rm },
    };
    return sandbox_dispatch(argc, argv, "sandbox template", usage, commands,
                            sizeof commands / sizeof *commands);
}
