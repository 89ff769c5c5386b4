/* `zaya ckpt bench` (zaya_ckpt_bench_run): checkpoint save throughput of a zaya1-small-sized state (parameters + two AdamW
 * moment arrays sharded over R in-process ranks) against, in the same run and directory:
 *   - the disk's sequential write throughput (one file, 64 MiB write() calls, fsync; dd-like),
 *   - a naive baseline (one writer gathers everything into one f32 file with 4 KiB stdio writes),
 * plus the async stall (host snapshot) per save against the synchronous save time, and the
 * verified load throughput. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include "ckpt/internal.h"
#include "zaya/alloc.h"
#include "zaya/ckpt.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/model.h"
#include "zaya/plot.h"
#include "zaya/rng.h"
#include "zaya/threads.h"
#include "zaya/timer.h"

typedef struct bench_state {
    zaya_config cfg;
    zaya_tensor_info *t;
    int nt;
    int64_t nf;
    float *params, *m, *v;
} bench_state;

typedef struct bench_rank {
    bench_state *bs;
    zaya_ckpt_local_group *g;
    int rank, world, async;
    const char *root;
    int64_t step;
    zaya_ckpt_snapshot snap;
    zaya_status status;
    char msg[512];
    zaya_ckpt_save_stats st;
} bench_rank;

static void *rank_save(void *arg) {
    bench_rank *r = arg;
    bench_state *bs = r->bs;
    zaya_ckpt_comm comm = zaya_ckpt_local_comm(r->g, r->rank);
    zaya_ckpt_writer *w;
    zaya_ckpt_options o = zaya_ckpt_default_options();
    r->status = zaya_ckpt_writer_init(&w, r->root, r->step, r->step * 1000, &o, &comm);
    if (r->status != ZAYA_OK) return NULL;
    for (int i = 0; i < bs->nt; i++) zaya_ckpt_writer_add_model(w, bs->t[i].name, bs->t[i].ndim, bs->t[i].shape, bs->params + bs->t[i].offset);
    cJSON *cfg = zaya_config_to_json(&bs->cfg);
    zaya_ckpt_writer_add_section(w, ZAYA_CKPT_SECTION_MODEL, cfg);
    cJSON_Delete(cfg);
    int64_t lo = bs->nf * r->rank / r->world, hi = bs->nf * (r->rank + 1) / r->world, n = bs->nf;
    zaya_ckpt_writer_add_shard(w, "adamw.m", ZAYA_ST_F32, 1, &n, lo, hi - lo, bs->m + lo);
    zaya_ckpt_writer_add_shard(w, "adamw.v", ZAYA_ST_F32, 1, &n, lo, hi - lo, bs->v + lo);
    if (r->async) {
        r->status = zaya_ckpt_writer_commit_async(w, &r->snap, NULL);
        if (r->status == ZAYA_OK) r->status = zaya_ckpt_writer_wait(w, &r->st);
    } else r->status = zaya_ckpt_writer_commit(w, &r->st);
    if (r->status != ZAYA_OK) snprintf(r->msg, sizeof r->msg, "%s", zaya_error_message());
    return NULL;
}

/* One save by `world` ranks; returns wall seconds (max over ranks), stall (max) and bytes. */
static zaya_status save_once(bench_state *bs, bench_rank *ranks, int world, const char *root, int64_t step, int async,
                             double *wall, double *stall, uint64_t *bytes) {
    zaya_ckpt_local_group *g;
    ZAYA_TRY(zaya_ckpt_local_group_new(&g, world));
    pthread_t th[64];
    double t0 = zaya_now_s();
    for (int r = 0; r < world; r++) {
        ranks[r].bs = bs;
        ranks[r].g = g;
        ranks[r].rank = r;
        ranks[r].world = world;
        ranks[r].async = async;
        ranks[r].root = root;
        ranks[r].step = step;
        pthread_create(&th[r], NULL, rank_save, &ranks[r]);
    }
    for (int r = 0; r < world; r++) pthread_join(th[r], NULL);
    *wall = zaya_now_s() - t0;
    zaya_ckpt_local_group_free(g);
    *stall = 0;
    *bytes = 0;
    for (int r = 0; r < world; r++) {
        if (ranks[r].status != ZAYA_OK) return zaya_error_set(ranks[r].status, "rank %d: %s", r, ranks[r].msg);
        if (ranks[r].st.snapshot_s > *stall) *stall = ranks[r].st.snapshot_s;
        *bytes += ranks[r].st.bytes;
    }
    return ZAYA_OK;
}

/* dd-like: the same byte count in 64 MiB writes, then fsync. */
static zaya_status disk_write(const char *path, const float *src, size_t src_bytes, uint64_t bytes, double *secs) {
    double t0 = zaya_now_s();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return zaya_error_set(ZAYA_EIO, "cannot create '%s': %s", path, strerror(errno));
    const size_t chunk = src_bytes < (64u << 20) ? src_bytes : (64u << 20);
    uint64_t left = bytes;
    zaya_status s = ZAYA_OK;
    while (left && s == ZAYA_OK) {
        size_t len = left < chunk ? (size_t)left : chunk;
        s = zaya_st_write_all(fd, src, len, path); /* the same source chunk again: the disk sees as many bytes */
        left -= len;
    }
    if (s == ZAYA_OK && fsync(fd)) s = zaya_error_set(ZAYA_EIO, "fsync '%s': %s", path, strerror(errno));
    close(fd);
    *secs = zaya_now_s() - t0;
    unlink(path);
    return s;
}

/* Naive: rank 0 gathers params, m and v into one f32 file through 4 KiB buffered writes. */
static zaya_status naive_write(const char *path, const bench_state *bs, double *secs, uint64_t *bytes) {
    double t0 = zaya_now_s();
    FILE *f = fopen(path, "wb");
    if (!f) return zaya_error_set(ZAYA_EIO, "cannot create '%s'", path);
    static char buf[4096];
    setvbuf(f, buf, _IOFBF, sizeof buf);
    const float *arrays[3] = {bs->params, bs->m, bs->v};
    uint64_t total = 0;
    for (int a = 0; a < 3; a++)
        for (int64_t i = 0; i < bs->nf; i += 1024) { /* 4 KiB per fwrite */
            size_t n = (size_t)(bs->nf - i < 1024 ? bs->nf - i : 1024);
            if (fwrite(arrays[a] + i, 4, n, f) != n) {
                fclose(f);
                return zaya_error_set(ZAYA_EIO, "writing '%s' failed", path);
            }
            total += n * 4;
        }
    int bad = fflush(f) != 0 || fsync(fileno(f)) != 0;
    fclose(f);
    *secs = zaya_now_s() - t0;
    *bytes = total;
    unlink(path);
    return bad ? zaya_error_set(ZAYA_EIO, "flushing '%s' failed", path) : ZAYA_OK;
}

static double best(const double *x, int n) {
    double b = x[0];
    for (int i = 1; i < n; i++) b = x[i] < b ? x[i] : b;
    return b;
}

static void state_free(bench_state *bs) {
    zaya_free(bs->params);
    zaya_free(bs->m);
    zaya_free(bs->v);
    free(bs->t);
}

zaya_status zaya_ckpt_bench_run(const zaya_ckpt_bench_opts *o, FILE *out_f) {
    const char *out = o->out, *config = o->config, *dir = o->dir;
    int ranks = o->ranks, repeats = o->repeats, threads = o->threads;
    if (ranks < 1 || ranks > 64) return zaya_error_set(ZAYA_EINVAL, "ranks must be in [1, 64] (got %d)", ranks);
    if (repeats < 1 || repeats > 20) return zaya_error_set(ZAYA_EINVAL, "repeats must be in [1, 20] (got %d)", repeats);
    zaya_threads_init(threads);
    bench_state bs = {0};
    bench_rank *rk = NULL;
    zaya_status rs = ZAYA_OK;
    char scratch[600], path[700];
    if ((rs = zaya_config_resolve(config, &bs.cfg)) != ZAYA_OK ||
        (rs = zaya_layout_build_public(&bs.cfg, &bs.t, &bs.nt, &bs.nf)) != ZAYA_OK || (rs = zaya_mkdir_p(out)) != ZAYA_OK)
        goto fail_bench;
    snprintf(scratch, sizeof scratch, "%s/scratch", dir ? dir : out);
    ck_remove_tree(scratch);
    if ((rs = zaya_mkdir_p(scratch)) != ZAYA_OK) goto fail_bench;
    bs.params = zaya_malloc((size_t)bs.nf * 4);
    bs.m = zaya_malloc((size_t)bs.nf * 4);
    bs.v = zaya_malloc((size_t)bs.nf * 4);
    if (!bs.params || !bs.m || !bs.v) {
        rs = zaya_error_set(ZAYA_ENOMEM, "state of 3 x %lld floats", (long long)bs.nf);
        goto fail_bench;
    }
    zaya_rng_fill_uniform(bs.params, (size_t)bs.nf, 1, 0, 0, -0.1f, 0.1f);
    zaya_rng_fill_uniform(bs.m, (size_t)bs.nf, 1, 1, 0, -1e-3f, 1e-3f);
    zaya_rng_fill_uniform(bs.v, (size_t)bs.nf, 1, 2, 0, 0, 1e-6f);
    uint64_t state_bytes = (uint64_t)bs.nf * 12;
    fprintf(out_f, "state: %s, %lld floats per array, %.3f GB (params + AdamW m, v), %d rank%s, %d repeats, dir %s\n", bs.cfg.name,
           (long long)bs.nf, state_bytes / 1e9, ranks, ranks == 1 ? "" : "s", repeats, scratch);
    rk = calloc((size_t)ranks, sizeof *rk);
    if (!rk) {
        rs = zaya_error_set(ZAYA_ENOMEM, "%d ranks", ranks);
        goto fail_bench;
    }
    /* as a trainer would at startup: the async stall then measures the copy, not first-touch faults */
    for (int r = 0; r < ranks; r++)
        if ((rs = zaya_ckpt_snapshot_reserve(&rk[r].snap, (size_t)bs.nf * 4 * 3 / (size_t)ranks + (size_t)bs.nf * 4 +
                                             (64u << 20))) != ZAYA_OK)
            goto fail_bench;
    double t_disk[40], t_sync[20], t_async[20], stall[20], t_naive[20], t_load[20];
    uint64_t save_bytes = 0, naive_bytes = 0;
    int64_t step = 0;
    for (int it = 0; it < repeats; it++) {
        snprintf(path, sizeof path, "%s/disk.bin", scratch);
        double dummy;
        uint64_t b;
        /* Measured in the same loop so that all see the same disk conditions; the disk twice per
         * repeat (before and after the save) because a disk mounted with `discard` on thin storage
         * is slow right after deletions. */
        if ((rs = disk_write(path, bs.params, (size_t)bs.nf * 4, state_bytes, &t_disk[it])) != ZAYA_OK) goto fail_bench;
        if ((rs = save_once(&bs, rk, ranks, scratch, ++step, 0, &t_sync[it], &dummy, &save_bytes)) != ZAYA_OK) goto fail_bench;
        double t0 = zaya_now_s();
        zaya_ckpt *c;
        if ((rs = zaya_ckpt_open_latest(&c, scratch, 1)) != ZAYA_OK) goto fail_bench;
        t_load[it] = zaya_now_s() - t0;
        zaya_ckpt_close(c);
        zaya_ckpt_apply_retention(scratch, 1, 0);
        snprintf(path, sizeof path, "%s/disk.bin", scratch);
        if ((rs = disk_write(path, bs.params, (size_t)bs.nf * 4, state_bytes, &t_disk[repeats + it])) != ZAYA_OK) goto fail_bench;
        if ((rs = save_once(&bs, rk, ranks, scratch, ++step, 1, &t_async[it], &stall[it], &b)) != ZAYA_OK) goto fail_bench;
        zaya_ckpt_apply_retention(scratch, 1, 0);
        snprintf(path, sizeof path, "%s/naive.bin", scratch);
        if ((rs = naive_write(path, &bs, &t_naive[it], &naive_bytes)) != ZAYA_OK) goto fail_bench;
        fprintf(out_f, "  repeat %d: disk %.2f / %.2f s, save %.2f s, async %.2f s (stall %.3f s), naive %.2f s, load+verify %.2f s\n", it + 1,
               t_disk[it], t_disk[repeats + it], t_sync[it], t_async[it], stall[it], t_naive[it], t_load[it]);
    }
    ck_remove_tree(scratch);
    double disk_gbs = state_bytes / 1e9 / best(t_disk, 2 * repeats), save_gbs = save_bytes / 1e9 / best(t_sync, repeats);
    double naive_gbs = naive_bytes / 1e9 / best(t_naive, repeats), load_gbs = save_bytes / 1e9 / best(t_load, repeats);
    double st = best(stall, repeats), ts = best(t_sync, repeats);
    fprintf(out_f, "\n%-36s %10s %10s\n", "measurement (best of repeats)", "seconds", "GB/s");
    fprintf(out_f, "%-36s %10.3f %10.2f\n", "disk sequential write + fsync", best(t_disk, 2 * repeats), disk_gbs);
    fprintf(out_f, "%-36s %10.3f %10.2f\n", "checkpoint save (sync)", ts, save_gbs);
    fprintf(out_f, "%-36s %10.3f %10s\n", "  async stall (snapshot)", st, "");
    fprintf(out_f, "%-36s %10.3f %10.2f\n", "naive single-file baseline", best(t_naive, repeats), naive_gbs);
    fprintf(out_f, "%-36s %10.3f %10.2f\n", "load + verify checksums", best(t_load, repeats), load_gbs);
    fprintf(out_f, "\nsave / disk throughput     %6.1f %%   (target >= 70 %%)\n", 100 * save_gbs / disk_gbs);
    fprintf(out_f, "async stall / sync save    %6.1f %%\n", 100 * st / ts);
    fprintf(out_f, "speedup over naive         %6.2f x\n", save_gbs / naive_gbs);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "config", bs.cfg.name);
    cJSON_AddNumberToObject(j, "ranks", ranks);
    cJSON_AddNumberToObject(j, "state_bytes", (double)state_bytes);
    cJSON_AddNumberToObject(j, "save_bytes", (double)save_bytes);
    cJSON_AddNumberToObject(j, "disk_gbs", disk_gbs);
    cJSON_AddNumberToObject(j, "save_gbs", save_gbs);
    cJSON_AddNumberToObject(j, "naive_gbs", naive_gbs);
    cJSON_AddNumberToObject(j, "load_verify_gbs", load_gbs);
    cJSON_AddNumberToObject(j, "save_over_disk", save_gbs / disk_gbs);
    cJSON_AddNumberToObject(j, "async_stall_s", st);
    cJSON_AddNumberToObject(j, "sync_save_s", ts);
    cJSON_AddNumberToObject(j, "stall_over_sync", st / ts);
    cJSON_AddNumberToObject(j, "speedup_over_naive", save_gbs / naive_gbs);
    snprintf(path, sizeof path, "%s/ckpt_bench.json", out);
    zaya_json_write_file(path, j, 1);
    cJSON_Delete(j);
    snprintf(path, sizeof path, "%s/ckpt_bench.csv", out);
    FILE *csv = fopen(path, "w");
    double xs[20], ydisk[20], ysave[20], ynaive[20];
    if (csv) fprintf(csv, "repeat,disk_s,disk2_s,save_s,async_s,stall_s,naive_s,load_verify_s\n");
    for (int i = 0; i < repeats; i++) {
        if (csv) fprintf(csv, "%d,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f\n", i + 1, t_disk[i], t_disk[repeats + i], t_sync[i], t_async[i], stall[i], t_naive[i], t_load[i]);
        xs[i] = i + 1;
        ydisk[i] = state_bytes / 1e9 / (t_disk[i] < t_disk[repeats + i] ? t_disk[i] : t_disk[repeats + i]);
        ysave[i] = save_bytes / 1e9 / t_sync[i];
        ynaive[i] = naive_bytes / 1e9 / t_naive[i];
    }
    if (csv) fclose(csv);
    zaya_plot_series ser[3] = {{"disk write+fsync", xs, ydisk, repeats}, {"checkpoint save", xs, ysave, repeats},
                               {"naive single file", xs, ynaive, repeats}};
    zaya_plot_opts po = {"checkpoint save throughput", "repeat", "GB/s", 0, 0, 1};
    snprintf(path, sizeof path, "%s/ckpt_bench.png", out);
    if (zaya_plot_lines(path, &po, ser, 3) != ZAYA_OK) fprintf(stderr, "zaya ckpt bench: warning: %s\n", zaya_error_message());
    fprintf(out_f, "results in %s (ckpt_bench.json, ckpt_bench.csv, ckpt_bench.png)\n", out);
    for (int r = 0; r < ranks; r++) zaya_ckpt_snapshot_free(&rk[r].snap);
    free(rk);
    state_free(&bs);
    return ZAYA_OK;
fail_bench:
    for (int r = 0; rk && r < ranks; r++) zaya_ckpt_snapshot_free(&rk[r].snap);
    free(rk);
    state_free(&bs);
    return rs;
}
