#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "brig.h"
#include "base/cleanup.h"
#include "cli.h"
#include "container/container.h"
#include "spec/spec.h"
#include "base/utils.h"

static const char usage[] =
    "Usage: brig update [options] ID\n\n"
    "Change the cgroup limits of a running container. Sizes take k, m, g, t\n"
    "suffixes (powers of 1024); -1 means unlimited.\n\n"
    "Options:\n"
    "  -r, --resources FILE     linux.resources JSON from FILE (- for stdin)\n"
    "      --memory SIZE        memory.max\n"
    "      --memory-reservation SIZE  memory.low\n"
    "      --memory-swap SIZE   memory + swap, as in the runtime spec\n"
    "      --pids-limit N       pids.max\n"
    "      --cpu-share N        relative weight (cpu.weight after conversion)\n"
    "      --cpu-quota N        microseconds per period (cpu.max)\n"
    "      --cpu-period N       period in microseconds (cpu.max)\n"
    "      --cpuset-cpus LIST   cpuset.cpus\n"
    "      --cpuset-mems LIST   cpuset.mems\n"
    "      --blkio-weight N     io.weight after conversion (10-1000)\n"
    "  -h, --help               print this help\n";

enum {
    OPT_MEMORY = 400,
    OPT_MEMORY_RESERVATION,
    OPT_MEMORY_SWAP,
    OPT_PIDS_LIMIT,
    OPT_CPU_SHARE,
    OPT_CPU_QUOTA,
    OPT_CPU_PERIOD,
    OPT_CPUSET_CPUS,
    OPT_CPUSET_MEMS,
    OPT_BLKIO_WEIGHT,
    OPT_KERNEL_MEMORY,
    OPT_CPU_RT_PERIOD,
    OPT_CPU_RT_RUNTIME,
    OPT_L3,
    OPT_MEMBW,
};

/* The parsers here follow cli.h: BRIG_CLI_GO_ON, or the exit status. */

/* "512m", "1G", "100", "-1" → bytes. */
static int parse_size(const char *flag, const char *text, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text)
        goto bad;
    if (v == -1 && *end == '\0') {
        *out = -1;
        return BRIG_CLI_GO_ON;
    }
    static const char units[] = "kmgt";
    int shift = 0;
    if (*end) {
        const char *u = strchr(units, tolower((unsigned char) *end));
        if (u == NULL)
            goto bad;
        shift = 10 * (int) (u - units + 1);
        end++;
        if (tolower((unsigned char) *end) == 'b')
            end++;
    }
    if (*end || v < 0 || (shift && v > (INT64_MAX >> shift)))
        goto bad;
    *out = (int64_t) v << shift;
    return BRIG_CLI_GO_ON;
bad:
    return brig_fail_msg("update: invalid size `%s` for %s", text, flag);
}

static int parse_int(const char *flag, const char *text, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end)
        return brig_fail_msg("update: invalid number `%s` for %s", text, flag);
    *out = v;
    return BRIG_CLI_GO_ON;
}

static int load_resources_file(const char *path, struct brig_resources **out)
{
    brig_error_t err = NULL;
    cleanup_free char *json = NULL;
    size_t len = 0;
    if (brig_read_file(strcmp(path, "-") == 0 ? "/dev/stdin" : path, &json, &len, &err) < 0
        || brig_resources_parse(json, len, path, out, &err) < 0)
        return brig_fail(&err);
    return BRIG_CLI_GO_ON;
}

/* Lazily allocated sections of the resources the flags fill in. */
static struct brig_memory *memory_of(struct brig_resources *r)
{
    if (r->memory == NULL)
        r->memory = calloc(1, sizeof *r->memory);
    return r->memory;
}

static struct brig_cpu *cpu_of(struct brig_resources *r)
{
    if (r->cpu == NULL)
        r->cpu = calloc(1, sizeof *r->cpu);
    return r->cpu;
}

static int out_of_memory(void)
{
    return brig_fail_msg("update: out of memory");
}

/* One limit flag into r. */
/* --memory, --memory-swap, --memory-reservation. */
static int apply_memory_flag(int c, struct brig_resources *r)
{
    int64_t v = 0;
    int done;
    const char *flag = c == OPT_MEMORY        ? "--memory"
                       : c == OPT_MEMORY_SWAP ? "--memory-swap"
                                              : "--memory-reservation";
    struct brig_memory *m = memory_of(r);
    if (m == NULL)
        return out_of_memory();
    if ((done = parse_size(flag, optarg, &v)) != BRIG_CLI_GO_ON)
        return done;
    if (c == OPT_MEMORY)
        m->has_limit = true, m->limit = v;
    else if (c == OPT_MEMORY_SWAP)
        m->has_swap = true, m->swap = v;
    else
        m->has_reservation = true, m->reservation = v;
    return BRIG_CLI_GO_ON;
}

/* --cpu-share, --cpu-quota, --cpu-period, --cpu-rt-runtime, --cpu-rt-period
 * (the realtime pair only v1 hierarchies have: v2 refuses them by name). */
static int apply_cpu_flag(int c, struct brig_resources *r)
{
    int64_t v = 0;
    int done;
    const char *flag = c == OPT_CPU_SHARE        ? "--cpu-share"
                       : c == OPT_CPU_QUOTA      ? "--cpu-quota"
                       : c == OPT_CPU_RT_RUNTIME ? "--cpu-rt-runtime"
                       : c == OPT_CPU_RT_PERIOD  ? "--cpu-rt-period"
                                                 : "--cpu-period";
    struct brig_cpu *cpu = cpu_of(r);
    if (cpu == NULL)
        return out_of_memory();
    if ((done = parse_int(flag, optarg, &v)) != BRIG_CLI_GO_ON)
        return done;
    if (c == OPT_CPU_QUOTA)
        cpu->has_quota = true, cpu->quota = v;
    else if (c == OPT_CPU_RT_RUNTIME)
        cpu->has_realtime_runtime = true, cpu->realtime_runtime = v;
    else if (v < 0)
        return brig_fail_msg("update: `%s` must not be negative", optarg);
    else if (c == OPT_CPU_SHARE)
        cpu->has_shares = true, cpu->shares = (uint64_t) v;
    else if (c == OPT_CPU_RT_PERIOD)
        cpu->has_realtime_period = true, cpu->realtime_period = (uint64_t) v;
    else
        cpu->has_period = true, cpu->period = (uint64_t) v;
    return BRIG_CLI_GO_ON;
}

static int apply_flag(int c, char **argv, struct brig_resources *r)
{
    int64_t v = 0;
    int done;
    switch (c) {
    case OPT_MEMORY:
    case OPT_MEMORY_RESERVATION:
    case OPT_MEMORY_SWAP:
        return apply_memory_flag(c, r);
    case OPT_PIDS_LIMIT:
        if ((done = parse_int("--pids-limit", optarg, &v)) != BRIG_CLI_GO_ON)
            return done;
        r->has_pids_limit = true;
        r->pids_limit = v;
        return BRIG_CLI_GO_ON;
    case OPT_CPU_SHARE:
    case OPT_CPU_QUOTA:
    case OPT_CPU_PERIOD:
    case OPT_CPU_RT_PERIOD:
    case OPT_CPU_RT_RUNTIME:
        return apply_cpu_flag(c, r);
    case OPT_CPUSET_CPUS:
    case OPT_CPUSET_MEMS: {
        struct brig_cpu *cpu = cpu_of(r);
        char **slot = cpu ? (c == OPT_CPUSET_CPUS ? &cpu->cpus : &cpu->mems) : NULL;
        if (slot == NULL)
            return out_of_memory();
        free(*slot);
        *slot = strdup(optarg);
        return *slot ? BRIG_CLI_GO_ON : out_of_memory();
    }
    case OPT_BLKIO_WEIGHT:
        if ((done = parse_int("--blkio-weight", optarg, &v)) != BRIG_CLI_GO_ON)
            return done;
        if (v < 10 || v > 1000)
            return brig_fail_msg("update: --blkio-weight must be within 10-1000, not %s", optarg);
        if (r->block_io == NULL && (r->block_io = calloc(1, sizeof *r->block_io)) == NULL)
            return out_of_memory();
        r->block_io->has_weight = true;
        r->block_io->weight = (uint16_t) v;
        return BRIG_CLI_GO_ON;
    case OPT_KERNEL_MEMORY:
        return BRIG_CLI_GO_ON; /* accepted and ignored, as runc does */
    case OPT_L3:
    case OPT_MEMBW:
        return brig_fail_msg("update: Intel RDT is not supported");
    default:
        return brig_bad_option(argv);
    }
}

/* The flags and the id: the resources to apply in *r (replaced by the
 * --resources file's when one is given). */
static int parse_update(int argc, char **argv, struct brig_resources **r)
{
    static const struct option opts[] = {
        { "resources", required_argument, NULL, 'r' },
        { "memory", required_argument, NULL, OPT_MEMORY },
        { "memory-reservation", required_argument, NULL, OPT_MEMORY_RESERVATION },
        { "memory-swap", required_argument, NULL, OPT_MEMORY_SWAP },
        { "pids-limit", required_argument, NULL, OPT_PIDS_LIMIT },
        { "cpu-share", required_argument, NULL, OPT_CPU_SHARE },
        { "cpu-quota", required_argument, NULL, OPT_CPU_QUOTA },
        { "cpu-period", required_argument, NULL, OPT_CPU_PERIOD },
        { "cpuset-cpus", required_argument, NULL, OPT_CPUSET_CPUS },
        { "cpuset-mems", required_argument, NULL, OPT_CPUSET_MEMS },
        { "blkio-weight", required_argument, NULL, OPT_BLKIO_WEIGHT },
        { "kernel-memory", required_argument, NULL, OPT_KERNEL_MEMORY },
        { "kernel-memory-tcp", required_argument, NULL, OPT_KERNEL_MEMORY },
        { "cpu-rt-period", required_argument, NULL, OPT_CPU_RT_PERIOD },
        { "cpu-rt-runtime", required_argument, NULL, OPT_CPU_RT_RUNTIME },
        { "l3-cache-schema", required_argument, NULL, OPT_L3 },
        { "mem-bw-schema", required_argument, NULL, OPT_MEMBW },
        { "help", no_argument, NULL, 'h' },
        { 0 },
    };
    const char *file = NULL;
    bool any = false;
    int c, done;
    while ((c = getopt_long(argc, argv, "+r:h", opts, NULL)) != -1) {
        if (c == 'h')
            return brig_usage(usage);
        if (c == 'r') {
            file = optarg;
            continue;
        }
        if ((done = apply_flag(c, argv, *r)) != BRIG_CLI_GO_ON)
            return done;
        any = true;
    }
    if ((done = brig_parse_args(argc, argv, 1, 1, "container id")) != BRIG_CLI_GO_ON)
        return done;
    if (file && any)
        return brig_fail_msg("update: give either --resources or limit options, not both");
    if (file) {
        brig_resources_free(*r);
        *r = NULL;
        return load_resources_file(file, r);
    }
    if (!any)
        return brig_fail_msg("update: nothing to change (see `brig update --help`)");
    return BRIG_CLI_GO_ON;
}

int brig_cmd_update(int argc, char **argv)
{
    struct brig_resources *r = calloc(1, sizeof *r);
    if (r == NULL)
        return out_of_memory();
    int rc = parse_update(argc, argv, &r);
    brig_error_t err = NULL;
    if (rc == BRIG_CLI_GO_ON)
        rc = brig_container_update(brig_globals.root, argv[optind], r, &err) < 0 ? brig_fail(&err)
                                                                                 : 0;
    brig_resources_free(r);
    return rc;
}
