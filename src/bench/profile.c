/* The machine profile (docs/profile-format.md): the one writer and the one reader of profile.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/json.h"
#include "zaya/profile.h"

static const char *g_mem_keys[ZAYA_MEM_KERNELS] = {"copy_GBps", "scale_GBps", "add_GBps",
                                                   "triad_GBps", "read_GBps", "write_GBps"};

void zaya_profile_free(zaya_profile *p) {
    free(p->gemm);
    zaya_coll_results_free(&p->collectives);
    memset(p, 0, sizeof *p);
}

zaya_status zaya_profile_add_gemm(zaya_profile *p, const zaya_profile_gemm *g) {
    zaya_profile_gemm *rows = realloc(p->gemm, (size_t)(p->ngemm + 1) * sizeof *rows);
    if (!rows) return zaya_error_set(ZAYA_ENOMEM, "profile: gemm table of %d entries", p->ngemm + 1);
    p->gemm = rows;
    p->gemm[p->ngemm++] = *g;
    return ZAYA_OK;
}

/* ------------------------------------------------------------------------------------- writer */

static cJSON *machine_json(const zaya_profile_machine *m) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "hostname", m->hostname);
    cJSON_AddStringToObject(o, "cpu_model", m->cpu_model);
    cJSON_AddNumberToObject(o, "cores", m->cores);
    cJSON_AddNumberToObject(o, "threads", m->threads);
    cJSON_AddNumberToObject(o, "llc_bytes", (double)m->llc_bytes);
    cJSON_AddNumberToObject(o, "world_size", m->world_size);
    cJSON_AddStringToObject(o, "created", m->created);
    cJSON_AddStringToObject(o, "zaya_version", m->zaya_version);
    if (m->mem_bytes > 0) cJSON_AddNumberToObject(o, "mem_bytes", m->mem_bytes);
    if (m->ranks_per_node > 0) cJSON_AddNumberToObject(o, "ranks_per_node", m->ranks_per_node);
    return o;
}

static cJSON *gemm_json(const zaya_profile_gemm *g) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "dtype", g->bf16 ? "bf16" : "f32");
    cJSON_AddNumberToObject(e, "m", (double)g->m);
    cJSON_AddNumberToObject(e, "n", (double)g->n);
    cJSON_AddNumberToObject(e, "k", (double)g->k);
    cJSON_AddNumberToObject(e, "gflops", g->gflops);
    if (g->detail) {
        cJSON_AddStringToObject(e, "class", g->cls);
        cJSON_AddStringToObject(e, "name", g->name);
        cJSON_AddStringToObject(e, "pass", g->pass);
        cJSON_AddBoolToObject(e, "trans_a", g->trans_a);
        cJSON_AddBoolToObject(e, "trans_b", g->trans_b);
        cJSON_AddNumberToObject(e, "direct_gflops", g->direct_gflops);
    }
    return e;
}

cJSON *zaya_profile_to_json(const zaya_profile *p) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", ZAYA_PROFILE_FORMAT);
    cJSON_AddNumberToObject(root, "version", ZAYA_PROFILE_VERSION);
    cJSON_AddItemToObject(root, "machine", machine_json(&p->machine));
    cJSON *gemm = cJSON_AddArrayToObject(root, "gemm");
    for (int i = 0; i < p->ngemm; i++) cJSON_AddItemToArray(gemm, gemm_json(&p->gemm[i]));
    cJSON *pk = cJSON_AddObjectToObject(root, "gemm_peak_gflops");
    cJSON_AddNumberToObject(pk, "f32", p->peak_gflops[0]);
    cJSON_AddNumberToObject(pk, "bf16", p->peak_gflops[1]);
    cJSON_AddItemToObject(root, "memory", zaya_bench_mem_profile_json(&p->memory));
    cJSON_AddItemToObject(root, "collectives", zaya_bench_coll_profile_json(&p->collectives));
    return root;
}

zaya_status zaya_profile_write_file(const zaya_profile *p, const char *path) {
    cJSON *root = zaya_profile_to_json(p);
    if (!root) return zaya_error_set(ZAYA_ENOMEM, "%s: profile", path);
    zaya_status st = zaya_json_write_file(path, root, 1);
    cJSON_Delete(root);
    return st;
}

/* ------------------------------------------------------------------------------------- reader */

static zaya_status pos_num(const cJSON *o, const char *key, double *out) {
    ZAYA_TRY(zaya_json_get_f64(o, key, out, 1));
    if (!(*out > 0)) return zaya_error_set(ZAYA_EINVAL, "key '%s' must be positive (got %g)", key, *out);
    return ZAYA_OK;
}

/* An optional string key copied into buf (an error when it does not fit). */
static zaya_status opt_str(const cJSON *o, const char *key, char *buf, size_t cap) {
    const char *s = NULL;
    ZAYA_TRY(zaya_json_get_str(o, key, &s, 0));
    if (!s) return ZAYA_OK;
    if (strlen(s) >= cap) return zaya_error_set(ZAYA_EINVAL, "key '%s' is longer than %zu bytes", key, cap - 1);
    memcpy(buf, s, strlen(s) + 1);
    return ZAYA_OK;
}

static zaya_status read_machine(const cJSON *m, zaya_profile_machine *out) {
    ZAYA_TRY(opt_str(m, "hostname", out->hostname, sizeof out->hostname));
    ZAYA_TRY(opt_str(m, "name", out->hostname, sizeof out->hostname));
    ZAYA_TRY(opt_str(m, "cpu_model", out->cpu_model, sizeof out->cpu_model));
    ZAYA_TRY(opt_str(m, "created", out->created, sizeof out->created));
    ZAYA_TRY(opt_str(m, "zaya_version", out->zaya_version, sizeof out->zaya_version));
    /* first positive of each pair */
    static const char *cores[] = {"cores", "physical_cores"}, *threads[] = {"threads", "logical_cpus"};
    for (int i = 0; i < 2; i++) {
        int64_t v = 0;
        if (out->cores <= 0) {
            ZAYA_TRY(zaya_json_get_i64(m, cores[i], &v, 0));
            out->cores = v > 0 ? (int)v : 0;
        }
        v = 0;
        if (out->threads <= 0) {
            ZAYA_TRY(zaya_json_get_i64(m, threads[i], &v, 0));
            out->threads = v > 0 ? (int)v : 0;
        }
    }
    int64_t v = 0;
    ZAYA_TRY(zaya_json_get_i64(m, "llc_bytes", &v, 0));
    out->llc_bytes = v > 0 ? v : 0;
    v = 0;
    ZAYA_TRY(zaya_json_get_i64(m, "world_size", &v, 0));
    out->world_size = v > 0 ? (int)v : 0;
    ZAYA_TRY(zaya_json_get_f64(m, "mem_bytes", &out->mem_bytes, 0));
    if (out->mem_bytes < 0) out->mem_bytes = 0;
    v = 0;
    ZAYA_TRY(zaya_json_get_i64(m, "ranks_per_node", &v, 0));
    out->ranks_per_node = v > 0 ? (int)v : 0;
    return ZAYA_OK;
}

static zaya_status read_gemm_row(const cJSON *e, zaya_profile_gemm *g) {
    const char *dt = NULL;
    ZAYA_TRY(zaya_json_get_str(e, "dtype", &dt, 1));
    if (strcmp(dt, "bf16") && strcmp(dt, "f32"))
        return zaya_error_set(ZAYA_EINVAL, "dtype '%s' is neither 'f32' nor 'bf16'", dt);
    g->bf16 = !strcmp(dt, "bf16");
    ZAYA_TRY(zaya_json_get_i64(e, "m", &g->m, 1));
    ZAYA_TRY(zaya_json_get_i64(e, "n", &g->n, 1));
    ZAYA_TRY(zaya_json_get_i64(e, "k", &g->k, 1));
    if (g->m <= 0 || g->n <= 0 || g->k <= 0) return zaya_error_set(ZAYA_EINVAL, "m, n, k must be positive");
    ZAYA_TRY(pos_num(e, "gflops", &g->gflops));
    g->detail = cJSON_GetObjectItemCaseSensitive(e, "class") != NULL;
    ZAYA_TRY(opt_str(e, "class", g->cls, sizeof g->cls));
    ZAYA_TRY(opt_str(e, "name", g->name, sizeof g->name));
    ZAYA_TRY(opt_str(e, "pass", g->pass, sizeof g->pass));
    ZAYA_TRY(zaya_json_get_bool(e, "trans_a", &g->trans_a, 0));
    ZAYA_TRY(zaya_json_get_bool(e, "trans_b", &g->trans_b, 0));
    ZAYA_TRY(zaya_json_get_f64(e, "direct_gflops", &g->direct_gflops, 0));
    return ZAYA_OK;
}

static zaya_status read_gemm(const cJSON *arr, zaya_profile *p) {
    if (!cJSON_IsArray(arr)) return zaya_error_set(ZAYA_EFORMAT, "key 'gemm' must be a list");
    const cJSON *e;
    int i = 0;
    cJSON_ArrayForEach(e, arr) {
        zaya_profile_gemm g = {0};
        zaya_status s = read_gemm_row(e, &g);
        if (s == ZAYA_OK) s = zaya_profile_add_gemm(p, &g);
        if (s != ZAYA_OK) return zaya_error_context(s, "gemm[%d]", i);
        i++;
    }
    return ZAYA_OK;
}

static zaya_status read_memory(const cJSON *mem, zaya_stream_result *out) {
    for (int k = 0; k < ZAYA_MEM_KERNELS; k++) ZAYA_TRY(pos_num(mem, g_mem_keys[k], &out->best_GBps[k]));
    int64_t bytes = 0;
    ZAYA_TRY(zaya_json_get_int(mem, "threads", &out->threads, 0));
    ZAYA_TRY(zaya_json_get_i64(mem, "array_bytes", &bytes, 0));
    ZAYA_TRY(zaya_json_get_bool(mem, "validated", &out->validated, 0));
    out->elems = bytes / 8;
    return ZAYA_OK;
}

/* The collective a key names: zaya's names (as `zaya bench coll` writes them) or the underscored
 * spellings; -1 when neither. */
static int coll_of_key(const char *key) {
    static const char *alias[][2] = {{"all_reduce", "allreduce"}, {"reduce_scatter", "reducescatter"},
                                     {"all_gather", "allgather"}, {"bcast", "broadcast"},
                                     {"all_to_all", "alltoall"},  {"send_recv", "sendrecv"}};
    for (size_t a = 0; a < sizeof alias / sizeof alias[0]; a++)
        if (!strcmp(key, alias[a][0])) key = alias[a][1];
    for (int k = 0; k < ZAYA_COLL_COUNT; k++)
        if (!strcmp(key, zaya_coll_name((zaya_coll)k))) return k;
    return -1;
}

static zaya_status read_coll_row(const cJSON *e, zaya_coll c, zaya_coll_result *row) {
    *row = (zaya_coll_result){.coll = c, .root = -1};
    const char *dt = "float", *op = "sum", *pl = "packed";
    ZAYA_TRY(zaya_json_get_int(e, "ranks", &row->nranks, 1));
    if (row->nranks < 1) return zaya_error_set(ZAYA_EINVAL, "key 'ranks' must be >= 1");
    ZAYA_TRY(zaya_json_get_i64(e, "bytes", &row->bytes, 1));
    if (row->bytes < 0) return zaya_error_set(ZAYA_EINVAL, "key 'bytes' must be >= 0");
    ZAYA_TRY(pos_num(e, "time_us", &row->oop.time_us));
    ZAYA_TRY(zaya_json_get_f64(e, "algbw_GBps", &row->oop.algbw, 1));
    ZAYA_TRY(zaya_json_get_f64(e, "busbw_GBps", &row->oop.busbw, 1));
    ZAYA_TRY(zaya_json_get_str(e, "dtype", &dt, 0));
    ZAYA_TRY(zaya_json_get_str(e, "op", &op, 0));
    ZAYA_TRY(zaya_json_get_str(e, "placement", &pl, 0));
    ZAYA_TRY(zaya_dist_dtype_parse(dt, &row->dtype));
    if (strcmp(op, "none")) ZAYA_TRY(zaya_redop_parse(op, &row->op));
    row->spread = zaya_coll_placement_parse(pl);
    if (row->spread < 0)
        return zaya_error_set(ZAYA_EINVAL, "placement '%s' is none of 'packed', 'spread', 'intra-host', 'inter-host'", pl);
    row->count = row->bytes / (int64_t)zaya_dist_dtype_size(row->dtype);
    row->oop.wrong = row->ip.wrong = -1;
    return ZAYA_OK;
}

static zaya_status add_coll_row(zaya_coll_results *r, const zaya_coll_result *row) {
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 32;
        zaya_coll_result *rows = realloc(r->rows, (size_t)cap * sizeof *rows);
        if (!rows) return zaya_error_set(ZAYA_ENOMEM, "profile: collectives table of %d rows", cap);
        r->rows = rows;
        r->cap = cap;
    }
    r->rows[r->n++] = *row;
    return ZAYA_OK;
}

static zaya_status read_collectives(const cJSON *obj, zaya_coll_results *out) {
    const cJSON *arr;
    cJSON_ArrayForEach(arr, obj) {
        int c = coll_of_key(arr->string);
        if (c < 0) return zaya_error_set(ZAYA_EFORMAT, "unknown collective '%s'", arr->string);
        if (cJSON_IsNull(arr)) continue;
        if (!cJSON_IsArray(arr)) return zaya_error_set(ZAYA_EFORMAT, "collectives.%s must be a list", arr->string);
        const cJSON *e;
        int i = 0;
        cJSON_ArrayForEach(e, arr) {
            zaya_coll_result row;
            zaya_status s = read_coll_row(e, (zaya_coll)c, &row);
            if (s == ZAYA_OK) s = add_coll_row(out, &row);
            if (s != ZAYA_OK) return zaya_error_context(s, "collectives.%s[%d]", arr->string, i);
            i++;
        }
    }
    return ZAYA_OK;
}

static zaya_status read_profile(const cJSON *root, zaya_profile *p) {
    if (!cJSON_IsObject(root)) return zaya_error_set(ZAYA_EFORMAT, "a profile is a JSON object");
    const char *fmt = NULL;
    int64_t version = 0;
    ZAYA_TRY(zaya_json_get_str(root, "format", &fmt, 1));
    if (strcmp(fmt, ZAYA_PROFILE_FORMAT))
        return zaya_error_set(ZAYA_EFORMAT, "format '%s' is not '%s'", fmt, ZAYA_PROFILE_FORMAT);
    ZAYA_TRY(zaya_json_get_i64(root, "version", &version, 1));
    if (version != ZAYA_PROFILE_VERSION)
        return zaya_error_set(ZAYA_EUNSUPPORTED, "profile version %lld (this build reads version %d)",
                              (long long)version, ZAYA_PROFILE_VERSION);
    const cJSON *machine = cJSON_GetObjectItemCaseSensitive(root, "machine");
    if (!cJSON_IsObject(machine)) return zaya_error_set(ZAYA_EFORMAT, "missing required object 'machine'");
    zaya_status s = read_machine(machine, &p->machine);
    if (s != ZAYA_OK) return zaya_error_context(s, "machine");

    const cJSON *gemm = cJSON_GetObjectItemCaseSensitive(root, "gemm");
    if (!gemm) return zaya_error_set(ZAYA_EFORMAT, "missing required key 'gemm'");
    ZAYA_TRY(read_gemm(gemm, p));
    const cJSON *peak = cJSON_GetObjectItemCaseSensitive(root, "gemm_peak_gflops");
    if (!cJSON_IsObject(peak)) return zaya_error_set(ZAYA_EFORMAT, "missing required object 'gemm_peak_gflops'");
    double pf = 0, pb = 0;
    s = zaya_json_get_f64(peak, "f32", &pf, 1);
    if (s == ZAYA_OK) s = zaya_json_get_f64(peak, "bf16", &pb, 1);
    if (s != ZAYA_OK) return zaya_error_context(s, "gemm_peak_gflops");
    if (pf < 0 || pb < 0 || (pf == 0 && pb == 0))
        return zaya_error_set(ZAYA_EINVAL, "gemm_peak_gflops: f32 and bf16 must be >= 0 and not both 0");
    p->peak_gflops[0] = pf;
    p->peak_gflops[1] = pb;

    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(root, "memory");
    if (!cJSON_IsObject(mem)) return zaya_error_set(ZAYA_EFORMAT, "missing required object 'memory'");
    s = read_memory(mem, &p->memory);
    if (s != ZAYA_OK) return zaya_error_context(s, "memory");
    const cJSON *coll = cJSON_GetObjectItemCaseSensitive(root, "collectives");
    if (!coll) return zaya_error_set(ZAYA_EFORMAT, "missing required object 'collectives'");
    if (!cJSON_IsObject(coll)) return zaya_error_set(ZAYA_EFORMAT, "key 'collectives' must be an object");
    return read_collectives(coll, &p->collectives);
}

zaya_status zaya_profile_from_json(const cJSON *root, const char *what, zaya_profile *out) {
    memset(out, 0, sizeof *out);
    zaya_status s = read_profile(root, out);
    if (s != ZAYA_OK) {
        zaya_profile_free(out);
        return zaya_error_context(s, "%s", what);
    }
    return ZAYA_OK;
}

zaya_status zaya_profile_read_file(const char *path, zaya_profile *out) {
    memset(out, 0, sizeof *out);
    cJSON *root = NULL;
    ZAYA_TRY(zaya_json_load_file(path, &root));
    zaya_status s = zaya_profile_from_json(root, path, out);
    cJSON_Delete(root);
    return s;
}
