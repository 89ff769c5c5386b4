/* Time models for one GEMM and one collective.
 *
 * GPU profiles: a roofline whose compute side is derated by tile quantization (padding of the last
 * macro tile in M, N and K), wave quantization (the last wave of compute_units x tiles_per_cu tiles runs
 * part-empty) and the best achievable fraction of peak; the memory side moves 2(MK+KN+MN) bytes.
 * Measured profiles: the throughput of the nearest measured shape (log distance in m, n, k), with the
 * same memory floor. Collectives: interpolation of the measured curve at the rank count, or a ring model
 * over the intra-node link (up to ranks_per_node) or the NIC. */
#include <math.h>
#include <string.h>

#include "zaya/size.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static double measured_gflops(const zaya_size_hw *hw, int64_t m, int64_t n, int64_t k) {
    double best = INFINITY, g = 0;
    for (int i = 0; i < hw->ngemm; i++) {
        const zaya_size_gemm_point *p = &hw->gemm[i];
        if (p->bf16 != hw->act_bf16) continue;
        double d = fabs(log((double)m / p->m)) + fabs(log((double)n / p->n)) + fabs(log((double)k / p->k));
        if (d < best) { best = d; g = p->gflops; }
    }
    double peak = (hw->act_bf16 ? hw->peak_bf16 : hw->peak_f32) / 1e9;
    if (g <= 0) g = peak; /* no table for this dtype: the stated peak */
    /* A shape far smaller than every measured one cannot run faster than its share of the cores. */
    return g < peak ? g : peak;
}

static void estimate(const zaya_size_hw *hw, int64_t groups, int64_t m, int64_t n, int64_t k, zaya_size_gemm_est *e) {
    memset(e, 0, sizeof *e);
    if (m <= 0 || n <= 0 || k <= 0 || groups <= 0) { e->eff = 1; e->tile_eff = e->wave_eff = e->k_eff = 1; e->split = 1; return; }
    double g = (double)groups;
    e->flops = 2.0 * (double)m * (double)n * (double)k * g;
    double elt = hw->act_bf16 ? 2 : 4;
    double bytes = elt * ((double)m * k + (double)k * n + (double)m * n) * g;
    double t_mem = bytes / (hw->mem_bw * hw->mem_eff);
    double peak = hw->act_bf16 ? hw->peak_bf16 : hw->peak_f32;
    double t_comp;
    if (hw->is_gpu) {
        int64_t tm = cdiv(m, hw->tile_m), tn = cdiv(n, hw->tile_n), tk = cdiv(k, hw->tile_k);
        int64_t tiles = tm * tn * groups;
        int64_t per_wave = (int64_t)hw->compute_units * hw->tiles_per_cu;
        e->tile_eff = (double)m * n / ((double)tm * hw->tile_m * (double)tn * hw->tile_n);
        e->k_eff = (double)k / ((double)tk * hw->tile_k);
        /* Split-K (as BLAS libraries do for small outputs with long K, e.g. weight gradients): s partial
         * products per tile fill the waves, paid for by an fp32 reduction of s partial outputs. Each wave
         * costs as long as a full wave of full tiles. */
        t_comp = INFINITY;
        for (int64_t split = 1; split == 1 || (tk / split >= 4 && tiles * split <= 4 * per_wave); split *= 2) {
            int64_t waves = cdiv(tiles * split, per_wave);
            double wave_flops = 2.0 * hw->tile_m * hw->tile_n * (double)cdiv(tk, split) * hw->tile_k * (double)per_wave;
            double t = (double)waves * wave_flops / (peak * hw->gemm_eff_max);
            if (split > 1) t += (double)split * 4.0 * (double)m * n * g / (hw->mem_bw * hw->mem_eff);
            if (t < t_comp) {
                t_comp = t;
                e->split = split;
                e->tiles = tiles * split;
                e->waves = waves;
            }
        }
        e->wave_eff = (double)e->tiles / ((double)e->waves * per_wave);
    } else {
        e->tile_eff = e->wave_eff = e->k_eff = 1;
        e->split = 1;
        t_comp = e->flops / (measured_gflops(hw, m, n, k) * 1e9);
    }
    e->mem_bound = t_mem > t_comp;
    e->time_s = (e->mem_bound ? t_mem : t_comp) + hw->launch_s * (hw->is_gpu ? 1 : g);
    e->eff = e->flops / (e->time_s * peak);
}

void zaya_size_gemm_estimate(const zaya_size_hw *hw, int64_t m, int64_t n, int64_t k, zaya_size_gemm_est *e) {
    estimate(hw, 1, m, n, k, e);
}

/* Grouped GEMM (all experts of a layer in one launch on GPUs): tiles of every group share the waves. */
void zaya_size_gemm_estimate_grouped(const zaya_size_hw *hw, int64_t groups, int64_t m, int64_t n, int64_t k,
                                zaya_size_gemm_est *e) {
    estimate(hw, groups, m, n, k, e);
}

static double bus_factor(int coll, int n) {
    if (n <= 1) return 0;
    switch (coll) {
    case ZAYA_SIZE_COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
    case ZAYA_SIZE_COLL_REDUCE_SCATTER:
    case ZAYA_SIZE_COLL_ALL_GATHER: return (double)(n - 1) / n;
    default: return 1;
    }
}

static double steps(int coll, int n) {
    switch (coll) {
    case ZAYA_SIZE_COLL_ALLREDUCE: return 2.0 * (n - 1);
    case ZAYA_SIZE_COLL_BROADCAST: return ceil(log2((double)n));
    default: return (double)(n - 1);
    }
}

double zaya_size_coll_time(const zaya_size_hw *hw, int coll, int ranks, double bytes) {
    if (ranks <= 1 || bytes <= 0) return 0;
    int np = hw->ncoll[coll];
    if (np > 0) {
        /* Measured: points at the nearest rank count, converted through busbw to the requested count. */
        int best_r = -1;
        for (int i = 0; i < np; i++) {
            int r = hw->coll[coll][i].ranks;
            if (best_r < 0 || abs(r - ranks) < abs(best_r - ranks) || (abs(r - ranks) == abs(best_r - ranks) && r > best_r))
                best_r = r;
        }
        const zaya_size_coll_point *lo = NULL, *hi = NULL;
        for (int i = 0; i < np; i++) {
            const zaya_size_coll_point *p = &hw->coll[coll][i];
            if (p->ranks != best_r || p->bytes <= 0) continue;
            if (p->bytes <= bytes && (!lo || p->bytes > lo->bytes)) lo = p;
            if (p->bytes >= bytes && (!hi || p->bytes < hi->bytes)) hi = p;
        }
        double t;
        if (lo && hi && hi->bytes > lo->bytes)
            t = lo->time_us * pow(hi->time_us / lo->time_us, log(bytes / lo->bytes) / log(hi->bytes / lo->bytes));
        else if (lo) t = lo->time_us * (bytes / lo->bytes); /* beyond the largest size: bandwidth-bound */
        else if (hi) t = hi->time_us;                       /* below the smallest: latency-bound */
        else t = 0;
        if (t > 0) {
            double f_meas = bus_factor(coll, best_r), f_req = bus_factor(coll, ranks);
            if (f_meas > 0) t *= f_req / f_meas;
            return t * 1e-6;
        }
    }
    double bw = ranks <= hw->ranks_per_node ? hw->intra_bw : hw->inter_bw;
    if (bw <= 0) return -1; /* no measurement and no link model */
    double lat = hw->link_latency_s * (ranks <= hw->ranks_per_node ? 1 : 2);
    return steps(coll, ranks) * lat + bytes * bus_factor(coll, ranks) / (0.8 * bw);
}
