/* zaya bench all: a short run of the machine benchmarks (collectives, memory, GEMM) that writes the
 * machine profile (docs/profile-format.md) the sizing tool reads with --hw DIR/profile.json.
 *
 * Collectives: outside mpirun, this process has a world of one rank (latency of local copies only),
 * so the command first launches `zaya bench coll` under `mpirun -np 2` (and 4, oversubscribed) when
 * mpirun exists and collects their JSON; then it measures world 1 in-process. Under mpirun every
 * rank joins the collective part and rank 0 alone goes on to memory and GEMM after MPI is finalised,
 * so idle ranks polling in MPI do not steal the cores being measured. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/sysinfo.h"
#include "zaya/bench.h"
#include "zaya/bench_coll.h"
#include "zaya/bench_gemm.h"
#include "zaya/bench_mem.h"
#include "zaya/dist.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/proc.h"
#include "zaya/progress.h"
#include "zaya/threads.h"
#include "zaya/timer.h"

#ifndef ZAYA_VERSION_STRING
#define ZAYA_VERSION_STRING "unknown"
#endif
#define COLL_LIST "allreduce,reducescatter,allgather,broadcast"

typedef struct all_opts {
    const char *outdir, *mpirun;
    int quick, threads, mpi;
} all_opts;

static int under_mpirun(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

/* mpirun on PATH (or an explicit path), else NULL. */
static const char *find_mpirun(const char *want, char *buf, size_t cap) {
    return zaya_proc_which(want ? want : "mpirun", buf, cap) ? buf : NULL;
}

/* Appends the out-of-place rows of a `zaya bench coll` coll.json to the profile's collectives. */
static zaya_status collect_child(const char *path, cJSON *colls, int *max_ranks) {
    cJSON *root = NULL;
    ZAYA_TRY(zaya_json_load_file(path, &root));
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(root, "results");
    zaya_status st = cJSON_IsArray(rows) ? ZAYA_OK : zaya_error_set(ZAYA_EFORMAT, "%s: missing 'results'", path);
    const cJSON *e;
    int i = 0;
    cJSON_ArrayForEach(e, rows) {
        if (st != ZAYA_OK) break;
        const char *coll = NULL, *place = NULL, *dtype = NULL, *op = NULL;
        double ranks = 0, bytes = 0, t = 0, alg = 0, bus = 0;
        const cJSON *oop = cJSON_GetObjectItemCaseSensitive(e, "out_of_place");
        st = zaya_json_get_str(e, "coll", &coll, 1);
        if (st == ZAYA_OK) st = zaya_json_get_str(e, "placement", &place, 1);
        if (st == ZAYA_OK) st = zaya_json_get_str(e, "dtype", &dtype, 1);
        if (st == ZAYA_OK) st = zaya_json_get_str(e, "op", &op, 1);
        if (st == ZAYA_OK) st = zaya_json_get_f64(e, "ranks", &ranks, 1);
        if (st == ZAYA_OK) st = zaya_json_get_f64(e, "bytes", &bytes, 1);
        if (st == ZAYA_OK && !cJSON_IsObject(oop)) st = zaya_error_set(ZAYA_EFORMAT, "missing 'out_of_place'");
        if (st == ZAYA_OK) st = zaya_json_get_f64(oop, "time_us", &t, 1);
        if (st == ZAYA_OK) st = zaya_json_get_f64(oop, "algbw_GBps", &alg, 1);
        if (st == ZAYA_OK) st = zaya_json_get_f64(oop, "busbw_GBps", &bus, 1);
        if (st != ZAYA_OK) {
            st = zaya_error_context(st, "%s: results[%d]", path, i);
            break;
        }
        cJSON *arr = cJSON_GetObjectItemCaseSensitive(colls, coll);
        if (!arr) arr = cJSON_AddArrayToObject(colls, coll);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "ranks", ranks);
        cJSON_AddNumberToObject(o, "bytes", bytes);
        cJSON_AddNumberToObject(o, "time_us", t);
        cJSON_AddNumberToObject(o, "algbw_GBps", alg);
        cJSON_AddNumberToObject(o, "busbw_GBps", bus);
        cJSON_AddStringToObject(o, "dtype", dtype);
        cJSON_AddStringToObject(o, "op", op);
        cJSON_AddStringToObject(o, "placement", place);
        cJSON_AddItemToArray(arr, o);
        if ((int)ranks > *max_ranks) *max_ranks = (int)ranks;
        i++;
    }
    cJSON_Delete(root);
    return st;
}

/* `zaya bench coll` under mpirun with np ranks; its output goes to DIR/coll-npN.log. */
static zaya_status run_child(const all_opts *a, int np, cJSON *colls, int *max_ranks) {
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
static zaya_status run_coll_inprocess(const all_opts *a, cJSON **out, int *world_size, int *rank) {
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
    zaya_coll_results res = {0};
    if (st == ZAYA_OK) st = zaya_bench_coll_run(world, &plan, &res, *rank == 0 ? stdout : NULL);
    if (st == ZAYA_OK && *rank == 0) {
        *out = zaya_bench_coll_profile_json(&res);
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/coll", a->outdir);
        st = zaya_bench_coll_write(&res, &plan, *world_size, dir);
    }
    zaya_coll_results_free(&res);
    zaya_dist_finalize(world);
    return st;
}

/* GEMM: square sizes and the model's shape classes, through zaya_matmul, per dtype. */
static zaya_status run_gemm(const all_opts *a, cJSON *gemm, double peak[2], zaya_progress *prog, int64_t *done) {
    zaya_bench_opts o = {1, a->quick ? 2 : 5, 1e-3, 0};
    static const int64_t pq[] = {1024}, pf[] = {1024, 1536, 2048};
    FILE *csv = NULL;
    char path[4096];
    ZAYA_TRY(zaya_path_join(path, sizeof path, a->outdir, "gemm.csv"));
    csv = fopen(path, "w");
    if (!csv) return zaya_error_set(ZAYA_EIO, "cannot write %s", path);
    fprintf(csv, "dtype,class,name,pass,m,n,k,gflops,direct_gflops,pct_peak\n");
    printf("%-5s %-8s %-18s %-6s %6s %6s %6s %9s %9s %6s\n", "dtype", "class", "name", "pass", "m", "n", "k", "GF/s",
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
            printf("%-5s %-8s %-18s %-6s %6lld %6lld %6lld %9.1f %9.1f %5.0f%%\n", dt, sh[i].group, sh[i].name,
                   sh[i].pass, (long long)sh[i].m, (long long)sh[i].n, (long long)sh[i].k, r.gflops, r.direct_gflops,
                   r.pct_peak);
            fflush(stdout);
            fprintf(csv, "%s,%s,%s,%s,%lld,%lld,%lld,%.6g,%.6g,%.4g\n", dt, sh[i].group, sh[i].name, sh[i].pass,
                    (long long)sh[i].m, (long long)sh[i].n, (long long)sh[i].k, r.gflops, r.direct_gflops, r.pct_peak);
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "dtype", dt);
            cJSON_AddNumberToObject(e, "m", (double)sh[i].m);
            cJSON_AddNumberToObject(e, "n", (double)sh[i].n);
            cJSON_AddNumberToObject(e, "k", (double)sh[i].k);
            cJSON_AddNumberToObject(e, "gflops", r.gflops);
            cJSON_AddStringToObject(e, "class", sh[i].group);
            cJSON_AddStringToObject(e, "name", sh[i].name);
            cJSON_AddStringToObject(e, "pass", sh[i].pass);
            cJSON_AddBoolToObject(e, "trans_a", sh[i].trans_a);
            cJSON_AddBoolToObject(e, "trans_b", sh[i].trans_b);
            cJSON_AddNumberToObject(e, "direct_gflops", r.direct_gflops);
            cJSON_AddItemToArray(gemm, e);
        }
        free(sh);
        zaya_progress_update(prog, ++*done, d ? "gemm bf16" : "gemm f32");
    }
    fclose(csv);
    return st;
}

static cJSON *machine_json(int threads, int world) {
    cJSON *m = cJSON_CreateObject();
    char host[256] = "unknown", model[256];
    gethostname(host, sizeof host - 1);
    zaya_sysinfo_cpu_model(model, sizeof model);
    char created[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    cJSON_AddStringToObject(m, "hostname", host);
    cJSON_AddStringToObject(m, "cpu_model", model);
    cJSON_AddNumberToObject(m, "cores", (double)sysconf(_SC_NPROCESSORS_ONLN));
    cJSON_AddNumberToObject(m, "threads", threads);
    cJSON_AddNumberToObject(m, "llc_bytes", (double)zaya_mem_llc_bytes());
    cJSON_AddNumberToObject(m, "world_size", world);
    cJSON_AddStringToObject(m, "created", created);
    cJSON_AddStringToObject(m, "zaya_version", ZAYA_VERSION_STRING);
    return m;
}

static const char *g_details =
    "Runs, in order: collectives (outside mpirun: `zaya bench coll` under `mpirun -np 2` and `-np 4\n"
    "--oversubscribe` when mpirun is found, then world 1 in-process, which measures latency only;\n"
    "under mpirun: every rank in-process, then only rank 0 continues), memory (STREAM at 1, 2, 4 ...\n"
    "threads, no working-set sweep), and GEMM (square sizes and the ZAYA1 model shape classes, f32 and\n"
    "bf16, through zaya_matmul, with the oneDNN peak). Writes profile.json (docs/profile-format.md; read\n"
    "it with `zaya size predict ... --hw DIR/profile.json`), gemm.csv, mem/, coll/, coll-npN/ and their\n"
    "logs. --quick keeps the whole run under about a minute.";

int zaya_cmd_bench_all(int argc, char **argv) {
    all_opts a = {.outdir = "out/bench-all", .mpi = 1};
    const char *mpirun = NULL;
    zaya_flag flags[] = {
        ZAYA_FLAG_THREADS(&a.threads),
        {"quick", 0, ZAYA_FLAG_BOOL, &a.quick, NULL, "shorter sweeps and fewer samples (about a minute)"},
        {"mpi", 0, ZAYA_FLAG_INT, &a.mpi, "0|1", "launch the 2- and 4-rank collective runs under mpirun (default 1)"},
        {"mpirun", 0, ZAYA_FLAG_STRING, &mpirun, "PATH", "mpirun to use (default: the one on PATH)"},
        ZAYA_FLAG_OUTDIR(&a.outdir, "out/bench-all"),
    };
    zaya_cmd_spec spec = {"bench all", "short run of mem, gemm and coll; writes the machine profile.json", "[options]",
                          g_details, flags, (int)(sizeof flags / sizeof flags[0])};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos) return zaya_flags_usage_error(&spec, "unexpected argument '%s'", args.pos[0]);
    if (a.threads < 0) return zaya_flags_usage_error(&spec, "--threads must be >= 0 (got %d)", a.threads);
    if (a.mpi != 0 && a.mpi != 1) return zaya_flags_usage_error(&spec, "--mpi takes 0 or 1 (got %d)", a.mpi);
    char mbuf[4096];
    int mpi_world = under_mpirun();
    a.mpirun = a.mpi && !mpi_world ? find_mpirun(mpirun, mbuf, sizeof mbuf) : NULL;
    if (mpirun && a.mpi && !a.mpirun) {
        return zaya_cli_error("bench all", "--mpirun %s is not an executable", mpirun);
    }
    zaya_status st = zaya_mkdir_p(a.outdir);
    if (st != ZAYA_OK) {
        return zaya_cli_error("bench all", NULL);
    }
    double t0 = zaya_now_s();
    cJSON *colls = NULL;
    int world = 1, rank = 0, max_ranks = 1;
    zaya_progress prog;
    int64_t done = 0;
    zaya_progress_init(&prog, "bench all", "part", (a.mpirun ? 2 : 0) + 1 + 1 + 2);
    /* Children first: this process must not hold an MPI singleton while mpirun starts. */
    cJSON *child = cJSON_CreateObject();
    for (int np = 2; np <= 4 && a.mpirun && st == ZAYA_OK; np *= 2) {
        printf("# collectives: mpirun -np %d (log in %s/coll-np%d.log)\n", np, a.outdir, np);
        fflush(stdout);
        zaya_status cs = run_child(&a, np, child, &max_ranks);
        if (cs != ZAYA_OK) fprintf(stderr, "zaya bench all: warning: %s; continuing\n", zaya_error_message());
        zaya_progress_update(&prog, ++done, np == 2 ? "coll np 2" : "coll np 4");
    }
    if (!a.mpirun && !mpi_world && a.mpi)
        printf("# note: mpirun not found: collectives are measured on one rank only (latency of local copies)\n");
    printf("# collectives: in-process\n");
    fflush(stdout);
    st = run_coll_inprocess(&a, &colls, &world, &rank);
    zaya_progress_update(&prog, ++done, "coll in-process");
    if (rank != 0) {
        cJSON_Delete(child);
        if (st != ZAYA_OK) zaya_cli_error("bench all", NULL);
        return st == ZAYA_OK ? 0 : 1;
    }
    if (world > max_ranks) max_ranks = world;
    if (st == ZAYA_OK) { /* merge the mpirun rows after the in-process ones */
        cJSON *arr;
        cJSON_ArrayForEach(arr, child) {
            cJSON *dst = cJSON_GetObjectItemCaseSensitive(colls, arr->string);
            if (!dst) dst = cJSON_AddArrayToObject(colls, arr->string);
            cJSON *e;
            cJSON_ArrayForEach(e, arr) cJSON_AddItemToArray(dst, cJSON_Duplicate(e, 1));
        }
    }
    cJSON_Delete(child);

    a.threads = zaya_threads_init(a.threads);
    static zaya_mem_run mem;
    if (st == ZAYA_OK) {
        printf("# memory: STREAM, %d thread(s) max\n", a.threads);
        zaya_mem_plan mp;
        zaya_mem_plan_default(&mp);
        mp.max_threads = a.threads;
        mp.ntimes = a.quick ? 4 : 10;
        mp.ws_sweep = 0;
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/mem", a.outdir);
        st = zaya_bench_mem_run(&mp, &mem, stdout);
        if (st == ZAYA_OK) st = zaya_bench_mem_write(&mem, dir);
        zaya_progress_update(&prog, ++done, "memory");
    }
    cJSON *gemm = cJSON_CreateArray();
    double peak[2] = {0, 0};
    if (st == ZAYA_OK) {
        printf("# gemm: square sizes and model shape classes, f32 and bf16\n");
        st = run_gemm(&a, gemm, peak, &prog, &done);
    }
    if (st == ZAYA_OK) {
        zaya_progress_finish(&prog, NULL);
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "format", "zaya-profile");
        cJSON_AddNumberToObject(root, "version", 1);
        cJSON_AddItemToObject(root, "machine", machine_json(a.threads, max_ranks));
        cJSON_AddItemToObject(root, "gemm", gemm);
        gemm = NULL;
        cJSON *pk = cJSON_AddObjectToObject(root, "gemm_peak_gflops");
        cJSON_AddNumberToObject(pk, "f32", peak[0]);
        cJSON_AddNumberToObject(pk, "bf16", peak[1]);
        cJSON_AddItemToObject(root, "memory", zaya_bench_mem_profile_json(&mem.stream[mem.best]));
        cJSON_AddItemToObject(root, "collectives", colls);
        colls = NULL;
        char path[4096];
        st = zaya_path_join(path, sizeof path, a.outdir, "profile.json");
        if (st == ZAYA_OK) st = zaya_json_write_file(path, root, 1);
        cJSON_Delete(root);
        if (st == ZAYA_OK) {
            printf("# profile: gemm peak f32 %.1f, bf16 %.1f GFLOP/s; triad %.2f GB/s; collectives up to %d ranks\n",
                   peak[0], peak[1], mem.stream[mem.best].best_GBps[ZAYA_MEM_TRIAD], max_ranks);
            printf("# bench all took %.1f s; profile written to %s\n", zaya_now_s() - t0, path);
        }
    }
    cJSON_Delete(gemm);
    cJSON_Delete(colls);
    if (st != ZAYA_OK) {
        return zaya_cli_error("bench all", NULL);
    }
    return 0;
}
