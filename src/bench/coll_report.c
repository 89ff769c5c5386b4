/* Results of `zaya bench coll`: per-collective summary, coll.json / coll.csv, plots, and the
 * machine profile's "collectives" object. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zaya/bench_coll.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/log.h"
#include "zaya/plot.h"

static int same_group(const zaya_coll_result *a, const zaya_coll_result *b) {
    return a->coll == b->coll && a->nranks == b->nranks && a->spread == b->spread && a->dtype == b->dtype &&
           a->op == b->op && a->blocking == b->blocking && a->cycle == b->cycle;
}

static double median(double *v, int n) {
    if (n == 0) return 0;
    for (int i = 1; i < n; i++) /* insertion sort: a few dozen sizes at most */
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int zaya_coll_summarize(const zaya_coll_results *r, zaya_coll_summary *out, int cap) {
    int ns = 0;
    for (int i = 0; i < r->n && ns < cap;) {
        int j = i;
        while (j < r->n && same_group(&r->rows[i], &r->rows[j])) j++;
        zaya_coll_summary s = {.coll = r->rows[i].coll, .nranks = r->rows[i].nranks, .spread = r->rows[i].spread,
                               .dtype = r->rows[i].dtype, .op = r->rows[i].op,
                               .blocking = r->rows[i].blocking, .cycle = r->rows[i].cycle};
        s.latency_bytes = r->rows[i].bytes;
        s.latency_us = r->rows[i].oop.time_us;
        s.latency_p50_us = r->rows[i].oop.p50_us;
        for (int k = i; k < j; k++) {
            const zaya_coll_result *row = &r->rows[k];
            if (row->oop.busbw > s.peak_busbw) {
                s.peak_busbw = row->oop.busbw;
                s.peak_bytes = row->bytes;
            }
            s.wrong += (row->oop.wrong > 0 ? row->oop.wrong : 0) + (row->ip.wrong > 0 ? row->ip.wrong : 0);
        }
        for (int k = i; k < j; k++)
            if (r->rows[k].oop.busbw >= 0.9 * s.peak_busbw) {
                s.saturation_bytes = r->rows[k].bytes;
                break;
            }
        double *ratios = malloc(sizeof(double) * (size_t)(2 * (j - i)) + 1);
        if (ratios) {
            int na = 0, nl = 0;
            double *large = ratios + (j - i);
            for (int k = i; k < j; k++) {
                if (r->rows[k].bare_us <= 0) continue;
                double q = r->rows[k].oop.time_us / r->rows[k].bare_us;
                ratios[na++] = q;
                if (r->rows[k].bytes >= 65536) large[nl++] = q;
            }
            s.overhead_ratio = median(ratios, na);
            s.overhead_ratio_large = median(large, nl);
            free(ratios);
        }
        out[ns++] = s;
        i = j;
    }
    return ns;
}

static void fmt_bytes(char *buf, size_t cap, int64_t b) {
    if (b >= (1ll << 30) && b % (1ll << 30) == 0) snprintf(buf, cap, "%lldG", (long long)(b >> 30));
    else if (b >= (1ll << 20) && b % (1ll << 20) == 0) snprintf(buf, cap, "%lldM", (long long)(b >> 20));
    else if (b >= (1ll << 10) && b % (1ll << 10) == 0) snprintf(buf, cap, "%lldK", (long long)(b >> 10));
    else snprintf(buf, cap, "%lld", (long long)b);
}

/* A ratio column: "-" where nothing was measured (no bare loop, no size >= 64K), never a made-up 0. */
static void fmt_ratio(char *out, size_t cap, double r) {
    if (r > 0) snprintf(out, cap, "%.3f", r);
    else snprintf(out, cap, "-");
}

void zaya_coll_print_summary(FILE *f, const zaya_coll_summary *s, int n) {
    int cycles = 0; /* -N: a cycle column */
    for (int i = 0; i < n; i++) cycles |= s[i].cycle > 1;
    fprintf(f, "# Summary (out-of-place; saturation = smallest size reaching 90%% of peak busbw; zaya/bare = median "
               "time ratio against a bare MPI loop, all sizes | sizes >= 64K)\n");
    fprintf(f, "# %-13s %5s %6s %5s %5s %2s %9s %9s %6s %11s %6s %6s %7s %7s %6s%s\n", "collective", "ranks", "place",
            "type", "redop", "-z", "lat(us)", "lat p50", "@size", "peak(GB/s)", "@size", "sat", "z/bare", ">=64K", "#wrong",
            cycles ? "  cycle" : "");
    for (int i = 0; i < n; i++) {
        char lb[32], pb[32], sb[32];
        fmt_bytes(lb, sizeof lb, s[i].latency_bytes);
        fmt_bytes(pb, sizeof pb, s[i].peak_bytes);
        fmt_bytes(sb, sizeof sb, s[i].saturation_bytes);
        char cyc[16] = "", ra[16], rl[16];
        if (cycles) snprintf(cyc, sizeof cyc, "  %5d", s[i].cycle);
        fmt_ratio(ra, sizeof ra, s[i].overhead_ratio);
        fmt_ratio(rl, sizeof rl, s[i].overhead_ratio_large);
        fprintf(f, "  %-13s %5d %6s %5s %5s %2d %9.2f %9.2f %6s %11.3f %6s %6s %7s %7s %6lld%s\n",
                zaya_coll_name(s[i].coll), s[i].nranks, zaya_coll_placement_name(s[i].spread), zaya_dist_dtype_name(s[i].dtype),
                zaya_coll_is_reduction(s[i].coll) ? zaya_redop_name(s[i].op) : "none", s[i].blocking, s[i].latency_us,
                s[i].latency_p50_us, lb,
                s[i].peak_busbw, pb, sb, ra, rl, (long long)s[i].wrong, cyc);
    }
}

static cJSON *timing_json(const zaya_coll_timing *t) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "time_us", t->time_us);
    cJSON_AddNumberToObject(o, "min_us", t->min_us);
    cJSON_AddNumberToObject(o, "max_us", t->max_us);
    cJSON_AddNumberToObject(o, "avg_us", t->avg_us);
    cJSON_AddNumberToObject(o, "rank0_us", t->rank0_us);
    cJSON_AddNumberToObject(o, "p50_us", t->p50_us);
    cJSON_AddNumberToObject(o, "p99_us", t->p99_us);
    cJSON_AddNumberToObject(o, "algbw_GBps", t->algbw);
    cJSON_AddNumberToObject(o, "busbw_GBps", t->busbw);
    cJSON_AddNumberToObject(o, "calls", (double)t->calls);
    cJSON_AddNumberToObject(o, "wrong", (double)t->wrong);
    return o;
}

/* coll.json's object (the -J report adds its context to it). */
static cJSON *coll_json(const zaya_coll_results *r, const zaya_coll_plan *p, int world, const zaya_coll_summary *sum,
                        int nsum, const char *format) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", format);
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddStringToObject(root, "backend", p->backend == ZAYA_COLL_BACKEND_NCCL ? "nccl" : zaya_dist_backend_name());
    cJSON_AddNumberToObject(root, "gpus_per_process", p->backend == ZAYA_COLL_BACKEND_NCCL ? (p->ngpus > 0 ? p->ngpus : 1) : 0);
    cJSON_AddNumberToObject(root, "world_size", world);
    cJSON *o = cJSON_AddObjectToObject(root, "options");
    cJSON_AddNumberToObject(o, "min_bytes", (double)p->opts.min_bytes);
    cJSON_AddNumberToObject(o, "max_bytes", (double)p->opts.max_bytes);
    cJSON_AddNumberToObject(o, "step_factor", p->opts.step_factor);
    cJSON_AddNumberToObject(o, "step_bytes", (double)p->opts.step_bytes);
    cJSON_AddNumberToObject(o, "iters", p->opts.iters);
    cJSON_AddNumberToObject(o, "warmup", p->opts.warmup);
    cJSON_AddNumberToObject(o, "check_iters", p->opts.check_iters);
    cJSON_AddNumberToObject(o, "blocking", p->opts.blocking);
    cJSON_AddNumberToObject(o, "seed", (double)p->opts.seed);
    cJSON_AddBoolToObject(o, "sweep", p->sweep);
    cJSON_AddNumberToObject(o, "average", p->opts.average);
    cJSON_AddStringToObject(o, "average_name", zaya_coll_average_name(p->opts.average));
    cJSON_AddNumberToObject(o, "agg_iters", p->opts.agg_iters);
    cJSON_AddNumberToObject(o, "report_cputime", p->opts.report_cputime);
    cJSON_AddStringToObject(o, "time_kind", !p->opts.report_cputime ? "wall"
                                            : p->backend == ZAYA_COLL_BACKEND_NCCL ? "host_enqueue" : "process_cpu");
    int cycles = p->cycles == ZAYA_COLL_CYCLES_UNTIL_STOPPED ? 0 : (p->cycles ? p->cycles : 1);
    cJSON_AddNumberToObject(o, "run_cycles", cycles);
    cJSON_AddNumberToObject(o, "ngpus", p->ngpus > 0 ? p->ngpus : 1);
    cJSON_AddNumberToObject(o, "nthreads", 1);
    cJSON_AddNumberToObject(o, "cudagraph", 0);
    cJSON_AddBoolToObject(o, "inject_wrong", p->opts.inject_wrong);
    cJSON_AddNumberToObject(root, "cycles", r->cycles);
    cJSON_AddBoolToObject(root, "stopped", r->stopped);
    int64_t wrong = 0;
    cJSON *rows = cJSON_AddArrayToObject(root, "results");
    for (int i = 0; i < r->n; i++) {
        const zaya_coll_result *x = &r->rows[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "coll", zaya_coll_name(x->coll));
        cJSON_AddNumberToObject(e, "ranks", x->nranks);
        cJSON_AddStringToObject(e, "placement", zaya_coll_placement_name(x->spread));
        cJSON_AddStringToObject(e, "dtype", zaya_dist_dtype_name(x->dtype));
        cJSON_AddStringToObject(e, "op", zaya_coll_is_reduction(x->coll) ? zaya_redop_name(x->op) : "none");
        cJSON_AddNumberToObject(e, "root", x->root);
        cJSON_AddNumberToObject(e, "bytes", (double)x->bytes);
        cJSON_AddNumberToObject(e, "count", (double)x->count);
        cJSON_AddNumberToObject(e, "blocking", x->blocking);
        cJSON_AddNumberToObject(e, "cycle", x->cycle);
        cJSON_AddItemToObject(e, "out_of_place", timing_json(&x->oop));
        cJSON_AddItemToObject(e, "in_place", timing_json(&x->ip));
        cJSON_AddNumberToObject(e, "bare_mpi_us", x->bare_us);
        cJSON_AddNumberToObject(e, "overhead_ratio", x->bare_us > 0 ? x->oop.time_us / x->bare_us : 0.0);
        cJSON_AddItemToArray(rows, e);
        wrong += (x->oop.wrong > 0 ? x->oop.wrong : 0) + (x->ip.wrong > 0 ? x->ip.wrong : 0);
    }
    cJSON_AddNumberToObject(root, "wrong_total", (double)wrong);
    cJSON *sa = cJSON_AddArrayToObject(root, "summary");
    for (int i = 0; i < nsum; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "coll", zaya_coll_name(sum[i].coll));
        cJSON_AddNumberToObject(e, "ranks", sum[i].nranks);
        cJSON_AddStringToObject(e, "placement", zaya_coll_placement_name(sum[i].spread));
        cJSON_AddStringToObject(e, "dtype", zaya_dist_dtype_name(sum[i].dtype));
        cJSON_AddStringToObject(e, "op", zaya_coll_is_reduction(sum[i].coll) ? zaya_redop_name(sum[i].op) : "none");
        cJSON_AddNumberToObject(e, "blocking", sum[i].blocking);
        cJSON_AddNumberToObject(e, "cycle", sum[i].cycle);
        cJSON_AddNumberToObject(e, "latency_us", sum[i].latency_us);
        cJSON_AddNumberToObject(e, "latency_p50_us", sum[i].latency_p50_us);
        cJSON_AddNumberToObject(e, "latency_bytes", (double)sum[i].latency_bytes);
        cJSON_AddNumberToObject(e, "peak_busbw_GBps", sum[i].peak_busbw);
        cJSON_AddNumberToObject(e, "peak_bytes", (double)sum[i].peak_bytes);
        cJSON_AddNumberToObject(e, "saturation_bytes", (double)sum[i].saturation_bytes);
        cJSON_AddNumberToObject(e, "overhead_ratio", sum[i].overhead_ratio);
        if (sum[i].overhead_ratio_large > 0) cJSON_AddNumberToObject(e, "overhead_ratio_ge64K", sum[i].overhead_ratio_large);
        else cJSON_AddNullToObject(e, "overhead_ratio_ge64K"); /* no size >= 64K ran */
        cJSON_AddNumberToObject(e, "wrong", (double)sum[i].wrong);
        cJSON_AddItemToArray(sa, e);
    }
    return root;
}

static zaya_status write_json(const zaya_coll_results *r, const zaya_coll_plan *p, int world, const char *path,
                              const zaya_coll_summary *sum, int nsum) {
    cJSON *root = coll_json(r, p, world, sum, nsum, "zaya-bench-coll");
    zaya_status st = zaya_json_write_file(path, root, 1);
    cJSON_Delete(root);
    return st;
}

static zaya_status write_csv(const zaya_coll_results *r, const char *path) {
    size_t cap = 512 + (size_t)r->n * 512, len = 0;
    char *buf = malloc(cap);
    if (!buf) return zaya_error_set(ZAYA_ENOMEM, "bench coll: out of memory writing '%s'", path);
    len += (size_t)snprintf(buf + len, cap - len,
                            "coll,ranks,placement,dtype,op,root,bytes,count,"
                            "oop_time_us,oop_min_us,oop_max_us,oop_p50_us,oop_p99_us,oop_algbw_GBps,oop_busbw_GBps,"
                            "oop_wrong,ip_time_us,ip_min_us,ip_max_us,ip_p50_us,ip_p99_us,ip_algbw_GBps,ip_busbw_GBps,"
                            "ip_wrong,bare_mpi_us,overhead_ratio,blocking,cycle\n");
    for (int i = 0; i < r->n; i++) {
        const zaya_coll_result *x = &r->rows[i];
        const zaya_coll_timing *t[2] = {&x->oop, &x->ip};
        len += (size_t)snprintf(buf + len, cap - len, "%s,%d,%s,%s,%s,%d,%lld,%lld", zaya_coll_name(x->coll),
                                x->nranks, zaya_coll_placement_name(x->spread), zaya_dist_dtype_name(x->dtype),
                                zaya_coll_is_reduction(x->coll) ? zaya_redop_name(x->op) : "none", x->root,
                                (long long)x->bytes, (long long)x->count);
        for (int k = 0; k < 2; k++)
            len += (size_t)snprintf(buf + len, cap - len, ",%.3f,%.3f,%.3f,%.3f,%.3f,%.6f,%.6f,%lld", t[k]->time_us,
                                    t[k]->min_us, t[k]->max_us, t[k]->p50_us, t[k]->p99_us, t[k]->algbw, t[k]->busbw,
                                    (long long)t[k]->wrong);
        len += (size_t)snprintf(buf + len, cap - len, ",%.3f,%.4f,%d,%d\n", x->bare_us,
                                x->bare_us > 0 ? x->oop.time_us / x->bare_us : 0.0, x->blocking, x->cycle);
    }
    zaya_status st = zaya_write_file_atomic(path, buf, len);
    free(buf);
    return st;
}

/* One PNG per collective: one line per (ranks, placement, dtype, op) group. */
static void write_plots(const zaya_coll_results *r, const char *dir) {
    int n = r->n;
    double *x = malloc(sizeof(double) * (size_t)(n + 1) * 2), *y = x ? x + n + 1 : NULL;
    double *xl = malloc(sizeof(double) * (size_t)(n + 1) * 2), *yl = xl ? xl + n + 1 : NULL;
    zaya_plot_series *bw = malloc(sizeof *bw * (size_t)(n + 1)), *lat = malloc(sizeof *lat * (size_t)(n + 1));
    char(*titles)[96] = malloc(sizeof *titles * (size_t)(n + 1));
    if (!x || !xl || !bw || !lat || !titles) goto done;
    /* -N: the plots show the last cycle (the table, coll.json and coll.csv have every one). */
    int last = 0;
    for (int i = 0; i < n; i++) last = r->rows[i].cycle > last ? r->rows[i].cycle : last;
    int multi = last > 1;
    for (int coll = 0; coll < ZAYA_COLL_COUNT; coll++) {
        int nb = 0, used = 0, usedl = 0;
        for (int i = 0; i < n;) {
            int j = i;
            while (j < n && same_group(&r->rows[i], &r->rows[j])) j++;
            if (r->rows[i].coll == (zaya_coll)coll && r->rows[i].cycle == last) {
                const zaya_coll_result *g = &r->rows[i];
                char cyc[24] = "";
                if (multi) snprintf(cyc, sizeof cyc, " cycle %d", g->cycle);
                snprintf(titles[nb], sizeof titles[nb], "%d ranks %s %s%s%s -z %d%s", g->nranks,
                         zaya_coll_placement_name(g->spread), zaya_dist_dtype_name(g->dtype),
                         zaya_coll_is_reduction(g->coll) ? " " : "",
                         zaya_coll_is_reduction(g->coll) ? zaya_redop_name(g->op) : "", g->blocking, cyc);
                bw[nb] = (zaya_plot_series){titles[nb], x + used, y + used, 0};
                lat[nb] = (zaya_plot_series){titles[nb], xl + usedl, yl + usedl, 0};
                for (int k = i; k < j; k++) {
                    x[used] = (double)r->rows[k].bytes;
                    y[used++] = r->rows[k].oop.busbw;
                    bw[nb].n++;
                    if (r->rows[k].bytes <= 65536) {
                        xl[usedl] = (double)r->rows[k].bytes;
                        yl[usedl++] = r->rows[k].oop.time_us;
                        lat[nb].n++;
                    }
                }
                nb++;
            }
            i = j;
        }
        if (!nb) continue;
        char path[4096], title[128];
        snprintf(title, sizeof title, "%s: bus bandwidth vs message size", zaya_coll_name((zaya_coll)coll));
        zaya_plot_opts o = {title, "message size (bytes)", "busbw (GB/s)", ZAYA_PLOT_LOGX_BYTES, 0, 1};
        char name[64];
        snprintf(name, sizeof name, "coll_%s_busbw.png", zaya_coll_name((zaya_coll)coll));
        int any_bw = 0; /* one rank moves no bus bytes: an all-zero plot says nothing */
        for (int k = 0; k < used; k++) any_bw |= y[k] > 0;
        if (any_bw && zaya_path_join(path, sizeof path, dir, name) == ZAYA_OK && zaya_plot_lines(path, &o, bw, nb) != ZAYA_OK)
            ZAYA_WARN("plot skipped: %s", zaya_error_message());
        snprintf(title, sizeof title, "%s: latency at small sizes (<= 64 KiB)", zaya_coll_name((zaya_coll)coll));
        zaya_plot_opts ol = {title, "message size (bytes)", "time (us)", ZAYA_PLOT_LOGX_BYTES, 1, 1};
        snprintf(name, sizeof name, "coll_%s_latency.png", zaya_coll_name((zaya_coll)coll));
        int any = 0;
        for (int s = 0; s < nb; s++) any |= lat[s].n > 0;
        if (any && zaya_path_join(path, sizeof path, dir, name) == ZAYA_OK &&
            zaya_plot_lines(path, &ol, lat, nb) != ZAYA_OK)
            ZAYA_WARN("plot skipped: %s", zaya_error_message());
    }
done:
    free(x);
    free(xl);
    free(bw);
    free(lat);
    free(titles);
}

zaya_status zaya_bench_coll_write(const zaya_coll_results *r, const zaya_coll_plan *p, int world, const char *dir) {
    ZAYA_TRY(zaya_mkdir_p(dir));
    char path[4096];
    int cap = r->n > 0 ? r->n : 1;
    zaya_coll_summary *sum = malloc(sizeof *sum * (size_t)cap);
    if (!sum) return zaya_error_set(ZAYA_ENOMEM, "bench coll: out of memory");
    int ns = zaya_coll_summarize(r, sum, cap);
    zaya_status st = zaya_path_join(path, sizeof path, dir, "coll.json");
    if (st == ZAYA_OK) st = write_json(r, p, world, path, sum, ns);
    free(sum);
    ZAYA_TRY(st);
    ZAYA_TRY(zaya_path_join(path, sizeof path, dir, "coll.csv"));
    ZAYA_TRY(write_csv(r, path));
    write_plots(r, dir);
    return ZAYA_OK;
}

/* ---- the -J report ---- */

static void iso_utc(char *buf, size_t cap, double unix_s) {
    time_t t = (time_t)unix_s;
    struct tm tm;
    gmtime_r(&t, &tm);
    char base[32];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, cap, "%s.%03dZ", base, (int)((unix_s - (double)t) * 1000.0));
}

/* Environment variables that change how collectives run (rank 0's view). */
static int relevant_env(const char *kv) {
    static const char *prefixes[] = {"NCCL_", "OMPI_MCA_", "UCX_", "FI_", "CUDA_", "HIP_", "ROCR_",
                                     "HSA_", "RCCL_", "OMP_", "ZAYA_", "MPICH_", "I_MPI_"};
    static const char *exact[] = {"OMPI_COMM_WORLD_SIZE=", "OMPI_COMM_WORLD_LOCAL_SIZE=", "OMPI_UNIVERSE_SIZE="};
    /* What mpirun itself sets for its daemons (addresses, session dirs, a transport key): not settings. */
    static const char *launcher[] = {"OMPI_MCA_orte_", "OMPI_MCA_ess", "OMPI_MCA_pmix", "OMPI_MCA_initial_wdir",
                                     "OMPI_MCA_shmem_RUNTIME_QUERY_hint", "PMIX_MCA_"};
    for (size_t i = 0; i < sizeof launcher / sizeof launcher[0]; i++)
        if (!strncmp(kv, launcher[i], strlen(launcher[i]))) return 0;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (!strncmp(kv, prefixes[i], strlen(prefixes[i]))) return 1;
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (!strncmp(kv, exact[i], strlen(exact[i]))) return 1;
    return 0;
}

extern char **environ;

zaya_status zaya_bench_coll_write_report(const zaya_coll_results *r, const zaya_coll_plan *p, int world,
                                         double start_s, double end_s, const char *path) {
    int cap = r->n > 0 ? r->n : 1;
    zaya_coll_summary *sum = malloc(sizeof *sum * (size_t)cap);
    if (!sum) return zaya_error_set(ZAYA_ENOMEM, "bench coll: out of memory");
    int ns = zaya_coll_summarize(r, sum, cap);
    cJSON *root = coll_json(r, p, world, sum, ns, "zaya-bench-coll-report");
    free(sum);
    char host[256] = "?", when[48];
    if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "?");
    cJSON_AddStringToObject(root, "hostname", host);
    cJSON *hosts = cJSON_AddArrayToObject(root, "hosts");
    for (int i = 0; i < r->ndevices; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = !strcmp(r->devices[i].host, r->devices[j].host);
        if (!seen) cJSON_AddItemToArray(hosts, cJSON_CreateString(r->devices[i].host));
    }
    iso_utc(when, sizeof when, start_s);
    cJSON_AddStringToObject(root, "start_time", when);
    iso_utc(when, sizeof when, end_s);
    cJSON_AddStringToObject(root, "end_time", when);
    cJSON_AddNumberToObject(root, "duration_s", end_s - start_s);
    cJSON *lib = cJSON_AddObjectToObject(root, "libraries");
    cJSON_AddStringToObject(lib, "mpi", zaya_dist_library_version());
    cJSON_AddStringToObject(lib, "mpi_standard", zaya_dist_mpi_standard());
    if (p->backend == ZAYA_COLL_BACKEND_NCCL) cJSON_AddStringToObject(lib, "nccl", zaya_nccl_version());
    else cJSON_AddNullToObject(lib, "nccl");
    cJSON *dev = cJSON_AddArrayToObject(root, "devices");
    for (int i = 0; i < r->ndevices; i++) {
        const zaya_coll_device *d = &r->devices[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "rank", d->rank);
        cJSON_AddStringToObject(e, "host", d->host);
        cJSON_AddNumberToObject(e, "pid", d->pid);
        cJSON_AddStringToObject(e, "kind", d->kind);
        cJSON_AddNumberToObject(e, "index", d->index);
        cJSON_AddStringToObject(e, "name", d->name);
        cJSON_AddItemToArray(dev, e);
    }
    cJSON *env = cJSON_AddObjectToObject(root, "env");
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || !relevant_env(*e)) continue;
        char name[256];
        size_t len = (size_t)(eq - *e) < sizeof name - 1 ? (size_t)(eq - *e) : sizeof name - 1;
        memcpy(name, *e, len);
        name[len] = 0;
        if (!cJSON_GetObjectItemCaseSensitive(env, name)) cJSON_AddStringToObject(env, name, eq + 1);
    }
    /* The command line, as typed and as one shell-quoted string. */
    cJSON *argv = cJSON_AddArrayToObject(root, "argv");
    size_t cl_cap = 64, cl_len = 0;
    for (int i = 0; i < p->argc; i++) cl_cap += 3 + 4 * strlen(p->argv[i]);
    char *cl = malloc(cl_cap);
    if (cl) cl_len = (size_t)snprintf(cl, cl_cap, "zaya bench coll");
    for (int i = 0; i < p->argc; i++) {
        const char *a = p->argv[i];
        cJSON_AddItemToArray(argv, cJSON_CreateString(a));
        if (!cl) continue;
        int plain = *a != 0;
        for (const char *c = a; *c; c++)
            if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./,:+@%", *c)) plain = 0;
        cl[cl_len++] = ' ';
        if (plain) {
            memcpy(cl + cl_len, a, strlen(a));
            cl_len += strlen(a);
        } else {
            cl[cl_len++] = '\'';
            for (const char *c = a; *c; c++) {
                if (*c == '\'') {
                    memcpy(cl + cl_len, "'\\''", 4);
                    cl_len += 4;
                } else cl[cl_len++] = *c;
            }
            cl[cl_len++] = '\'';
        }
        cl[cl_len] = 0;
    }
    cJSON_AddStringToObject(root, "command_line", cl ? cl : "");
    free(cl);
    zaya_status st = zaya_json_write_file(path, root, 1);
    cJSON_Delete(root);
    return st;
}

cJSON *zaya_bench_coll_profile_json(const zaya_coll_results *r) {
    cJSON *root = cJSON_CreateObject();
    for (int i = 0; i < r->n; i++) {
        const zaya_coll_result *x = &r->rows[i];
        const char *name = zaya_coll_name(x->coll);
        cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, name);
        if (!arr) arr = cJSON_AddArrayToObject(root, name);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "ranks", x->nranks);
        cJSON_AddNumberToObject(e, "bytes", (double)x->bytes);
        cJSON_AddNumberToObject(e, "time_us", x->oop.time_us);
        cJSON_AddNumberToObject(e, "algbw_GBps", x->oop.algbw);
        cJSON_AddNumberToObject(e, "busbw_GBps", x->oop.busbw);
        cJSON_AddStringToObject(e, "dtype", zaya_dist_dtype_name(x->dtype));
        cJSON_AddStringToObject(e, "op", zaya_coll_is_reduction(x->coll) ? zaya_redop_name(x->op) : "none");
        cJSON_AddStringToObject(e, "placement", zaya_coll_placement_name(x->spread));
        cJSON_AddItemToArray(arr, e);
    }
    return root;
}

/* ---- `zaya bench coll`: the whole command over MPI_COMM_WORLD ---- */

static void print_stats(const zaya_coll_results *r, FILE *out) {
    fprintf(out, "# Per-iteration timing (out-of-place, us): min/avg/max over ranks of each rank's mean; p50/p99 over "
           "iterations of the slowest rank\n");
    fprintf(out, "# %-13s %5s %6s %5s %12s %10s %10s %10s %10s %10s %10s %7s\n", "collective", "ranks", "place", "type",
           "size(B)", "min", "avg", "max", "p50", "p99", "bare", "z/bare");
    for (int i = 0; i < r->n; i++) {
        const zaya_coll_result *x = &r->rows[i];
        fprintf(out, "  %-13s %5d %6s %5s %12lld %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %7.3f\n", zaya_coll_name(x->coll),
               x->nranks, zaya_coll_placement_name(x->spread), zaya_dist_dtype_name(x->dtype), (long long)x->bytes,
               x->oop.min_us, x->oop.time_us, x->oop.max_us, x->oop.p50_us, x->oop.p99_us, x->bare_us,
               x->bare_us > 0 ? x->oop.time_us / x->bare_us : 0.0);
    }
}

zaya_status zaya_bench_coll_main(const zaya_coll_plan *plan, int stats, const char *outdir, FILE *out, int64_t *wrong_out) {
    const int root = plan->root;
    zaya_comm *world = NULL;
    ZAYA_TRY(zaya_dist_init(NULL, NULL, &world));
    int rank = zaya_comm_rank(world), size = zaya_comm_size(world);
    if (plan->backend != ZAYA_COLL_BACKEND_NCCL && (root < 0 || root >= size)) {
        zaya_dist_finalize(world);
        return zaya_error_set(ZAYA_EINVAL, "root %d outside the %d ranks", root, size);
    }
    /* -J: the report's directory must be writable before a long run, not after it (rank 0 writes). */
    if (plan->report_path) {
        float bad = 0, any = 0;
        if (rank == 0) {
            char dir[4096];
            snprintf(dir, sizeof dir, "%s", plan->report_path);
            char *slash = strrchr(dir, '/');
            if (!slash) snprintf(dir, sizeof dir, ".");
            else if (slash == dir) dir[1] = 0;
            else *slash = 0;
            if (access(dir, W_OK) != 0) {
                bad = 1;
                zaya_error_set(ZAYA_EIO, "-J/--output_file '%s': directory '%s' is not writable (%s)",
                               plan->report_path, dir, strerror(errno));
            }
        }
        zaya_status ast = zaya_allreduce(world, &bad, &any, 1, ZAYA_DIST_F32, ZAYA_REDOP_MAX);
        if (ast != ZAYA_OK || any != 0) {
            if (rank != 0 && ast == ZAYA_OK)
                zaya_error_set(ZAYA_EIO, "-J/--output_file: rank 0 cannot write the report");
            zaya_dist_finalize(world);
            return ast != ZAYA_OK ? ast : ZAYA_EIO;
        }
    }
    struct timespec ts0;
    clock_gettime(CLOCK_REALTIME, &ts0);
    zaya_coll_results res = {0};
    zaya_status st = zaya_bench_coll_run(world, plan, &res, out);
    struct timespec ts1;
    clock_gettime(CLOCK_REALTIME, &ts1);
    int64_t wrong = 0;
    *wrong_out = 0;
    if (st == ZAYA_OK && rank == 0) {
        for (int i = 0; i < res.n; i++)
            wrong += (res.rows[i].oop.wrong > 0 ? res.rows[i].oop.wrong : 0) +
                     (res.rows[i].ip.wrong > 0 ? res.rows[i].ip.wrong : 0);
        zaya_coll_summary sum[256] = {0};
        int ns = zaya_coll_summarize(&res, sum, 256);
        zaya_coll_print_summary(out, sum, ns);
        if (stats) print_stats(&res, out);
        fprintf(out, "# Out of bounds values (all tests) : %lld %s\n", (long long)wrong, wrong ? "FAILED" : "OK");
        st = zaya_bench_coll_write(&res, plan, size, outdir);
        if (st == ZAYA_OK) fprintf(out, "# results written to %s (coll.json, coll.csv, plots)\n", outdir);
        if (st == ZAYA_OK && plan->report_path) {
            st = zaya_bench_coll_write_report(&res, plan, size, (double)ts0.tv_sec + ts0.tv_nsec * 1e-9,
                                              (double)ts1.tv_sec + ts1.tv_nsec * 1e-9, plan->report_path);
            if (st == ZAYA_OK) fprintf(out, "# report written to %s (-J)\n", plan->report_path);
        }
        fflush(out);
    }
    zaya_coll_results_free(&res);
    zaya_dist_finalize(world);
    *wrong_out = wrong;
    return st;
}
