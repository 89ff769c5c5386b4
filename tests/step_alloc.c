/* No allocation inside a training step (docs/architecture.md): runs the real trainer on a tiny model
 * and counts every heap allocation zaya's own code makes between the start of a step (its data
 * section) and its end (the step-done hook). The one allowed is a new matmul primitive (a GEMM shape
 * met for the first time): each step's count must equal the growth of the matmul cache, and every
 * allocation's call stack must pass through a zaya_matmul* function.
 *
 * Linked with -Wl,--wrap for malloc, calloc, realloc, aligned_alloc (zaya_malloc), posix_memalign
 * and strdup, so every call from the library's objects and this file lands in a counting wrapper
 * (libraries zaya links dynamically, MPI and oneDNN, keep their own allocators), and for the two
 * step hooks of src/train/faults.c, which open and close the counting window around each step.
 *   step_alloc DIR  (DIR holds config.json, run.json and data/ from tiny_corpus.sh; under mpirun too)
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/ft.h"
#include "zaya/dist.h"
#include "zaya/matmul.h"
#include "zaya/train.h"

#define MAX_STEPS 64

static _Atomic int g_in_step;
static _Atomic int64_t g_step_allocs, g_outside_allocs;
static int64_t g_per_step[MAX_STEPS];
/* matmul primitives the step created: the one allocation a step may make, once per GEMM shape (the
 * expert GEMMs' token counts vary with the routing, so early steps still meet new shapes) */
static int g_cache_at_start;
static int64_t g_new_prims[MAX_STEPS];
/* matmul's own allocations outside primitive creation (zaya_matmul_aux_allocs: its one-time checks'
 * scratch and workspaces, grown to the largest shape; none on hosts with a bf16 matmul) */
static int64_t g_aux[MAX_STEPS];
static long long g_aux_at_start;
/* call stack of the first allocation inside a step that is not a matmul primitive */
static void *g_stack[16];
static int g_stack_depth;
static _Atomic int g_stack_taken;
static int g_steps;

/* Whether the call stack passes through the matmul entry points (a primitive-cache entry). */
static int from_matmul(void *const *frames, int n) {
    for (int i = 0; i < n; i++) {
        Dl_info di;
        if (dladdr(frames[i], &di) && di.dli_sname && !strncmp(di.dli_sname, "zaya_matmul", 11)) return 1;
    }
    return 0;
}

static void count(void) {
    if (g_in_step) {
        g_step_allocs++;
        void *frames[16];
        int n = backtrace(frames, 16);
        if (!from_matmul(frames, n) && !g_stack_taken++) {
            memcpy(g_stack, frames, sizeof frames);
            g_stack_depth = n;
        }
    } else {
        g_outside_allocs++;
    }
}

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
char *__real_strdup(const char *s);
void __real_zaya_ft_enter(struct zaya_trainer *t, zaya_ft_section s);
void __real_zaya_ft_step_done(struct zaya_trainer *t, double seconds, double busy, int skipped, double loss,
                              double grad_norm);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);
char *__wrap_strdup(const char *s);
void __wrap_zaya_ft_enter(struct zaya_trainer *t, zaya_ft_section s);
void __wrap_zaya_ft_step_done(struct zaya_trainer *t, double seconds, double busy, int skipped, double loss,
                              double grad_norm);

void *__wrap_malloc(size_t n) {
    count();
    return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t size) {
    count();
    return __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n) {
    count();
    return __real_realloc(p, n);
}
void *__wrap_aligned_alloc(size_t align, size_t n) {
    count();
    return __real_aligned_alloc(align, n);
}
int __wrap_posix_memalign(void **p, size_t align, size_t n) {
    count();
    return __real_posix_memalign(p, align, n);
}
char *__wrap_strdup(const char *s) {
    count();
    return __real_strdup(s);
}

/* The data section is the first thing a step does; the step-done hook runs right after it returns. */
void __wrap_zaya_ft_enter(struct zaya_trainer *t, zaya_ft_section s) {
    if (s == ZAYA_FT_DATA) {
        g_step_allocs = 0;
        g_cache_at_start = zaya_matmul_cache_size();
        g_aux_at_start = zaya_matmul_aux_allocs();
        g_in_step = 1;
    }
    __real_zaya_ft_enter(t, s);
}

void __wrap_zaya_ft_step_done(struct zaya_trainer *t, double seconds, double busy, int skipped, double loss,
                              double grad_norm) {
    g_in_step = 0;
    if (g_steps < MAX_STEPS) {
        g_per_step[g_steps] = g_step_allocs;
        g_new_prims[g_steps] = zaya_matmul_cache_size() - g_cache_at_start;
        g_aux[g_steps] = zaya_matmul_aux_allocs() - g_aux_at_start;
    }
    g_steps++;
    __real_zaya_ft_step_done(t, seconds, busy, skipped, loss, grad_norm);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: step_alloc DIR\n");
        return 2;
    }
    char config[4096], run[4096], data[4096], out[4096];
    snprintf(config, sizeof config, "%s/config.json", argv[1]);
    snprintf(run, sizeof run, "%s/run.json", argv[1]);
    snprintf(data, sizeof data, "%s/data", argv[1]);
    snprintf(out, sizeof out, "%s/out", argv[1]);
    /* The trainer initialises the communicator itself; an outer init keeps it alive for the checks. */
    zaya_comm *world = NULL;
    if (zaya_dist_init(&argc, &argv, &world) != ZAYA_OK) {
        fprintf(stderr, "step_alloc: %s\n", zaya_error_message());
        return 1;
    }
    const int rank = zaya_comm_rank(world), nranks = zaya_comm_size(world);
    if (nranks > 1) snprintf(out, sizeof out, "%s/out%d", argv[1], nranks);

    zaya_train_opts o;
    zaya_train_opts_default(&o);
    o.config = config;
    o.run_path = run;
    o.data_dir = data;
    o.out_dir = out;
    o.max_steps = 8;
    o.micro_batch = 2; /* gradient accumulation over several micro-batches */
    o.eval_every = 0;
    o.eval_batches = 1;
    o.samples = 0;
    o.peak_gflops = 100;
    o.no_resume = 1;
    o.quiet = 1;
    zaya_train_result res;
    int64_t before = g_outside_allocs;
    zaya_status s = zaya_train_run(&o, &res);
    int fail = 0;
    if (s != ZAYA_OK) {
        fprintf(stderr, "rank %d: training failed: %s\n", rank, zaya_error_message());
        fail = 1;
    }
    int64_t in_steps = 0, prims = 0;
    for (int i = 0; i < g_steps && i < MAX_STEPS; i++) {
        in_steps += g_per_step[i];
        prims += g_new_prims[i];
    }
    printf("rank %d/%d: %d steps, %lld allocations inside steps (%lld new matmul primitives), %lld outside (setup, "
           "evaluation, checkpoints)\n",
           rank, nranks, g_steps, (long long)in_steps, (long long)prims, (long long)(g_outside_allocs - before));
    if (g_steps != o.max_steps || res.steps != o.max_steps) {
        fprintf(stderr, "rank %d: expected %lld steps through the hooks, saw %d (trainer: %lld)\n", rank,
                (long long)o.max_steps, g_steps, (long long)res.steps);
        fail = 1;
    }
    /* The counter sees zaya's allocations at all: setup allocates the model, optimizer and buffers. */
    if (g_outside_allocs - before < 10) {
        fprintf(stderr, "rank %d: only %lld allocations outside the steps: the wrappers are not linked in\n", rank,
                (long long)(g_outside_allocs - before));
        fail = 1;
    }
    if (g_stack_taken) fail = 1;
    for (int i = 0; i < g_steps && i < MAX_STEPS; i++)
        if (g_per_step[i] != g_new_prims[i] + g_aux[i]) {
            fprintf(stderr, "rank %d: step %d allocated %lld times, %lld new matmul primitives, %lld matmul workspaces\n",
                    rank, i, (long long)g_per_step[i], (long long)g_new_prims[i], (long long)g_aux[i]);
            fail = 1;
        }
    if (g_stack_depth > 0) {
        /* the executable exports its symbols (ENABLE_EXPORTS), so the frames have names */
        fprintf(stderr, "rank %d: call stack of the first allocation inside a step outside the matmul cache:\n", rank);
        backtrace_symbols_fd(g_stack, g_stack_depth, 2);
    }
    zaya_dist_finalize(world);
    return fail;
}
