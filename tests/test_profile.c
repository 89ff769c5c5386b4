/* The machine profile (zaya/profile.h): a full profile written to a file and read back field by field,
 * the spellings other writers use, and malformed profiles rejected with a message naming the key. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "zaya/json.h"
#include "zaya/profile.h"

static int close14(double a, double b) { return fabs(a - b) <= 1e-14 * fmax(fabs(a), fabs(b)); }

static void sample_profile(zaya_profile *p) {
    memset(p, 0, sizeof *p);
    zaya_profile_machine *m = &p->machine;
    snprintf(m->hostname, sizeof m->hostname, "box-1");
    snprintf(m->cpu_model, sizeof m->cpu_model, "AMD EPYC 9654");
    snprintf(m->created, sizeof m->created, "2026-12-01T12:00:00Z");
    snprintf(m->zaya_version, sizeof m->zaya_version, "0.1.0");
    m->cores = 16;
    m->threads = 8;
    m->llc_bytes = 384ll << 20;
    m->world_size = 4;
    zaya_profile_gemm g0 = {.bf16 = 0, .m = 1024, .n = 1024, .k = 1024, .gflops = 410.123456789012};
    zaya_profile_gemm g1 = {.bf16 = 1, .m = 4096, .n = 2048, .k = 512, .gflops = 812.5, .detail = 1,
                            .trans_b = 1, .direct_gflops = 830.25};
    snprintf(g1.cls, sizeof g1.cls, "model");
    snprintf(g1.name, sizeof g1.name, "q_proj");
    snprintf(g1.pass, sizeof g1.pass, "dgrad");
    CHECK(zaya_profile_add_gemm(p, &g0) == ZAYA_OK && zaya_profile_add_gemm(p, &g1) == ZAYA_OK, "add gemm");
    p->peak_gflops[0] = 420.5;
    p->peak_gflops[1] = 850.75;
    p->memory = (zaya_stream_result){.threads = 2, .elems = 1 << 24, .validated = 1};
    for (int k = 0; k < ZAYA_MEM_KERNELS; k++) p->memory.best_GBps[k] = 10.0 + k * 1.234567891234;
    static const zaya_coll_result rows[3] = {
        {.coll = ZAYA_COLL_ALLREDUCE, .nranks = 2, .dtype = ZAYA_DIST_F32, .op = ZAYA_REDOP_SUM, .bytes = 1024},
        {.coll = ZAYA_COLL_ALLREDUCE, .nranks = 4, .spread = 1, .dtype = ZAYA_DIST_BF16, .op = ZAYA_REDOP_SUM,
         .bytes = 1 << 20},
        {.coll = ZAYA_COLL_ALLGATHER, .nranks = 4, .dtype = ZAYA_DIST_F32, .bytes = 4096},
    };
    p->collectives.rows = malloc(sizeof rows);
    CHECK(p->collectives.rows != NULL, "rows");
    if (!p->collectives.rows) return;
    memcpy(p->collectives.rows, rows, sizeof rows);
    p->collectives.n = p->collectives.cap = 3;
    for (int i = 0; i < 3; i++) {
        zaya_coll_result *r = &p->collectives.rows[i];
        r->oop.time_us = 3.25 + i / 3.0;
        r->oop.algbw = zaya_coll_algbw_gbps(r->bytes, r->oop.time_us);
        r->oop.busbw = r->oop.algbw * zaya_coll_busbw_factor(r->coll, r->nranks);
    }
}

static void test_roundtrip(void) {
    zaya_profile p;
    sample_profile(&p);
    char path[] = "/tmp/zaya_profile_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    if (fd >= 0) close(fd);
    CHECK(zaya_profile_write_file(&p, path) == ZAYA_OK, "write: %s", zaya_error_message());
    zaya_profile b;
    CHECK(zaya_profile_read_file(path, &b) == ZAYA_OK, "read back: %s", zaya_error_message());
    /* the file itself: the header and the documented key names */
    cJSON *root = NULL;
    CHECK(zaya_json_load_file(path, &root) == ZAYA_OK, "load");
    unlink(path);
    const char *fmt = NULL;
    CHECK(root && zaya_json_get_str(root, "format", &fmt, 1) == ZAYA_OK && !strcmp(fmt, "zaya-profile"), "format key");
    CHECK(root && cJSON_GetObjectItem(cJSON_GetObjectItem(root, "collectives"), "allgather") &&
              cJSON_GetObjectItem(cJSON_GetObjectItem(root, "memory"), "triad_GBps") &&
              !cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "gemm"), 0), "class") &&
              cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "gemm"), 1), "class"),
          "documented keys");
    cJSON_Delete(root);

    const zaya_profile_machine *m = &b.machine;
    CHECK(!strcmp(m->hostname, "box-1") && !strcmp(m->cpu_model, "AMD EPYC 9654") &&
              !strcmp(m->created, "2026-12-01T12:00:00Z") && !strcmp(m->zaya_version, "0.1.0"),
          "machine strings");
    CHECK(m->cores == 16 && m->threads == 8 && m->llc_bytes == 384ll << 20 && m->world_size == 4 &&
              m->mem_bytes == 0 && m->ranks_per_node == 0,
          "machine numbers");
    CHECK(b.ngemm == 2, "gemm rows %d", b.ngemm);
    if (b.ngemm == 2) {
        const zaya_profile_gemm *a = &b.gemm[0], *c = &b.gemm[1];
        CHECK(!a->bf16 && a->m == 1024 && a->n == 1024 && a->k == 1024 && close14(a->gflops, 410.123456789012) &&
                  !a->detail,
              "gemm 0");
        CHECK(c->bf16 && c->m == 4096 && c->n == 2048 && c->k == 512 && c->gflops == 812.5 && c->detail &&
                  !strcmp(c->cls, "model") && !strcmp(c->name, "q_proj") && !strcmp(c->pass, "dgrad") &&
                  !c->trans_a && c->trans_b && c->direct_gflops == 830.25,
              "gemm 1");
    }
    CHECK(b.peak_gflops[0] == 420.5 && b.peak_gflops[1] == 850.75, "peaks");
    /* cJSON writes 15 significant digits when they parse back to within an ulp or so: compare at 1e-14. */
    for (int k = 0; k < ZAYA_MEM_KERNELS; k++)
        CHECK(close14(b.memory.best_GBps[k], p.memory.best_GBps[k]), "memory kernel %d", k);
    CHECK(b.memory.threads == 2 && b.memory.elems == 1 << 24 && b.memory.validated == 1, "memory extras");
    CHECK(b.collectives.n == 3, "rows %d", b.collectives.n);
    for (int i = 0; i < b.collectives.n && i < 3; i++) {
        /* Rows come back grouped by collective, in order within each. */
        const zaya_coll_result *x = &b.collectives.rows[i], *y = &p.collectives.rows[i];
        CHECK(x->coll == y->coll && x->nranks == y->nranks && x->bytes == y->bytes && x->dtype == y->dtype &&
                  x->spread == y->spread && close14(x->oop.time_us, y->oop.time_us) &&
                  close14(x->oop.algbw, y->oop.algbw) && close14(x->oop.busbw, y->oop.busbw),
              "row %d differs", i);
    }
    /* writing what was read gives the same text */
    cJSON *j1 = zaya_profile_to_json(&p), *j2 = zaya_profile_to_json(&b);
    char *t1 = cJSON_PrintUnformatted(j1), *t2 = cJSON_PrintUnformatted(j2);
    CHECK(t1 && t2 && !strcmp(t1, t2), "second round trip differs");
    cJSON_free(t1);
    cJSON_free(t2);
    cJSON_Delete(j1);
    cJSON_Delete(j2);
    zaya_profile_free(&b);
    zaya_profile_free(&p);
    CHECK(p.gemm == NULL && p.ngemm == 0 && p.collectives.rows == NULL, "free clears");
}

/* Other writers' spellings: machine "name" and "physical_cores", underscored collective names. */
static void test_spellings(void) {
    static const char *text =
        "{\"format\":\"zaya-profile\",\"version\":1,\"extra\":{\"later\":1},"
        "\"machine\":{\"hostname\":\"a\",\"name\":\"b\",\"physical_cores\":6,\"logical_cpus\":12,"
        "\"mem_bytes\":64e9,\"ranks_per_node\":2},"
        "\"gemm\":[],\"gemm_peak_gflops\":{\"f32\":100,\"bf16\":0},"
        "\"memory\":{\"copy_GBps\":10,\"scale_GBps\":10,\"add_GBps\":12,\"triad_GBps\":12,\"read_GBps\":15,"
        "\"write_GBps\":8},"
        "\"collectives\":{\"reduce_scatter\":[{\"ranks\":2,\"bytes\":100,\"time_us\":5,\"algbw_GBps\":1,"
        "\"busbw_GBps\":1}],\"all_gather\":[],\"bcast\":null}}";
    cJSON *root = NULL;
    CHECK(zaya_json_parse(text, "text", &root) == ZAYA_OK, "parse");
    zaya_profile p;
    CHECK(zaya_profile_from_json(root, "s.json", &p) == ZAYA_OK, "read: %s", zaya_error_message());
    CHECK(!strcmp(p.machine.hostname, "b") && p.machine.cores == 6 && p.machine.threads == 12 &&
              p.machine.mem_bytes == 64e9 && p.machine.ranks_per_node == 2,
          "machine aliases");
    CHECK(p.ngemm == 0 && p.collectives.n == 1 && p.collectives.rows[0].coll == ZAYA_COLL_REDUCESCATTER &&
              p.collectives.rows[0].dtype == ZAYA_DIST_F32 && !p.collectives.rows[0].spread,
          "collective alias and defaults");
    zaya_profile_free(&p);
    cJSON_Delete(root);
}

/* Each edit of a valid profile must be refused with exactly this message. */
typedef void (*edit_fn)(cJSON *root);
static cJSON *obj(cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }
static void e_format(cJSON *r) { cJSON_ReplaceItemInObject(r, "format", cJSON_CreateString("other")); }
static void e_version(cJSON *r) { cJSON_ReplaceItemInObject(r, "version", cJSON_CreateNumber(2)); }
static void e_machine(cJSON *r) { cJSON_DeleteItemFromObject(r, "machine"); }
static void e_cores(cJSON *r) { cJSON_ReplaceItemInObject(obj(r, "machine"), "cores", cJSON_CreateString("x")); }
static void e_gemm_list(cJSON *r) { cJSON_ReplaceItemInObject(r, "gemm", cJSON_CreateObject()); }
static void e_gemm_dtype(cJSON *r) {
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(obj(r, "gemm"), 1), "dtype", cJSON_CreateString("fp8"));
}
static void e_gflops(cJSON *r) {
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(obj(r, "gemm"), 1), "gflops", cJSON_CreateNumber(-1));
}
static void e_gemm_m(cJSON *r) { cJSON_DeleteItemFromObject(cJSON_GetArrayItem(obj(r, "gemm"), 0), "m"); }
static void e_peaks(cJSON *r) {
    cJSON_ReplaceItemInObject(obj(r, "gemm_peak_gflops"), "f32", cJSON_CreateNumber(0));
    cJSON_ReplaceItemInObject(obj(r, "gemm_peak_gflops"), "bf16", cJSON_CreateNumber(0));
}
static void e_peak_missing(cJSON *r) { cJSON_DeleteItemFromObject(obj(r, "gemm_peak_gflops"), "bf16"); }
static void e_triad(cJSON *r) { cJSON_DeleteItemFromObject(obj(r, "memory"), "triad_GBps"); }
static void e_copy(cJSON *r) { cJSON_ReplaceItemInObject(obj(r, "memory"), "copy_GBps", cJSON_CreateNumber(0)); }
static void e_busbw(cJSON *r) {
    cJSON_DeleteItemFromObject(cJSON_GetArrayItem(obj(obj(r, "collectives"), "allreduce"), 1), "busbw_GBps");
}
static void e_ranks(cJSON *r) {
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(obj(obj(r, "collectives"), "allgather"), 0), "ranks",
                              cJSON_CreateNumber(0));
}
static void e_placement(cJSON *r) {
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(obj(obj(r, "collectives"), "allgather"), 0), "placement",
                              cJSON_CreateString("diagonal"));
}
static void e_unknown_coll(cJSON *r) { cJSON_AddItemToObject(obj(r, "collectives"), "allfoo", cJSON_CreateArray()); }
static void e_coll_missing(cJSON *r) { cJSON_DeleteItemFromObject(r, "collectives"); }

static void test_malformed(void) {
    static const struct {
        edit_fn edit;
        const char *msg;
    } cases[] = {
        {e_format, "p.json: format 'other' is not 'zaya-profile'"},
        {e_version, "p.json: profile version 2 (this build reads version 1)"},
        {e_machine, "p.json: missing required object 'machine'"},
        {e_cores, "machine: key 'cores'"},
        {e_gemm_list, "p.json: key 'gemm' must be a list"},
        {e_gemm_dtype, "p.json: gemm[1]: dtype 'fp8' is neither 'f32' nor 'bf16'"},
        {e_gflops, "p.json: gemm[1]: key 'gflops' must be positive (got -1)"},
        {e_gemm_m, "p.json: gemm[0]: "},
        {e_peaks, "p.json: gemm_peak_gflops: f32 and bf16 must be >= 0 and not both 0"},
        {e_peak_missing, "p.json: gemm_peak_gflops: "},
        {e_triad, "p.json: memory: "},
        {e_copy, "p.json: memory: key 'copy_GBps' must be positive (got 0)"},
        {e_busbw, "p.json: collectives.allreduce[1]: "},
        {e_ranks, "p.json: collectives.allgather[0]: key 'ranks' must be >= 1"},
        {e_placement, "p.json: collectives.allgather[0]: placement 'diagonal' is none of 'packed', 'spread', 'intra-host', 'inter-host'"},
        {e_unknown_coll, "p.json: unknown collective 'allfoo'"},
        {e_coll_missing, "p.json: missing required object 'collectives'"},
    };
    /* the key a message must also name, where the message above stops at the place */
    static const char *keys[] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, "'m'", NULL, "'bf16'", "'triad_GBps'",
                                 NULL, "'busbw_GBps'", NULL, NULL, NULL, NULL};
    zaya_profile good;
    sample_profile(&good);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *root = zaya_profile_to_json(&good);
        cases[i].edit(root);
        zaya_profile p;
        zaya_status st = zaya_profile_from_json(root, "p.json", &p);
        const char *msg = zaya_error_message();
        CHECK(st != ZAYA_OK, "case %zu accepted", i);
        CHECK(strstr(msg, cases[i].msg) != NULL, "case %zu: '%s' lacks '%s'", i, msg, cases[i].msg);
        CHECK(!keys[i] || strstr(msg, keys[i]), "case %zu: '%s' does not name %s", i, msg, keys[i]);
        CHECK(p.gemm == NULL && p.ngemm == 0 && p.collectives.rows == NULL, "case %zu: output not empty", i);
        cJSON_Delete(root);
    }
    zaya_profile_free(&good);
    /* not JSON at all, and a missing file */
    cJSON *arr = cJSON_CreateArray();
    zaya_profile p;
    CHECK(zaya_profile_from_json(arr, "a.json", &p) == ZAYA_EFORMAT && strstr(zaya_error_message(), "a.json: "),
          "array root: %s", zaya_error_message());
    cJSON_Delete(arr);
    CHECK(zaya_profile_read_file("/nonexistent/profile.json", &p) != ZAYA_OK &&
              strstr(zaya_error_message(), "/nonexistent/profile.json"),
          "missing file: %s", zaya_error_message());
}

int main(void) {
    test_roundtrip();
    test_spellings();
    test_malformed();
    return th_finish("profile");
}
