/* Checkpoints: single-process and 4-rank saves (in-process comm), sections, range reads across
 * shards, tiling errors, disk full, corruption with fallback, retention, async snapshots, reshape
 * and consolidation. */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "zaya/bf16.h"
#include "zaya/ckpt.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/log.h"
#include "zaya/proc.h"

static char g_root[256];

#define NW 1000  /* model tensor "w" [10, 100] */
#define NB 37    /* model tensor "b" [37] */
#define NM 1003  /* sharded array "opt.m" */
#define NV 640   /* sharded array "opt.v", owned in two disjoint ranges per rank */

typedef struct state {
    float w[NW], b[NB], m[NM], v[NV];
    int32_t counts[8];
} state;

static void fill_state(state *s, uint64_t seed) {
    th_fill(s->w, NW, seed, 0, -1, 1);
    th_fill(s->b, NB, seed, 1, -1, 1);
    th_fill(s->m, NM, seed, 2, -1, 1);
    th_fill(s->v, NV, seed, 3, 0, 1);
    for (int i = 0; i < 8; i++) s->counts[i] = (int32_t)(seed * 100 + (uint64_t)i);
}

static int exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* Adds what rank r of `world` owns; `overlap` makes rank 1's opt.m range overlap rank 0's. */
static void add_state(zaya_ckpt_writer *w, const state *s, int r, int world, int overlap) {
    int64_t sw[2] = {10, 100}, sb[1] = {NB}, sm[1] = {NM}, sv[2] = {2, NV / 2}, sc[1] = {8};
    zaya_ckpt_writer_add_model(w, "w", 2, sw, s->w);
    zaya_ckpt_writer_add_model(w, "b", 1, sb, s->b);
    int64_t lo = (int64_t)NM * r / world, hi = (int64_t)NM * (r + 1) / world;
    if (overlap && r == 1) lo -= 3;
    zaya_ckpt_writer_add_shard(w, "opt.m", ZAYA_ST_F32, 1, sm, lo, hi - lo, s->m + lo);
    /* opt.v: 2*world units of NV/(2*world); rank r owns units r and 2*world-1-r */
    int64_t u = NV / (2 * world);
    int64_t a = u * r, bb = u * (2 * world - 1 - r);
    zaya_ckpt_writer_add_shard(w, "opt.v", ZAYA_ST_F32, 2, sv, a, u, s->v + a);
    zaya_ckpt_writer_add_shard(w, "opt.v", ZAYA_ST_F32, 2, sv, bb, r == 0 ? NV - bb : u, s->v + bb);
    if (r == 0) zaya_ckpt_writer_add_shard(w, "counts", ZAYA_ST_I32, 1, sc, 0, 8, s->counts);
    cJSON *sec = cJSON_CreateObject();
    cJSON_AddNumberToObject(sec, "lr", 0.001);
    cJSON_AddNumberToObject(sec, "rank_written", r);
    zaya_ckpt_writer_add_section(w, "schedule", sec);
    zaya_ckpt_writer_add_rank_section(w, "rng", sec);
    cJSON_Delete(sec);
}

static zaya_status save_single(const char *root, int64_t step, const state *s, const zaya_ckpt_options *opt) {
    zaya_ckpt_writer *w;
    ZAYA_TRY(zaya_ckpt_writer_init(&w, root, step, step * 1000, opt, NULL));
    add_state(w, s, 0, 1, 0);
    return zaya_ckpt_writer_commit(w, NULL);
}

static void check_state(const zaya_ckpt *c, const state *s, const char *what) {
    state r;
    memset(&r, 0, sizeof r);
    CHECK(zaya_ckpt_read_f32(c, "w", 0, NW, r.w) == ZAYA_OK && !memcmp(r.w, s->w, sizeof r.w), "%s: w", what);
    CHECK(zaya_ckpt_read_f32(c, "b", 0, NB, r.b) == ZAYA_OK && !memcmp(r.b, s->b, sizeof r.b), "%s: b", what);
    CHECK(zaya_ckpt_read_f32(c, "opt.m", 0, NM, r.m) == ZAYA_OK && !memcmp(r.m, s->m, sizeof r.m), "%s: opt.m", what);
    CHECK(zaya_ckpt_read_f32(c, "opt.v", 0, NV, r.v) == ZAYA_OK && !memcmp(r.v, s->v, sizeof r.v), "%s: opt.v", what);
    CHECK(zaya_ckpt_read_raw(c, "counts", 0, 8, r.counts) == ZAYA_OK && !memcmp(r.counts, s->counts, sizeof r.counts),
          "%s: counts", what);
    float part[50];
    CHECK(zaya_ckpt_read_f32(c, "opt.m", 480, 50, part) == ZAYA_OK && !memcmp(part, s->m + 480, sizeof part),
          "%s: range across shards", what);
    CHECK(zaya_ckpt_read_f32(c, "opt.m", NM - 2, 5, part) == ZAYA_ERANGE, "%s: range past the end refused", what);
}

static void test_single(void) {
    char root[300];
    snprintf(root, sizeof root, "%s/single", g_root);
    state s;
    fill_state(&s, 1);
    CHECK(save_single(root, 5, &s, NULL) == ZAYA_OK, "save: %s", zaya_error_message());
    char *txt;
    size_t len;
    char p[400];
    snprintf(p, sizeof p, "%s/latest", root);
    CHECK(zaya_read_file(p, &txt, &len) == ZAYA_OK && !strcmp(txt, "step-00000005\n"), "latest");
    free(txt);
    zaya_ckpt *c;
    CHECK(zaya_ckpt_open_latest(&c, root, 1) == ZAYA_OK, "open: %s", zaya_error_message());
    if (!c) return;
    CHECK(c->step == 5 && c->tokens == 5000 && c->world == 1, "header");
    check_state(c, &s, "single");
    const cJSON *sec = zaya_ckpt_section(c, "schedule");
    CHECK(sec && cJSON_GetObjectItem(sec, "lr")->valuedouble == 0.001, "global section");
    CHECK(zaya_ckpt_rank_section(c, 0, "rng") != NULL, "rank section");
    const zaya_ckpt_entry *e = zaya_ckpt_find(c, "opt.v");
    CHECK(e && e->ndim == 2 && e->shape[1] == NV / 2 && e->npieces == 2, "global shape and pieces of opt.v");
    zaya_ckpt_close(c);
    /* a step redone (resume from an older step, --no-resume) replaces the existing directory atomically */
    state s5;
    fill_state(&s5, 55);
    CHECK(save_single(root, 5, &s5, NULL) == ZAYA_OK, "resaving step 5 replaces it: %s", zaya_error_message());
    CHECK(zaya_ckpt_open_latest(&c, root, 1) == ZAYA_OK && c->step == 5, "replaced step 5 opens");
    if (c) check_state(c, &s5, "replaced step");
    zaya_ckpt_close(c);
    {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "ls -a %s | grep -q tmp", root);
        CHECK(system(cmd) != 0, "no temp or replaced directory left after the replace");
    }
    CHECK(save_single(root, 5, &s, NULL) == ZAYA_OK, "identical re-save");
    /* bf16 model storage */
    zaya_ckpt_options o = zaya_ckpt_default_options();
    o.model_dtype = ZAYA_ST_BF16;
    CHECK(save_single(root, 6, &s, &o) == ZAYA_OK, "bf16 save");
    CHECK(zaya_ckpt_open_latest(&c, root, 1) == ZAYA_OK, "bf16 open");
    if (!c) return;
    float w[NW];
    zaya_ckpt_read_f32(c, "w", 0, NW, w);
    int ok = 1;
    for (int i = 0; i < NW; i++) ok &= w[i] == zaya_bf16_to_f32(zaya_f32_to_bf16(s.w[i]));
    CHECK(ok && zaya_ckpt_find(c, "w")->dtype == ZAYA_ST_BF16, "bf16 model values rounded to nearest even");
    zaya_ckpt_close(c);
}

typedef struct rank_job {
    zaya_ckpt_local_group *g;
    int rank, world, overlap;
    const char *root;
    const state *s;
    zaya_status status;
    zaya_ckpt_save_stats st;
    char msg[1024];
} rank_job;

static char g_msg[1024]; /* rank 0's error message (error messages are thread-local) */

static void *rank_main(void *arg) {
    rank_job *j = arg;
    zaya_ckpt_comm comm = zaya_ckpt_local_comm(j->g, j->rank);
    zaya_ckpt_writer *w;
    zaya_ckpt_options o = zaya_ckpt_default_options();
    j->status = zaya_ckpt_writer_init(&w, j->root, 9, 9000, &o, &comm);
    if (j->status) return NULL;
    add_state(w, j->s, j->rank, j->world, j->overlap);
    j->status = zaya_ckpt_writer_commit(w, &j->st);
    snprintf(j->msg, sizeof j->msg, "%s", zaya_error_message());
    return NULL;
}

static int save_ranks(const char *root, const state *s, int world, int overlap, zaya_status *status) {
    zaya_ckpt_local_group *g;
    zaya_ckpt_local_group_new(&g, world);
    rank_job jobs[8];
    pthread_t th[8];
    for (int r = 0; r < world; r++) {
        memset(&jobs[r], 0, sizeof jobs[r]);
        jobs[r].g = g;
        jobs[r].rank = r;
        jobs[r].world = world;
        jobs[r].overlap = overlap;
        jobs[r].root = root;
        jobs[r].s = s;
        pthread_create(&th[r], NULL, rank_main, &jobs[r]);
    }
    int same = 1;
    for (int r = 0; r < world; r++) {
        pthread_join(th[r], NULL);
        same &= jobs[r].status == jobs[0].status;
    }
    *status = jobs[0].status;
    snprintf(g_msg, sizeof g_msg, "%s", jobs[world - 1].msg);
    zaya_ckpt_local_group_free(g);
    return same;
}

static void test_ranks(void) {
    char root[300], p[500];
    snprintf(root, sizeof root, "%s/ranks", g_root);
    state s;
    fill_state(&s, 2);
    zaya_status st;
    CHECK(save_ranks(root, &s, 4, 0, &st) && st == ZAYA_OK, "4-rank save: %s", zaya_error_message());
    for (int r = 0; r < 4; r++) {
        snprintf(p, sizeof p, "%s/step-00000009/state-r%05d.safetensors", root, r);
        CHECK(exists(p), "rank %d state file", r);
    }
    /* the two model tensors were split over ranks 0 and 1 */
    snprintf(p, sizeof p, "%s/step-00000009/model-r00001.safetensors", root);
    CHECK(exists(p), "model tensors split across ranks");
    zaya_ckpt *c;
    CHECK(zaya_ckpt_open_latest(&c, root, 1) == ZAYA_OK, "open: %s", zaya_error_message());
    if (c) {
        CHECK(c->world == 4, "world");
        CHECK(zaya_ckpt_require_world(c, 4) == ZAYA_OK, "same world");
        CHECK(zaya_ckpt_require_world(c, 2) == ZAYA_EMPI && strstr(zaya_error_message(), "reshape"), "world mismatch: %s",
              zaya_error_message());
        check_state(c, &s, "4 ranks");
        CHECK(zaya_ckpt_find(c, "opt.v")->npieces == 8, "8 pieces");
        for (int r = 0; r < 4; r++) {
            const cJSON *rng = zaya_ckpt_rank_section(c, r, "rng");
            CHECK(rng && cJSON_GetObjectItem(rng, "rank_written")->valueint == r, "rank section of %d", r);
        }
        zaya_ckpt_close(c);
    }
    /* overlapping ranges: every rank gets the error, nothing is committed, the old step survives */
    char root2[300];
    snprintf(root2, sizeof root2, "%s/overlap", g_root);
    CHECK(save_single(root2, 1, &s, NULL) == ZAYA_OK, "base");
    CHECK(save_ranks(root2, &s, 3, 1, &st) && st == ZAYA_EINVAL, "overlap refused on all ranks (%d)", st);
    CHECK(strstr(g_msg, "opt.m") && strstr(g_msg, "overlap"), "message on the last rank: %s", g_msg);
    snprintf(p, sizeof p, "%s/step-00000009", root2);
    CHECK(!exists(p), "no step dir after failure");
    CHECK(zaya_ckpt_open_latest(&c, root2, 1) == ZAYA_OK && c->step == 1, "previous checkpoint intact");
    zaya_ckpt_close(c);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c tmp > /dev/null", root2);
    CHECK(system(cmd) != 0, "no temp directory left");
}

static void test_disk_full(void) {
    char root[300], p[500];
    snprintf(root, sizeof root, "%s/full", g_root);
    state s;
    fill_state(&s, 3);
    CHECK(save_single(root, 1, &s, NULL) == ZAYA_OK, "base");
    state s2;
    fill_state(&s2, 4);
    for (int64_t limit = 100; limit < 20000; limit = limit * 3) {
        zaya_st_inject_write_failure(limit);
        zaya_status st = save_single(root, 2, &s2, NULL);
        zaya_st_inject_write_failure(-1);
        CHECK(st == ZAYA_EIO && strstr(zaya_error_message(), "No space left") && strstr(zaya_error_message(), "step-00000002"),
              "disk full after %lld bytes: %s", (long long)limit, zaya_error_message());
        snprintf(p, sizeof p, "%s/step-00000002", root);
        CHECK(!exists(p), "no partial step");
        char cmd[600];
        snprintf(cmd, sizeof cmd, "ls %s | grep -q tmp", root);
        CHECK(system(cmd) != 0, "temp dir cleaned");
        zaya_ckpt *c;
        CHECK(zaya_ckpt_open_latest(&c, root, 1) == ZAYA_OK && c->step == 1, "previous checkpoint intact");
        if (c) check_state(c, &s, "after disk full");
        zaya_ckpt_close(c);
    }
}

static void corrupt(const char *path, long off, int whence) {
    int fd = open(path, O_RDWR);
    lseek(fd, off, whence);
    unsigned char b;
    if (read(fd, &b, 1) != 1) b = 0;
    b ^= 0x55;
    lseek(fd, -1, SEEK_CUR);
    if (write(fd, &b, 1) != 1) {}
    close(fd);
}

static void test_fallback(void) {
    char root[300], p[600];
    snprintf(root, sizeof root, "%s/fallback", g_root);
    state s1, s2;
    fill_state(&s1, 5);
    fill_state(&s2, 6);
    save_single(root, 1, &s1, NULL);
    save_single(root, 2, &s2, NULL);
    zaya_ckpt *c;
    /* flipped data byte: only the checksum sees it */
    snprintf(p, sizeof p, "%s/step-00000002/state-r00000.safetensors", root);
    corrupt(p, -100, SEEK_END);
    CHECK(zaya_ckpt_open(&c, "/nonexistent/step-00000001", 0) != ZAYA_OK, "missing dir");
    char d2[400];
    snprintf(d2, sizeof d2, "%s/step-00000002", root);
    CHECK(zaya_ckpt_open(&c, d2, 1) == ZAYA_EFORMAT && strstr(zaya_error_message(), "checksum") &&
              strstr(zaya_error_message(), "state-r00000.safetensors"),
          "corruption named: %s", zaya_error_message());
    CHECK(zaya_ckpt_open_latest(&c, root, 1) == ZAYA_OK && c->step == 1, "fell back to step 1");
    if (c) check_state(c, &s1, "fallback");
    zaya_ckpt_close(c);
    corrupt(p, -100, SEEK_END); /* restore */
    CHECK(zaya_ckpt_open_latest(&c, root, 1) == ZAYA_OK && c->step == 2, "restored");
    zaya_ckpt_close(c);
    /* truncated file */
    CHECK(truncate(p, 300) == 0, "truncate");
    CHECK(zaya_ckpt_open(&c, d2, 0) != ZAYA_OK && strstr(zaya_error_message(), "state-r00000"), "truncation named: %s",
          zaya_error_message());
    CHECK(zaya_ckpt_open_latest(&c, root, 1) == ZAYA_OK && c->step == 1, "fallback after truncation");
    zaya_ckpt_close(c);
    /* missing manifest, garbage latest */
    snprintf(p, sizeof p, "%s/step-00000002/manifest.json", root);
    unlink(p);
    CHECK(zaya_ckpt_open(&c, d2, 0) != ZAYA_OK && strstr(zaya_error_message(), "missing manifest"), "missing manifest: %s",
          zaya_error_message());
    snprintf(p, sizeof p, "%s/latest", root);
    zaya_write_file_atomic(p, "../../etc\n", 10);
    CHECK(zaya_ckpt_open_latest(&c, root, 1) == ZAYA_OK && c->step == 1, "garbage latest falls back");
    zaya_ckpt_close(c);
    /* a manifest that lies about an offset */
    char root3[300];
    snprintf(root3, sizeof root3, "%s/lie", g_root);
    save_single(root3, 3, &s1, NULL);
    snprintf(p, sizeof p, "%s/step-00000003/manifest.json", root3);
    cJSON *m;
    zaya_json_load_file(p, &m);
    cJSON *piece = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(m, "tensors"), 0), "pieces"), 0);
    cJSON_ReplaceItemInObject(piece, "offset", cJSON_CreateNumber(8));
    zaya_json_write_file(p, m, 1);
    snprintf(p, sizeof p, "%s/step-00000003", root3);
    CHECK(zaya_ckpt_open(&c, p, 0) == ZAYA_EFORMAT && strstr(zaya_error_message(), "manifest checksum") &&
              strstr(zaya_error_message(), "step-00000003/manifest.json"),
          "edited manifest refused by its checksum: %s", zaya_error_message());
    snprintf(p, sizeof p, "%s/step-00000003/manifest.json", root3);
    CHECK(zaya_ckpt_manifest_seal(m) == ZAYA_OK, "reseal");
    zaya_json_write_file(p, m, 1);
    cJSON_Delete(m);
    snprintf(p, sizeof p, "%s/step-00000003", root3);
    CHECK(zaya_ckpt_open(&c, p, 0) == ZAYA_EFORMAT && strstr(zaya_error_message(), "offset"), "lying offset: %s",
          zaya_error_message());
    CHECK(zaya_ckpt_open_latest(&c, root3, 0) != ZAYA_OK && strstr(zaya_error_message(), "no loadable checkpoint"),
          "nothing to fall back to: %s", zaya_error_message());
}

/* Flips one digit of the first occurrence of `key` in a manifest file (its value). */
static int flip_digit(const char *path, const char *key) {
    char *txt;
    size_t len;
    if (zaya_read_file(path, &txt, &len) != ZAYA_OK) return 0;
    char *k = strstr(txt, key), *d = k;
    while (d && *d && !(*d >= '0' && *d <= '9')) d++;
    int ok = d && *d;
    if (ok) *d = *d == '9' ? '8' : (char)(*d + 1);
    FILE *f = fopen(path, "wb");
    ok = ok && f && fwrite(txt, 1, len, f) == len;
    if (f) fclose(f);
    free(txt);
    return ok;
}

/* JSON state in the manifest is covered by manifest_xxh3: a one-digit change anywhere is refused. */
static void test_manifest_checksum(void) {
    char root[300], p[600], d[600];
    snprintf(root, sizeof root, "%s/msum", g_root);
    state s;
    fill_state(&s, 9);
    static const char *const keys[] = {"\"lr\"", "\"tokens\"", "\"offset\"", "\"rank_written\"", NULL};
    for (int i = 0; keys[i]; i++) {
        char sub[400];
        snprintf(sub, sizeof sub, "%s/%d", root, i);
        CHECK(save_single(sub, 4, &s, NULL) == ZAYA_OK, "save");
        snprintf(p, sizeof p, "%s/step-00000004/manifest.json", sub);
        snprintf(d, sizeof d, "%s/step-00000004", sub);
        CHECK(flip_digit(p, keys[i]), "flip a digit of %s", keys[i]);
        zaya_ckpt *c = NULL;
        CHECK(zaya_ckpt_open(&c, d, 0) == ZAYA_EFORMAT && strstr(zaya_error_message(), "manifest checksum") &&
                  strstr(zaya_error_message(), "step-00000004/manifest.json"),
              "flipped digit after %s detected: %s", keys[i], zaya_error_message());
        zaya_ckpt_close(c);
        c = NULL;
        CHECK(zaya_ckpt_open_latest(&c, sub, 1) != ZAYA_OK, "no fallback exists: refused");
    }
    /* reformatting (whitespace) is not a change; a removed checksum is refused in version 2 */
    snprintf(p, sizeof p, "%s/0/step-00000004/manifest.json", root);
    save_single(root, 5, &s, NULL);
    snprintf(p, sizeof p, "%s/step-00000005/manifest.json", root);
    snprintf(d, sizeof d, "%s/step-00000005", root);
    cJSON *m = NULL;
    zaya_json_load_file(p, &m);
    zaya_json_write_file(p, m, 0);
    zaya_ckpt *c = NULL;
    CHECK(zaya_ckpt_open(&c, d, 1) == ZAYA_OK, "reformatted manifest opens: %s", zaya_error_message());
    zaya_ckpt_close(c);
    c = NULL;
    cJSON_DeleteItemFromObject(m, "manifest_xxh3");
    zaya_json_write_file(p, m, 1);
    CHECK(zaya_ckpt_open(&c, d, 1) == ZAYA_EFORMAT && strstr(zaya_error_message(), "manifest_xxh3"), "missing checksum: %s",
          zaya_error_message());
    /* a manifest cannot switch its checksum off by claiming version 1: refused unless asked for */
    cJSON_ReplaceItemInObject(m, "format_version", cJSON_CreateNumber(1));
    zaya_json_write_file(p, m, 1);
    CHECK(zaya_ckpt_open(&c, d, 1) == ZAYA_EFORMAT && strstr(zaya_error_message(), "format_version 1") &&
              strstr(zaya_error_message(), "--accept-v1"),
          "version 1 without checksum refused: %s", zaya_error_message());
    c = NULL;
    CHECK(zaya_ckpt_open(&c, d, ZAYA_CKPT_OPEN_VERIFY | ZAYA_CKPT_OPEN_ACCEPT_V1) == ZAYA_OK,
          "version 1 without checksum opens when accepted: %s", zaya_error_message());
    zaya_ckpt_close(c);
    c = NULL;
    CHECK(zaya_ckpt_open_latest(&c, root, ZAYA_CKPT_OPEN_VERIFY) != ZAYA_OK, "a plain open of the root does not take the "
          "unsealed version-1 step");
    zaya_ckpt_close(c);
    cJSON_Delete(m);
}

/* latest is a hint: the newest step directory that opens and verifies wins, and the resolution says
 * how latest compared (what the trainer repairs and reports). */
static void test_latest_resolution(void) {
    char root[300], p[600];
    snprintf(root, sizeof root, "%s/resolve", g_root);
    state s[4];
    for (int i = 1; i <= 3; i++) {
        fill_state(&s[i], 20 + (uint64_t)i);
        save_single(root, i * 4, &s[i], NULL);
    }
    snprintf(p, sizeof p, "%s/latest", root);
    zaya_ckpt *c = NULL;
    zaya_ckpt_resolution r;
    /* killed between the commit rename and the latest rewrite: latest names step 8, step 12 is complete */
    zaya_write_file_atomic(p, "step-00000008\n", 14);
    CHECK(zaya_ckpt_open_newest(&c, root, 1, &r) == ZAYA_OK && c->step == 12 && r.latest == ZAYA_CKPT_LATEST_BEHIND &&
              r.latest_step == 8 && r.nunusable == 0,
          "latest behind: newest complete step wins (%s)", r.detail);
    if (c) check_state(c, &s[3], "behind");
    zaya_ckpt_close(c);
    c = NULL;
    unlink(p);
    CHECK(zaya_ckpt_root_has_checkpoints(root), "step directories count as checkpoints without latest");
    CHECK(zaya_ckpt_open_newest(&c, root, 1, &r) == ZAYA_OK && c->step == 12 && r.latest == ZAYA_CKPT_LATEST_MISSING,
          "missing latest: reconstructed from the directories");
    zaya_ckpt_close(c);
    c = NULL;
    zaya_write_file_atomic(p, "", 0);
    CHECK(zaya_ckpt_open_newest(&c, root, 1, &r) == ZAYA_OK && c->step == 12 && r.latest == ZAYA_CKPT_LATEST_GARBAGE,
          "empty latest: garbage (%s)", r.detail);
    zaya_ckpt_close(c);
    c = NULL;
    zaya_write_file_atomic(p, "step-00003000\n", 14);
    CHECK(zaya_ckpt_open_newest(&c, root, 1, &r) == ZAYA_OK && c->step == 12 && r.latest == ZAYA_CKPT_LATEST_ABSENT &&
              r.latest_step == 3000 && strstr(r.detail, "does not exist"),
          "latest names a missing step (%s)", r.detail);
    zaya_ckpt_close(c);
    c = NULL;
    /* the newest is corrupt and latest names it: fall back, report it unusable */
    zaya_write_file_atomic(p, "step-00000012\n", 14);
    snprintf(p, sizeof p, "%s/step-00000012/state-r00000.safetensors", root);
    corrupt(p, -10, SEEK_END);
    CHECK(zaya_ckpt_open_newest(&c, root, 1, &r) == ZAYA_OK && c->step == 8 && r.latest == ZAYA_CKPT_LATEST_UNUSABLE &&
              r.nunusable == 1 && r.unusable[0] == 12 && strstr(r.detail, "checksum"),
          "corrupt newest: step 8, step 12 unusable (%s)", r.detail);
    if (c) check_state(c, &s[2], "fallback");
    zaya_ckpt_close(c);
    c = NULL;
    CHECK(zaya_ckpt_open_latest(&c, root, 1) == ZAYA_OK && c->step == 8, "open_latest follows the same rule");
    zaya_ckpt_close(c);
    /* an empty root is not a checkpoint */
    snprintf(p, sizeof p, "%s/empty", g_root);
    zaya_mkdir_p(p);
    CHECK(!zaya_ckpt_root_has_checkpoints(p), "empty root has no checkpoints");
}

static void test_retention(void) {
    char root[300], p[500];
    snprintf(root, sizeof root, "%s/retention", g_root);
    state s;
    fill_state(&s, 7);
    zaya_ckpt_options o = zaya_ckpt_default_options();
    o.keep_last = 2;
    o.keep_every = 3;
    for (int step = 1; step <= 7; step++) CHECK(save_single(root, step, &s, &o) == ZAYA_OK, "save %d", step);
    int want[8] = {0, 0, 0, 1, 0, 0, 1, 1};
    for (int step = 1; step <= 7; step++) {
        snprintf(p, sizeof p, "%s/step-%08d", root, step);
        CHECK(exists(p) == want[step], "step %d kept=%d", step, want[step]);
    }
    /* a temp dir of a dead process is removed by the next save */
    snprintf(p, sizeof p, "%s/step-00000099.tmp-999999999", root);
    zaya_mkdir_p(p);
    char lt[500], q1[500], q2[500], q3[500];
    snprintf(lt, sizeof lt, "%s/latest.tmp.999999999", root);
    snprintf(q1, sizeof q1, "%s/unusable-step-00000008-999999999", root);
    snprintf(q2, sizeof q2, "%s/rolledback-step-00000006-999999999", root);
    snprintf(q3, sizeof q3, "%s/unusable-step-00000020-999999999", root);
    zaya_write_file_atomic(lt, "step-00000007\n", 14);
    zaya_mkdir_p(q1);
    zaya_mkdir_p(q2);
    zaya_mkdir_p(q3);
    save_single(root, 8, &s, &o);
    CHECK(!exists(p), "stale temp dir removed");
    CHECK(!exists(lt), "stale latest.tmp.PID removed");
    CHECK(!exists(q1) && !exists(q2), "quarantined steps <= the committed step removed");
    CHECK(exists(q3), "a quarantined step newer than the committed one is kept");
    /* a writer killed and never reaped (a zombie: its parent died, init does not reap) is dead too */
    pid_t z = fork();
    if (z == 0) _exit(0);
    CHECK(z > 0, "fork");
    for (int i = 0; i < 500 && zaya_proc_alive(z, 0); i++) usleep(2000);
    snprintf(p, sizeof p, "%s/step-00000012.tmp-%d", root, (int)z);
    snprintf(lt, sizeof lt, "%s/latest.tmp.%d", root, (int)z);
    zaya_mkdir_p(p);
    zaya_write_file_atomic(lt, "step-00000008\n", 14);
    save_single(root, 9, &s, &o);
    CHECK(!exists(p), "temp dir of a zombie writer removed");
    CHECK(!exists(lt), "latest.tmp.PID of a zombie writer removed");
    waitpid(z, NULL, 0);
    /* a live writer's temp dir is left alone */
    snprintf(p, sizeof p, "%s/step-00000012.tmp-%d", root, (int)getpid());
    zaya_mkdir_p(p);
    save_single(root, 10, &s, &o);
    CHECK(exists(p), "temp dir of a live writer kept");
    rmdir(p);
}

static void test_async(void) {
    char root[300];
    snprintf(root, sizeof root, "%s/async", g_root);
    state *s = malloc(sizeof *s), *orig = malloc(sizeof *orig);
    fill_state(s, 8);
    *orig = *s;
    zaya_ckpt_snapshot snap = {0};
    for (int step = 1; step <= 2; step++) {
        zaya_ckpt_writer *w;
        zaya_ckpt_writer_init(&w, root, step, 0, NULL, NULL);
        add_state(w, s, 0, 1, 0);
        double stall = -1;
        CHECK(zaya_ckpt_writer_commit_async(w, &snap, &stall) == ZAYA_OK && stall >= 0, "async start");
        fill_state(s, 100 + (uint64_t)step); /* training continues and changes the state */
        zaya_ckpt_save_stats st;
        CHECK(zaya_ckpt_writer_wait(w, &st) == ZAYA_OK, "async wait: %s", zaya_error_message());
        CHECK(st.bytes > 0 && st.snapshot_s == stall && st.write_s > 0, "stats");
        zaya_ckpt *c;
        CHECK(zaya_ckpt_open_latest(&c, root, 1) == ZAYA_OK && c->step == step, "async load");
        if (c) check_state(c, orig, "async snapshot");
        zaya_ckpt_close(c);
        *orig = *s;
    }
    zaya_ckpt_snapshot_free(&snap);
    free(s);
    free(orig);
}

static void test_reshape(void) {
    char src[300], dst[300], one[300];
    snprintf(src, sizeof src, "%s/ranks", g_root); /* written by test_ranks (4 ranks) */
    snprintf(dst, sizeof dst, "%s/reshaped", g_root);
    snprintf(one, sizeof one, "%s/consolidated", g_root);
    state s;
    fill_state(&s, 2);
    CHECK(zaya_ckpt_reshape(src, dst, 3, 1) == ZAYA_OK, "reshape 4 -> 3: %s", zaya_error_message());
    zaya_ckpt *c;
    CHECK(zaya_ckpt_open_latest(&c, dst, 1) == ZAYA_OK, "open reshaped: %s", zaya_error_message());
    if (c) {
        CHECK(c->world == 3 && c->step == 9 && c->tokens == 9000, "reshaped header");
        check_state(c, &s, "reshaped");
        const zaya_ckpt_entry *e = zaya_ckpt_find(c, "opt.m");
        CHECK(e->npieces == 3 && e->pieces[1].start == NM / 3 && e->pieces[2].rank == 2, "even re-cut");
        CHECK(zaya_ckpt_section(c, "schedule") && zaya_ckpt_section(c, "reshaped_from"), "sections carried");
        zaya_ckpt_close(c);
    }
    CHECK(zaya_ckpt_reshape(src, one, 1, 0) == ZAYA_OK, "consolidate: %s", zaya_error_message());
    CHECK(zaya_ckpt_open_latest(&c, one, 1) == ZAYA_OK, "open consolidated");
    if (c) {
        CHECK(c->world == 1 && c->nfiles == 2, "one model file + one state file (%d)", c->nfiles);
        check_state(c, &s, "consolidated");
        zaya_ckpt_close(c);
    }
    /* unit boundaries from the optimizer section are respected */
    char ub[300], ubd[300];
    snprintf(ub, sizeof ub, "%s/units", g_root);
    snprintf(ubd, sizeof ubd, "%s/units2", g_root);
    zaya_ckpt_writer *w;
    zaya_ckpt_writer_init(&w, ub, 1, 0, NULL, NULL);
    add_state(w, &s, 0, 1, 0);
    cJSON *opt = cJSON_Parse("{\"units\": {\"opt.m\": [0, 100, 900, 1003]}}");
    zaya_ckpt_writer_add_section(w, "optimizer", opt);
    cJSON_Delete(opt);
    CHECK(zaya_ckpt_writer_commit(w, NULL) == ZAYA_OK, "units save");
    CHECK(zaya_ckpt_reshape(ub, ubd, 2, 1) == ZAYA_OK, "units reshape");
    if (zaya_ckpt_open_latest(&c, ubd, 1) == ZAYA_OK) {
        const zaya_ckpt_entry *e = zaya_ckpt_find(c, "opt.m");
        CHECK(e->npieces == 2 && (e->pieces[1].start == 100 || e->pieces[1].start == 900), "cut at a unit boundary (%lld)",
              (long long)e->pieces[1].start);
        check_state(c, &s, "units");
        zaya_ckpt_close(c);
    }
}

int main(void) {
    zaya_log_set_level(ZAYA_LOG_ERROR);
    snprintf(g_root, sizeof g_root, "/tmp/zaya_test_ckpt_%d", (int)getpid());
    test_single();
    test_ranks();
    test_disk_full();
    test_fallback();
    test_manifest_checksum();
    test_latest_resolution();
    test_retention();
    test_async();
    test_reshape();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_root);
    if (system(cmd)) {}
    return th_finish("test_ckpt");
}
