/* sandbox/idpool.c and idrange.c: the pool read from /etc/subuid and
 * /etc/subgid texts, slots clear of accounts and other users' ranges, and
 * the records of who holds which range in a records dir of a temporary
 * dir ($BRIG_IDRANGE_DIR). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/utils.h"
#include "sandbox/idrange.h"
#include "unit.h"

/* The message of a failure, or "ok"; the error is released. */
static const char *outcome(int r, brig_error_t *err)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s", r < 0 ? (*err ? (*err)->msg : "(no message)") : "ok");
    brig_error_release(err);
    return buf;
}

static void test_pool(void)
{
    struct brig_idpool p;
    brig_error_t err = NULL;
    CHECK(brig_idpool_parse(NULL, NULL, &p, &err) == 0 && !p.from_subid
              && p.uid_start == BRIG_IDRANGE_DEFAULT_START
              && p.gid_count == BRIG_IDRANGE_DEFAULT_COUNT,
          "pool: no files, the default");
    CHECK(brig_idpool_slots(&p) == 4094, "pool: the default holds 4094 ranges");
    CHECK(p.uid_start + (uint64_t) p.uid_count <= 0x7ffe0000u,
          "pool: the default ends below systemd's foreign range");
    CHECK(brig_idpool_parse("root:100000:65536\n", "", &p, &err) == 0 && !p.from_subid,
          "pool: other users' lines only, the default");
    const char *sub = "# ranges\nalice:100000:65536\nbrig:1000000:262144\n";
    const char *subg = "brig:2000000:196608\n";
    CHECK(brig_idpool_parse(sub, subg, &p, &err) == 0 && p.from_subid && p.uid_start == 1000000
              && p.gid_start == 2000000,
          "pool: the brig lines");
    CHECK(brig_idpool_slots(&p) == 3, "pool: the smaller of the two counts");
    struct brig_idrange r = brig_idpool_range(&p, 2);
    CHECK(r.uid == 1000000 + 2 * 65536 && r.gid == 2000000 + 2 * 65536, "pool: slot 2");
    CHECK(brig_idpool_slot_of(&p, &r) == 2, "pool: a range's slot");
    r.gid++;
    CHECK(brig_idpool_slot_of(&p, &r) == -1, "pool: a range not of the pool");

    CHECK_STR(outcome(brig_idpool_parse(sub, "", &p, &err), &err),
              "/etc/subuid has a `brig` line and /etc/subgid has none: give both",
              "pool: one file without the line");
    const char *msg = outcome(brig_idpool_parse("brig:100000:1000\n", subg, &p, &err), &err);
    CHECK(strstr(msg, "/etc/subuid: line 1") && strstr(msg, "at least 65536"),
          "pool: too small a range, by file and line");
    msg = outcome(brig_idpool_parse("# ranges\n\nbrig:100000:1000\n", subg, &p, &err), &err);
    CHECK(strstr(msg, "/etc/subuid: line 3"), "pool: the line counted with blank lines");
    msg = outcome(brig_idpool_parse("brig:0:65536\n", subg, &p, &err), &err);
    CHECK(strstr(msg, "start at 65536"), "pool: a range at 0 (it would map root)");
    msg = outcome(brig_idpool_parse("brig:4294901760:131072\n", subg, &p, &err), &err);
    CHECK(strstr(msg, "below 2^32"), "pool: a range past 2^32");
    CHECK(brig_idpool_parse("brig:x:65536\nbrig:65536:65536\n", "brig:65536:65536", &p, &err) == 0
              && p.uid_start == 65536,
          "pool: a malformed line is passed over");
}

static void test_spans(void)
{
    struct brig_idpool p;
    brig_error_t err = NULL;
    brig_idpool_parse("brig:1000000:262144\n", "brig:1000000:262144\n", &p, &err);
    struct brig_id_span *uids = NULL, *gids = NULL;
    size_t nu = 0, ng = 0;
    CHECK(brig_id_spans_add_subid("brig:1000000:262144\npodman:1065536:10\n", "brig", &uids, &nu)
                  == 0
              && nu == 1 && uids[0].start == 1065536,
          "spans: other users' ranges, not brig's own");
    CHECK(brig_id_spans_add_accounts("root:x:0:0::/root:/bin/sh\nodd:x:1196608:1::/:/bin/sh\n"
                                     "broken line\n",
                                     &uids, &nu)
                  == 0
              && nu == 3,
          "spans: accounts' ids");
    CHECK(brig_idpool_slot_clear(&p, 0, uids, nu, gids, ng), "spans: slot 0 is clear");
    CHECK(!brig_idpool_slot_clear(&p, 1, uids, nu, gids, ng), "spans: slot 1 meets podman's range");
    CHECK(!brig_idpool_slot_clear(&p, 3, uids, nu, gids, ng), "spans: slot 3 holds an account");
    CHECK(brig_idpool_slot_clear(&p, 2, uids, nu, gids, ng), "spans: slot 2 is clear");
    CHECK(brig_id_spans_add_accounts("grp:x:1131072:\n", &gids, &ng) == 0
              && !brig_idpool_slot_clear(&p, 2, uids, nu, gids, ng),
          "spans: a group's id takes the slot's gids");
    free(uids);
    free(gids);
}

/* The one-pass search against the slot-by-slot answer. */
static long first_clear_slowly(const struct brig_idpool *p, const struct brig_id_span *u, size_t nu,
                               const struct brig_id_span *g, size_t ng)
{
    for (size_t i = 0; i < brig_idpool_slots(p); i++)
        if (brig_idpool_slot_clear(p, i, u, nu, g, ng))
            return (long) i;
    return -1;
}

static void test_first_clear(void)
{
    struct brig_idpool p;
    brig_error_t err = NULL;
    brig_idpool_parse("brig:1000000:262144\n", "brig:2000000:262144\n", &p, &err);
    struct brig_id_span none[1] = { { 0, 0 } };
    CHECK(brig_idpool_first_clear(&p, none, 0, none, 0) == 0, "first clear: an empty pool's 0");
    /* Slot 0's uids (an id before the pool's start spilling in), slot 1's
     * gids (one id at its very end), slot 2 by a span of both sides. */
    struct brig_id_span u[] = { { 999000, 1001 }, { 1000000 + 2 * 65536 + 5, 1 } };
    struct brig_id_span g[] = { { 2000000 + 2 * 65536 - 1, 1 } };
    CHECK(brig_idpool_first_clear(&p, u, 2, g, 1) == 3 && first_clear_slowly(&p, u, 2, g, 1) == 3,
          "first clear: slots met by uids, by gids, at edges");
    struct brig_id_span before[] = { { 0, 1000000 } }, after[] = { { 2262144, 4096 } };
    CHECK(brig_idpool_first_clear(&p, before, 1, after, 1) == 0,
          "first clear: spans that end at the start or begin past the end meet nothing");
    struct brig_id_span all[] = { { 1000000 + 65535, 3 * 65536 + 1 } };
    CHECK(brig_idpool_first_clear(&p, all, 1, none, 0) == -1
              && first_clear_slowly(&p, all, 1, none, 0) == -1,
          "first clear: -1 when every slot is met");
    /* A thousand sandboxes' records, in any order, and a hole. */
    brig_idpool_parse(NULL, NULL, &p, &err);
    struct brig_id_span many[1000];
    size_t n = 0;
    for (size_t i = 0; i < 1001; i++)
        if (i != 617)
            many[n++] = (struct brig_id_span){ p.uid_start + (uint32_t) ((i * 4) % 1001) * 65536,
                                               65536 };
    long want = first_clear_slowly(&p, many, n, none, 0);
    CHECK(want == 466 && brig_idpool_first_clear(&p, many, n, none, 0) == want,
          "first clear: the same slot as the slow search among a thousand");
}

static char owner_a[128], owner_b[128];

static void test_records(void)
{
    brig_error_t err = NULL;
    struct brig_idrange a, b, again;
    CHECK_STR(outcome(brig_idrange_acquire(owner_a, &a, &err), &err), "ok", "records: acquire a");
    CHECK_STR(outcome(brig_idrange_acquire(owner_b, &b, &err), &err), "ok", "records: acquire b");
    CHECK(a.uid != b.uid && a.gid != b.gid, "records: two owners, two ranges");
    CHECK(a.uid >= 65536 && a.uid % 65536 == b.uid % 65536, "records: ranges are slots");
    CHECK(brig_idrange_acquire(owner_a, &again, &err) == 0 && again.uid == a.uid,
          "records: an owner keeps its range");
    CHECK(brig_idrange_read(owner_a, &again, &err) == 1 && again.gid == a.gid,
          "records: read the owner's file");
    char third[160];
    snprintf(third, sizeof third, "%s.third", owner_a);
    mkdir(third, 0700);
    const char *msg = outcome(brig_idrange_claim(third, &a, &err), &err);
    CHECK(strstr(msg, "is held by") && strstr(msg, owner_a), "records: a held range, by its owner");
    rmdir(third);

    char rec[256];
    snprintf(rec, sizeof rec, "%s/%u", getenv(BRIG_IDRANGE_DIR_ENV), (unsigned) a.uid);
    CHECK(access(rec, F_OK) == 0, "records: one file per range, named by its uid");
    CHECK_STR(outcome(brig_idrange_release(owner_a, &err), &err), "ok", "records: release a");
    CHECK(access(rec, F_OK) < 0 && brig_idrange_read(owner_a, &again, &err) == 0,
          "records: released, record and owner's file gone");
    CHECK_STR(outcome(brig_idrange_release(owner_a, &err), &err), "ok",
              "records: releasing nothing is fine");

    /* An owner gone without releasing (a runtime killed half-way): its
     * range may be claimed again, and is the first one handed out. */
    char gone[160];
    snprintf(gone, sizeof gone, "%s.gone", owner_a);
    mkdir(gone, 0700);
    struct brig_idrange g;
    CHECK(brig_idrange_acquire(gone, &g, &err) == 0 && g.uid == a.uid,
          "records: the lowest free range again");
    char file[200];
    snprintf(file, sizeof file, "%s/%s", gone, BRIG_IDRANGE_FILE);
    unlink(file);
    rmdir(gone);
    CHECK_STR(outcome(brig_idrange_claim(owner_a, &g, &err), &err), "ok",
              "records: a range whose owner is gone is claimed");
    brig_idrange_release(owner_a, &err);
    brig_idrange_release(owner_b, &err);
    brig_error_release(&err);
}

/* Eight creates at once, each its own process: eight ranges. */
static void test_concurrent(const char *tmp)
{
    enum { N = 8 };
    char dirs[N][128];
    for (int i = 0; i < N; i++) {
        snprintf(dirs[i], sizeof dirs[i], "%s/c%d", tmp, i);
        mkdir(dirs[i], 0700);
    }
    for (int i = 0; i < N; i++) {
        if (fork() == 0) {
            brig_error_t err = NULL;
            struct brig_idrange r;
            _exit(brig_idrange_acquire(dirs[i], &r, &err) == 0 ? 0 : 1);
        }
    }
    int failed = 0;
    for (int i = 0; i < N; i++) {
        int status;
        wait(&status);
        failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    CHECK(failed == 0, "concurrent: every create got a range");
    uint32_t seen[N];
    int distinct = 1;
    for (int i = 0; i < N; i++) {
        brig_error_t err = NULL;
        struct brig_idrange r = { 0, 0 };
        brig_idrange_read(dirs[i], &r, &err);
        brig_error_release(&err);
        seen[i] = r.uid;
        for (int j = 0; j < i; j++)
            distinct = distinct && seen[j] != r.uid && r.uid != 0;
    }
    CHECK(distinct, "concurrent: no two share a range");
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void make_owner(const char *tmp, const char *name, char *out, size_t size)
{
    snprintf(out, size, "%s/%s", tmp, name);
    mkdir(out, 0700);
}

/* A pool of two: full at two owners; an owner gone without releasing is
 * reclaimed then, and only then; a claim outside the pool is refused. */
static void test_reclaim(const char *tmp)
{
    char sub[128];
    snprintf(sub, sizeof sub, "%s/subids", tmp);
    write_text(sub, "brig:3000000000:131072\n");
    setenv("BRIG_SUBUID", sub, 1);
    setenv("BRIG_SUBGID", sub, 1);
    char x[128], y[128], z[128];
    make_owner(tmp, "x", x, sizeof x);
    make_owner(tmp, "y", y, sizeof y);
    make_owner(tmp, "z", z, sizeof z);
    brig_error_t err = NULL;
    struct brig_idrange rx, ry, rz;
    CHECK(brig_idrange_acquire(x, &rx, &err) == 0 && rx.uid == 3000000000u,
          "reclaim: the pool's first slot");
    CHECK(brig_idrange_acquire(y, &ry, &err) == 0 && ry.uid == 3000065536u,
          "reclaim: the pool's second slot");
    const char *msg = outcome(brig_idrange_acquire(z, &rz, &err), &err);
    CHECK(strstr(msg, "every range of the pool (2 ranges of 65536 ids") != NULL,
          "reclaim: a full pool is an error that says so");
    /* y dies without releasing: its dir goes, its record stays. */
    char file[160];
    snprintf(file, sizeof file, "%s/%s", y, BRIG_IDRANGE_FILE);
    unlink(file);
    rmdir(y);
    CHECK(brig_idrange_acquire(z, &rz, &err) == 0 && rz.uid == ry.uid,
          "reclaim: a gone owner's range is handed out again");
    struct brig_idrange outside = { 3000131072u, 3000131072u };
    msg = outcome(brig_idrange_claim(x, &outside, &err), &err);
    CHECK(strstr(msg, "holds the range of uid 3000000000") != NULL,
          "claim: an owner can't take a second range");
    make_owner(tmp, "w", file, sizeof file);
    msg = outcome(brig_idrange_claim(file, &outside, &err), &err);
    CHECK(strstr(msg, "is not one this host's pool gives") != NULL,
          "claim: a range outside the pool is refused");
    char canon[PATH_MAX];
    CHECK(realpath(x, canon) && brig_idrange_forget(canon, &rx, &err) == 0,
          "forget: the record of an owner");
    CHECK(brig_idrange_acquire(file, &rz, &err) == 0 && rz.uid == rx.uid,
          "forget: its range is free again");
    brig_error_release(&err);
}

int main(void)
{
    test_pool();
    test_spans();
    test_first_clear();
    char tmp[] = "/tmp/brig-idrange.XXXXXX";
    if (mkdtemp(tmp) == NULL)
        return 1;
    char records[96];
    snprintf(records, sizeof records, "%s/records", tmp);
    setenv(BRIG_IDRANGE_DIR_ENV, records, 1);
    /* The host's /etc/subuid and /etc/subgid stay out of it: the default
     * pool. */
    char none[96];
    snprintf(none, sizeof none, "%s/none", tmp);
    write_text(none, "");
    setenv("BRIG_SUBUID", none, 1);
    setenv("BRIG_SUBGID", none, 1);
    snprintf(owner_a, sizeof owner_a, "%s/a", tmp);
    snprintf(owner_b, sizeof owner_b, "%s/b", tmp);
    mkdir(owner_a, 0700);
    mkdir(owner_b, 0700);
    test_records();
    test_concurrent(tmp);
    test_reclaim(tmp);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd) != 0)
        return 1;
    return unit_done();
}
