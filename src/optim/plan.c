/* Unit planning: which ranges of the parameter block are Muon matrices and AdamW ranges, and which
 * rank owns each. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/optim.h"

/* AdamW is memory bound: one element reads g, m, v, p and writes m, v, p (28 bytes). At a typical
 * ratio of ~2-3 flops per byte between a CPU's GEMM rate and its bandwidth this costs about as much
 * as 64 GEMM flops, which is the weight used to put both kinds on one scale. */
#define ADAMW_FLOPS_PER_ELEM 64.0
/* Muon's elementwise part (momentum, normalisation, update): about 4 passes over the matrix. */
#define MUON_ELEM_FLOPS 32.0

double zaya_muon_ns_flops(int64_t rows, int64_t cols, int steps) {
    double m = (double)(rows < cols ? rows : cols), n = (double)(rows < cols ? cols : rows);
    /* per iteration: X X^T (2 m^2 n), A A (2 m^3), B X (2 m^2 n) */
    return steps * (4.0 * m * m * n + 2.0 * m * m * m);
}

static void add_unit(zaya_optim_plan *p, int count_only, zaya_unit_kind kind, int ti, const zaya_tensor_info *t,
                     int expert, int64_t offset, int64_t numel, int64_t rows, int64_t cols, int64_t start) {
    if (!count_only) {
        zaya_optim_unit *u = &p->units[p->nunits];
        memset(u, 0, sizeof *u);
        u->kind = kind;
        u->tensor = ti;
        u->expert = expert;
        snprintf(u->tensor_name, sizeof u->tensor_name, "%s", t->name);
        u->offset = offset;
        u->numel = numel;
        u->rows = rows;
        u->cols = cols;
        u->start = start;
        u->full_numel = kind == ZAYA_UNIT_MUON ? numel : t->numel;
        /* Matrices are decayed whichever optimizer updates them (a Muon-class tensor handed to AdamW in
         * AdamW-only runs keeps its decay); conv kernels are 3-D but per-channel filters: not decayed. */
        u->decay = kind == ZAYA_UNIT_MUON || t->embedding || t->ndim == 2 || t->nmatrix > 1;
        u->cost = kind == ZAYA_UNIT_MUON ? zaya_muon_ns_flops(rows, cols, 5) + MUON_ELEM_FLOPS * (double)numel
                                         : ADAMW_FLOPS_PER_ELEM * (double)numel;
    }
    p->nunits++;
}

static zaya_status walk(const zaya_tensor_info *tensors, int ntensors, int64_t split, zaya_optim_plan *p,
                        int count_only) {
    p->nunits = 0;
    p->nbuffers = 0;
    p->buffer_elems = 0;
    for (int i = 0; i < ntensors; i++) {
        const zaya_tensor_info *t = &tensors[i];
        if (t->opt == ZAYA_OPT_NONE) {
            p->nbuffers++;
            p->buffer_elems += t->numel;
            continue;
        }
        if (t->opt == ZAYA_OPT_MUON) {
            int nm = t->nmatrix > 0 ? t->nmatrix : 1;
            int64_t rows, cols;
            if (t->ndim == 2 && nm == 1) {
                rows = t->shape[0];
                cols = t->shape[1];
            } else if (t->ndim == 3 && nm == t->shape[0]) {
                rows = t->shape[1];
                cols = t->shape[2];
            } else {
                return zaya_error_set(ZAYA_EINVAL, "tensor '%s': Muon needs a 2-D matrix or a stack of %d matrices "
                                      "(ndim %d)", t->name, nm, t->ndim);
            }
            if (rows * cols * nm != t->numel)
                return zaya_error_set(ZAYA_EINVAL, "tensor '%s': %d x %lld x %lld matrices do not make %lld elements",
                                      t->name, nm, (long long)rows, (long long)cols, (long long)t->numel);
            for (int e = 0; e < nm; e++)
                add_unit(p, count_only, ZAYA_UNIT_MUON, i, t, nm > 1 ? e : -1, t->offset + (int64_t)e * rows * cols,
                         rows * cols, rows, cols, 0);
            continue;
        }
        int64_t rows = t->shape[0] > 0 ? t->shape[0] : 1, cols = t->numel / rows;
        int64_t per = split > 0 && t->numel > split ? (split + cols - 1) / cols : rows; /* rows per range */
        for (int64_t r0 = 0; r0 < rows; r0 += per) {
            int64_t nr = rows - r0 < per ? rows - r0 : per;
            add_unit(p, count_only, ZAYA_UNIT_ADAMW, i, t, -1, t->offset + r0 * cols, nr * cols, nr, cols, r0 * cols);
        }
    }
    return ZAYA_OK;
}

/* Largest cost first onto the least loaded rank (ties: earlier unit, lower rank): deterministic. */
static const zaya_optim_unit *g_sort_units;
static int by_cost_desc(const void *a, const void *b) {
    int ia = *(const int *)a, ib = *(const int *)b;
    double ca = g_sort_units[ia].cost, cb = g_sort_units[ib].cost;
    if (ca != cb) return ca > cb ? -1 : 1;
    return ia - ib;
}

zaya_status zaya_optim_plan_build(const zaya_tensor_info *tensors, int ntensors, int world_size, int64_t adamw_split,
                                  zaya_optim_plan *p) {
    memset(p, 0, sizeof *p);
    if (world_size < 1) return zaya_error_set(ZAYA_EINVAL, "optimizer plan: world size %d < 1", world_size);
    int64_t split = adamw_split == 0 ? ZAYA_OPTIM_ADAMW_SPLIT_DEFAULT : adamw_split;
    ZAYA_TRY(walk(tensors, ntensors, split, p, 1));
    int n = p->nunits;
    p->world_size = world_size;
    p->units = calloc((size_t)(n > 0 ? n : 1), sizeof *p->units);
    p->rank_cost = calloc((size_t)world_size, sizeof *p->rank_cost);
    p->rank_elems = calloc((size_t)world_size, sizeof *p->rank_elems);
    p->rank_units = calloc((size_t)world_size, sizeof *p->rank_units);
    int *order = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (!p->units || !p->rank_cost || !p->rank_elems || !p->rank_units || !order) {
        free(order);
        zaya_optim_plan_free(p);
        return zaya_error_set(ZAYA_ENOMEM, "optimizer plan: cannot allocate %d units", n);
    }
    walk(tensors, ntensors, split, p, 0);
    for (int i = 0; i < n; i++) order[i] = i;
    g_sort_units = p->units;
    qsort(order, (size_t)n, sizeof(int), by_cost_desc);
    g_sort_units = NULL;
    for (int k = 0; k < n; k++) {
        zaya_optim_unit *u = &p->units[order[k]];
        int best = 0;
        for (int r = 1; r < world_size; r++)
            if (p->rank_cost[r] < p->rank_cost[best]) best = r;
        u->owner = best;
        p->rank_cost[best] += u->cost;
        p->rank_elems[best] += u->numel;
        p->rank_units[best]++;
    }
    free(order);
    return ZAYA_OK;
}

void zaya_optim_plan_free(zaya_optim_plan *p) {
    free(p->units);
    free(p->rank_cost);
    free(p->rank_elems);
    free(p->rank_units);
    memset(p, 0, sizeof *p);
}

double zaya_optim_plan_imbalance(const zaya_optim_plan *p) {
    double mx = 0, mn = INFINITY;
    for (int r = 0; r < p->world_size; r++) {
        mx = fmax(mx, p->rank_cost[r]);
        mn = fmin(mn, p->rank_cost[r]);
    }
    return mn > 0 ? mx / mn : INFINITY;
}

void zaya_optim_plan_print(const zaya_optim_plan *p, FILE *f) {
    int nmuon = 0, nadam = 0, nadam_decay = 0;
    int64_t emuon = 0, eadam = 0, eadam_decay = 0;
    double cmuon = 0, cadam = 0, total = 0;
    for (int i = 0; i < p->nunits; i++) {
        const zaya_optim_unit *u = &p->units[i];
        total += u->cost;
        if (u->kind == ZAYA_UNIT_MUON) {
            nmuon++;
            emuon += u->numel;
            cmuon += u->cost;
        } else {
            nadam++;
            eadam += u->numel;
            cadam += u->cost;
            if (u->decay) {
                nadam_decay++;
                eadam_decay += u->numel;
            }
        }
    }
    fprintf(f, "optimizer units (world %d):\n", p->world_size);
    fprintf(f, "  %-28s %6s %14s %10s\n", "class", "units", "elements", "cost %");
    fprintf(f, "  %-28s %6d %14lld %9.2f%%\n", "muon matrices (decay)", nmuon, (long long)emuon,
            total > 0 ? 100 * cmuon / total : 0.0);
    fprintf(f, "  %-28s %6d %14lld %9.2f%%\n", "adamw ranges", nadam, (long long)eadam,
            total > 0 ? 100 * cadam / total : 0.0);
    fprintf(f, "  %-28s %6d %14lld\n", "  of which decayed (embed)", nadam_decay, (long long)eadam_decay);
    fprintf(f, "  %-28s %6d %14lld %10s\n", "buffers (balancer, no unit)", p->nbuffers, (long long)p->buffer_elems, "-");
    fprintf(f, "  %-6s %6s %14s %14s %8s\n", "rank", "units", "elements", "cost GFLOP", "share");
    for (int r = 0; r < p->world_size; r++)
        fprintf(f, "  %-6d %6d %14lld %14.3f %7.1f%%\n", r, p->rank_units[r], (long long)p->rank_elems[r],
                p->rank_cost[r] * 1e-9, total > 0 ? 100 * p->rank_cost[r] / total : 0.0);
    fprintf(f, "  max/min rank cost %.3f\n", zaya_optim_plan_imbalance(p));
}
