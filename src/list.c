#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brig.h"
#include "cli.h"
#include "container/container.h"

static const char usage[] = "Usage: brig list [options]\n\n"
                            "List the containers under --root.\n\n"
                            "Options:\n"
                            "  -f, --format FORMAT  table (default) or json\n"
                            "  -q, --quiet          print the ids only\n"
                            "  -h, --help           print this help\n";

static void print_json(const struct brig_container_entry *e, size_t n)
{
    fputc('[', stdout);
    for (size_t i = 0; i < n; i++) {
        char *json = NULL;
        brig_error_t err = NULL;
        if (brig_state_to_json(e[i].state, e[i].status, false, &json, &err) < 0) {
            brig_error_release(&err);
            continue;
        }
        printf("%s%s", i ? "," : "", json);
        free(json);
    }
    fputs("]\n", stdout);
}

static void print_table(const struct brig_container_entry *e, size_t n)
{
    int w_id = 2, w_pid = 3, w_status = 6, w_bundle = 6, w_created = 7;
    for (size_t i = 0; i < n; i++) {
        char pid[16];
        const struct brig_state *s = e[i].state;
        int pid_len = snprintf(pid, sizeof pid, "%d",
                               e[i].status == BRIG_STATUS_STOPPED ? 0 : s->pid);
        w_id = (int) strlen(s->id) > w_id ? (int) strlen(s->id) : w_id;
        w_pid = pid_len > w_pid ? pid_len : w_pid;
        w_status = (int) strlen(brig_status_name(e[i].status)) > w_status
                       ? (int) strlen(brig_status_name(e[i].status))
                       : w_status;
        w_bundle = (int) strlen(s->bundle) > w_bundle ? (int) strlen(s->bundle) : w_bundle;
        w_created = (int) strlen(s->created) > w_created ? (int) strlen(s->created) : w_created;
    }
    printf("%-*s   %-*s   %-*s   %-*s   %-*s   %s\n", w_id, "ID", w_pid, "PID", w_status, "STATUS",
           w_bundle, "BUNDLE", w_created, "CREATED", "OWNER");
    for (size_t i = 0; i < n; i++) {
        const struct brig_state *s = e[i].state;
        printf("%-*s   %-*d   %-*s   %-*s   %-*s   %s\n", w_id, s->id, w_pid,
               e[i].status == BRIG_STATUS_STOPPED ? 0 : s->pid, w_status,
               brig_status_name(e[i].status), w_bundle, s->bundle, w_created, s->created, s->owner);
    }
}

int brig_cmd_list(int argc, char **argv)
{
    static const struct option opts[] = {
        { "format", required_argument, NULL, 'f' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    bool quiet = false, json = false;
    int c;
    while ((c = getopt_long(argc, argv, "+f:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (strcmp(optarg, "json") == 0)
                json = true;
            else if (strcmp(optarg, "table") != 0)
                return brig_fail_msg("list: unknown format `%s` (table or json)", optarg);
            break;
        case 'q':
            quiet = true;
            break;
        case 'h':
            return brig_usage(usage);
        default:
            return brig_bad_option(argv);
        }
    }
    int done = brig_parse_args(argc, argv, 0, 0, "nothing");
    if (done != BRIG_CLI_GO_ON)
        return done;
    struct brig_container_entry *entries = NULL;
    size_t n = 0;
    brig_error_t err = NULL;
    if (brig_container_list(brig_globals.root, &entries, &n, &err) < 0)
        return brig_fail(&err);
    if (quiet)
        for (size_t i = 0; i < n; i++)
            printf("%s\n", entries[i].state->id);
    else if (json)
        print_json(entries, n);
    else
        print_table(entries, n);
    brig_container_list_free(entries, n);
    return 0;
}
