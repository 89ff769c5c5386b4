/* `zaya bench all` (zaya/bench_all.h): a short run of the machine benchmarks (collectives, memory,
 * GEMM) that writes the machine profile (zaya/profile.h, docs/profile-format.md) the sizing tool
 * reads with --hw DIR/profile.json.
 *
 * Collectives: outside mpirun, this process has a world of one rank (latency of local copies only),
 * so the command first launches `zaya bench coll` under `mpirun -np 2` (and 4, oversubscribed) when
 * mpirun exists and collects their JSON; then it measures world 1 in-process. Under mpirun every
 * rank joins the collective part and rank 0 alone goes on to memory and GEMM after MPI is finalised,
 * so idle ranks polling in MPI do not steal the cores being measured. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zaya/bench.h"
#include "zaya/bench_all.h"
#include "zaya/bench_coll.h"
#include "zaya/bench_gemm.h"
#include "zaya/bench_mem.h"
#include "zaya/dist.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/proc.h"
#include "zaya/profile.h"
#include "zaya/progress.h"
#include "zaya/sysinfo.h"
#include "zaya/threads.h"
#include "zaya/timer.h"

#ifndef ZAYA_VERSION_STRING
#define ZAYA_VERSION_STRING "unknown"
#endif
#define COLL_LIST "allreduce,reducescatter,allgather,broadcast"

typedef struct all_opts {
    const char *outdir, *mpirun; /* mpirun: resolved path, NULL when the children are not launched */
    int quick, threads;
} all_opts;

static int under_mpirun(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

/* mpirun on PATH (or an explicit path), else NULL. */
static const char *find_mpirun(const char *want, char *buf, size_t cap) {
    return zaya_proc_which(want ? want : "mpirun", buf, cap) ? buf : NULL;
}

static zaya_status add_row(zaya_coll_results *r, const zaya_coll_result *row) {
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 32;
        zaya_coll_result *rows = realloc(r->rows, (size_t)cap * sizeof *rows);
        if (!rows) return zaya_error_set(ZAYA_ENOMEM, "bench all: collectives table of %d rows", cap);
        r->rows = rows;
        r->cap = cap;
    }
    r->rows[r->n++] = *row;
    return ZAYA_OK;
}

/* One row of a `zaya bench coll` coll.json: its identity and out-of-place timing. */
static zaya_status child_row(const cJSON *e, zaya_coll_result *row) {
    const char *coll = NULL, *place = NULL, *dtype = NULL, *op = NULL;
    double ranks = 0, bytes = 0;
    const cJSON *oop = cJSON_GetObjectItemCaseSensitive(e, "out_of_place");
    *row = (zaya_coll_result){.root = -1};
    ZAYA_TRY(zaya_json_get_str(e, "coll", &coll, 1));
    ZAYA_TRY(zaya_json_get_str(e, "placement", &place, 1));
    ZAYA_TRY(zaya_json_get_str(e, "dtype", &dtype, 1));
    ZAYA_TRY(zaya_json_get_str(e, "op", &op, 1));
    ZAYA_TRY(zaya_json_get_f64(e, "ranks", &ranks, 1));
    ZAYA_TRY(zaya_json_get_f64(e, "bytes", &bytes, 1));
    if (!cJSON_IsObject(oop)) return zaya_error_set(ZAYA_EFORMAT, "missing 'out_of_place'");
    ZAYA_TRY(zaya_json_get_f64(oop, "time_us", &row->oop.time_us, 1));
    ZAYA_TRY(zaya_json_get_f64(oop, "algbw_GBps", &row->oop.algbw, 1));
    ZAYA_TRY(zaya_json_get_f64(oop, "busbw_GBps", &row->oop.busbw, 1));
    unsigned mask = 0;
    ZAYA_TRY(zaya_coll_parse_list(coll, &mask));
    if (!mask || (mask & (mask - 1))) return zaya_error_set(ZAYA_EFORMAT, "coll '%s' is not one collective", coll);
    row->coll = (zaya_coll)__builtin_ctz(mask);
    ZAYA_TRY(zaya_dist_dtype_parse(dtype, &row->dtype));
    if (strcmp(op, "none")) ZAYA_TRY(zaya_redop_parse(op, &row->op));
    row->spread = zaya_coll_placement_parse(place);
    if (row->spread < 0) return zaya_error_set(ZAYA_EFORMAT, "placement '%s' is unknown", place);
    row->nranks = (int)ranks;
    row->bytes = (int64_t)bytes;
    row->count = row->bytes / (int64_t)zaya_dist_dtype_size(row->dtype);
    if (row->coll == ZAYA_COLL_REDUCESCATTER || row->coll == ZAYA_COLL_ALLGATHER || row->coll == ZAYA_COLL_ALLTOALL)
        row->count /= row->nranks > 0 ? row->nranks : 1; /* per-rank, as coll.json writes it */
    row->oop.wrong = row->ip.wrong = -1;
    return ZAYA_OK;
}

/* Appends the out-of-place rows of a `zaya bench coll` coll.json to the profile's collectives. */
static zaya_status collect_child(const char *path, zaya_coll_results *colls, int *max_ranks) {
    cJSON *root = NULL;
    ZAYA_TRY(zaya_json_load_file(path, &root));
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(root, "results");
    zaya_status st = cJSON_IsArray(rows) ? ZAYA_OK : zaya_error_set(ZAYA_EFORMAT, "%s: missing 'results'", path);
    const cJSON *e;
    int i = 0;
    cJSON_ArrayForEach(e, rows) {
        if (st != ZAYA_OK) break;
        zaya_coll_result row;
        st = child_row(e, &row);
        if (st != ZAYA_OK) {
            st = zaya_error_context(st, "%s: results[%d]", path, i);
            break;
        }
        st = add_row(colls, &row);
        if (row.nranks > *max_ranks) *max_ranks = row.nranks;
        i++;
    }
    cJSON_Delete(root);
    return st;
}

/* `zaya bench coll` under mpirun with np ranks; its output goes to DIR/coll-npN.log. */
static zaya_status run_child(const all_opts *a, int np, zaya_coll_results *colls, int *max_ranks) {
    char dir[4096], log[4200], json[4200], self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return zaya_error_set(ZAYA_EIO, "cannot resolve /proc/self/exe");
    self[n] = 0;
    snprintf(dir, sizeof dir, "%s/coll-np%d", a->outdir, np);
    snprintf(log, sizeof log, "%s/coll-np%d.log", a->outdir, np);
    snprintf(json, sizeof json, "%s/coll.json", dir);
    char snp[16], siters[16], swarm[16];
    snprintf(snp, sizeof snp, "%d", np);
    snprintf(siters, sizeof siters, "%d", a->quick ? 5 : 20);
    snprintf(swarm, sizeof swarm, "%d", a->quick ? 1 : 5);
    char *argv[32];
    int k = 0;
    argv[k++] = (char *)a->mpirun;
    argv[k++] = "-np";
    argv[k++] = snp;
    argv[k++] = "--allow-run-as-root";
    if (np > 2) argv[k++] = "--oversubscribe";
    char *tail[] = {self, "bench", "coll", "--coll", COLL_LIST, "-b", "8", "-e", a->quick ? "256K" : "4M", "-n", siters,
                    "-w", swarm, "--bare", "0", "--out", dir, NULL};
    for (int i = 0; tail[i]; i++) argv[k++] = tail[i];
    argv[k] = NULL;
    const char *env[] = {"OMP_NUM_THREADS=1", NULL};
    zaya_proc_opts po = {.log_path = log, .env = env};
    zaya_proc_result r;
    ZAYA_TRY(zaya_proc_run(argv, &po, 0, &r));
    char why[32];
    if (!zaya_proc_ok(&r))
        return zaya_error_set(ZAYA_EBACKEND, "mpirun -np %d failed (%s); see %s", np, zaya_proc_describe(&r, why, sizeof why), log);
    return collect_child(json, colls, max_ranks);
}

/* The in-process part (world 1 outside mpirun, every rank under it). Returns on rank 0 the rows. */
static zaya_status run_coll_inprocess(const all_opts *a, FILE *out, zaya_coll_results *res, int *world_size,
                                      int *rank) {
    zaya_comm *world = NULL;
    ZAYA_TRY(zaya_dist_init(NULL, NULL, &world));
    *rank = zaya_comm_rank(world);
    *world_size = zaya_comm_size(world);
    zaya_coll_plan plan = {0};
    zaya_coll_opts_default(&plan.opts);
    plan.opts.max_bytes = a->quick ? 256 << 10 : 4 << 20;
    plan.opts.iters = a->quick ? 5 : 20;
    plan.opts.warmup = a->quick ? 1 : 5;
    plan.opts.bare = 0;
    plan.dtypes = 1u << ZAYA_DIST_F32;
    plan.ops = 1u << ZAYA_REDOP_SUM;
    plan.placements = 1;
    plan.sweep = *world_size > 2;
    zaya_status st = zaya_coll_parse_list(COLL_LIST, &plan.colls);
    if (st == ZAYA_OK) st = zaya_bench_coll_run(world, &plan, res, *rank == 0 ? out : NULL);
    if (st == ZAYA_OK && *rank == 0) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/coll", a->outdir);
        st = zaya_bench_coll_write(res, &plan, *world_size, dir);
    }
    zaya_dist_finalize(world);
    return st;
}

/* GEMM: square sizes and the model's shape classes, through zaya_matmul, per dtype. */
static zaya_status run_gemm(const all_opts *a, FILE *out, zaya_profile *prof, zaya_progress *prog, int64_t *done) {
    double *peak = prof->peak_gflops;
    zaya_bench_opts o = {1, a->quick ? 2 : 5, 1e-3, 0};
    static const int64_t pq[] = {1024}, pf[] = {1024, 1536, 2048};
    FILE *csv = NULL;
    char path[4096];
    ZAYA_TRY(zaya_path_join(path, sizeof path, a->outdir, "gemm.csv"));
    csv = fopen(path, "w");
    if (!csv) return zaya_error_set(ZAYA_EIO, "cannot write %s", path);
    fprintf(csv, "dtype,class,name,pass,m,n,k,gflops,direct_gflops,pct_peak\n");
    fprintf(out, "%-5s %-8s %-18s %-6s %6s %6s %6s %9s %9s %6s\n", "dtype", "class", "name", "pass", "m", "n", "k", "GF/s",
           "oneDNN", "%peak");
    zaya_status st = ZAYA_OK;
    for (int d = 0; d < 2 && st == ZAYA_OK; d++) {
        st = zaya_bench_matmul_peak((zaya_dtype)d, a->quick ? pq : pf, a->quick ? 1 : 3, &o, &peak[d], NULL);
        if (st != ZAYA_OK) break;
        int total = zaya_gemm_sweep_shapes(a->quick, (zaya_dtype)d, NULL, 0);
        zaya_gemm_shape *sh = calloc((size_t)total, sizeof *sh);
        if (!sh) {
            st = zaya_error_set(ZAYA_ENOMEM, "gemm shapes");
            break;
        }
        zaya_gemm_sweep_shapes(a->quick, (zaya_dtype)d, sh, total);
        for (int i = 0; i < total && st == ZAYA_OK; i++) {
            if (strcmp(sh[i].group, "square") && strcmp(sh[i].group, "model")) continue;
            if (!strcmp(sh[i].group, "square") && sh[i].m < 128) continue; /* overhead-bound, not throughput */
            zaya_gemm_result r;
            st = zaya_gemm_run_shape(&sh[i], &o, peak[d], &r);
            if (st != ZAYA_OK) break;
            if (r.direct_gflops > peak[d]) peak[d] = r.direct_gflops;
            const char *dt = d ? "bf16" : "f32";
            fprintf(out, "%-5s %-8s %-18s %-6s %6lld %6lld %6lld %9.1f %9.1f %5.0f%%\n", dt, sh[i].group, sh[i].name,
                   sh[i].pass, (long long)sh[i].m, (long long)sh[i].n, (long long)sh[i].k, r.gflops, r.direct_gflops,
                   r.pct_peak);
            fflush(out);
            fprintf(csv, "%s,%s,%s,%s,%lld,%lld,%lld,%.6g,%.6g,%.4g\n", dt, sh[i].group, sh[i].name, sh[i].pass,
                    (long long)sh[i].m, (long long)sh[i].n, (long long)sh[i].k, r.gflops, r.direct_gflops, r.pct_peak);
            zaya_profile_gemm g = {.bf16 = d, .m = sh[i].m, .n = sh[i].n, .k = sh[i].k, .gflops = r.gflops,
                                   .detail = 1, .trans_a = sh[i].trans_a, .trans_b = sh[i].trans_b,
                                   .direct_gflops = r.direct_gflops};
            snprintf(g.cls, sizeof g.cls, "%s", sh[i].group);
            snprintf(g.name, sizeof g.name, "%s", sh[i].name);
            snprintf(g.pass, sizeof g.pass, "%s", sh[i].pass);
            st = zaya_profile_add_gemm(prof, &g);
        }
        free(sh);
        zaya_progress_update(prog, ++*done, d ? "gemm bf16" : "gemm f32");
    }
    fclose(csv);
    return st;
}

static void machine_info(zaya_profile_machine *m, int threads, int world) {
    memset(m, 0, sizeof *m);
    snprintf(m->hostname, sizeof m->hostname, "unknown");
    gethostname(m->hostname, sizeof m->hostname - 1);
    zaya_sysinfo_cpu_model(m->cpu_model, sizeof m->cpu_model);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(m->created, sizeof m->created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    m->cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    m->threads = threads;
    m->llc_bytes = zaya_mem_llc_bytes();
    m->world_size = world;
    snprintf(m->zaya_version, sizeof m->zaya_version, "%s", ZAYA_VERSION_STRING);
}

zaya_status zaya_bench_all_run(const zaya_bench_all_opts *o, FILE *out) {
    all_opts a = {.outdir = o->outdir, .quick = o->quick, .threads = o->threads};
    char mbuf[4096];
    int mpi_world = under_mpirun();
    a.mpirun = o->mpi && !mpi_world ? find_mpirun(o->mpirun, mbuf, sizeof mbuf) : NULL;
    if (o->mpirun && o->mpi && !a.mpirun) return zaya_error_set(ZAYA_EINVAL, "--mpirun %s is not an executable", o->mpirun);
    ZAYA_TRY(zaya_mkdir_p(a.outdir));
    double t0 = zaya_now_s();
    zaya_profile prof = {0};
    zaya_coll_results child = {0};
    int world = 1, rank = 0, max_ranks = 1;
    zaya_progress prog;
    int64_t done = 0;
    zaya_progress_init(&prog, "bench all", "part", (a.mpirun ? 2 : 0) + 1 + 1 + 2);
    /* Children first: this process must not hold an MPI singleton while mpirun starts. */
    for (int np = 2; np <= 4 && a.mpirun; np *= 2) {
        fprintf(out, "# collectives: mpirun -np %d (log in %s/coll-np%d.log)\n", np, a.outdir, np);
        fflush(out);
        zaya_status cs = run_child(&a, np, &child, &max_ranks);
        if (cs != ZAYA_OK) fprintf(stderr, "zaya bench all: warning: %s; continuing\n", zaya_error_message());
        zaya_progress_update(&prog, ++done, np == 2 ? "coll np 2" : "coll np 4");
    }
    if (!a.mpirun && !mpi_world && o->mpi)
        fprintf(out, "# note: mpirun not found: collectives are measured on one rank only (latency of local copies)\n");
    fprintf(out, "# collectives: in-process\n");
    fflush(out);
    zaya_status st = run_coll_inprocess(&a, out, &prof.collectives, &world, &rank);
    zaya_progress_update(&prog, ++done, "coll in-process");
    if (rank != 0) {
        zaya_coll_results_free(&child);
        zaya_profile_free(&prof);
        return st;
    }
    if (world > max_ranks) max_ranks = world;
    /* the mpirun rows after the in-process ones (the writer groups them by collective) */
    for (int i = 0; i < child.n && st == ZAYA_OK; i++) st = add_row(&prof.collectives, &child.rows[i]);
    zaya_coll_results_free(&child);

    a.threads = zaya_threads_init(a.threads);
    zaya_mem_run *mem = calloc(1, sizeof *mem);
    if (!mem && st == ZAYA_OK) st = zaya_error_set(ZAYA_ENOMEM, "bench all: memory results");
    if (st == ZAYA_OK) {
        fprintf(out, "# memory: STREAM, %d thread(s) max\n", a.threads);
        zaya_mem_plan mp;
        zaya_mem_plan_default(&mp);
        mp.max_threads = a.threads;
        mp.ntimes = a.quick ? 4 : 10;
        mp.ws_sweep = 0;
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/mem", a.outdir);
        st = zaya_bench_mem_run(&mp, mem, out);
        if (st == ZAYA_OK) st = zaya_bench_mem_write(mem, dir);
        if (st == ZAYA_OK) prof.memory = mem->stream[mem->best];
        zaya_progress_update(&prog, ++done, "memory");
    }
    free(mem);
    if (st == ZAYA_OK) {
        fprintf(out, "# gemm: square sizes and model shape classes, f32 and bf16\n");
        st = run_gemm(&a, out, &prof, &prog, &done);
    }
    if (st == ZAYA_OK) {
        zaya_progress_finish(&prog, NULL);
        machine_info(&prof.machine, a.threads, max_ranks);
        char path[4096];
        st = zaya_path_join(path, sizeof path, a.outdir, "profile.json");
        if (st == ZAYA_OK) st = zaya_profile_write_file(&prof, path);
        if (st == ZAYA_OK) {
            fprintf(out, "# profile: gemm peak f32 %.1f, bf16 %.1f GFLOP/s; triad %.2f GB/s; collectives up to %d ranks\n",
                    prof.peak_gflops[0], prof.peak_gflops[1], prof.memory.best_GBps[ZAYA_MEM_TRIAD], max_ranks);
            fprintf(out, "# bench all took %.1f s; profile written to %s\n", zaya_now_s() - t0, path);
        }
    }
    zaya_profile_free(&prof);
    return st;
}
