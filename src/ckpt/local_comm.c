/* zaya_ckpt_comm over threads of one process: each thread plays a rank. Used by reshape (one
 * thread per new rank), the checkpoint benchmark and the multi-rank tests. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/ckpt.h"

struct zaya_ckpt_local_group {
    int world;
    pthread_barrier_t bar;
    const void **bufs;
    size_t *lens;
};

typedef struct local_rank {
    zaya_ckpt_local_group *g;
    int rank;
} local_rank;

zaya_status zaya_ckpt_local_group_new(zaya_ckpt_local_group **out, int world) {
    if (world < 1 || world > 4096) return zaya_error_set(ZAYA_EINVAL, "local group of %d ranks", world);
    zaya_ckpt_local_group *g = calloc(1, sizeof *g + (size_t)world * sizeof(local_rank));
    if (!g) return zaya_error_set(ZAYA_ENOMEM, "local group");
    g->world = world;
    g->bufs = calloc((size_t)world, sizeof *g->bufs);
    g->lens = calloc((size_t)world, sizeof *g->lens);
    if (!g->bufs || !g->lens) {
        free(g->bufs);
        free(g->lens);
        free(g);
        return zaya_error_set(ZAYA_ENOMEM, "local group");
    }
    pthread_barrier_init(&g->bar, NULL, (unsigned)world);
    local_rank *r = (local_rank *)(g + 1);
    for (int i = 0; i < world; i++) r[i] = (local_rank){g, i};
    *out = g;
    return ZAYA_OK;
}

void zaya_ckpt_local_group_free(zaya_ckpt_local_group *g) {
    if (!g) return;
    pthread_barrier_destroy(&g->bar);
    free(g->bufs);
    free(g->lens);
    free(g);
}

static zaya_status local_gather(void *ctx, const void *buf, size_t len, char **all, size_t *lens) {
    local_rank *r = ctx;
    zaya_ckpt_local_group *g = r->g;
    g->bufs[r->rank] = buf;
    g->lens[r->rank] = len;
    pthread_barrier_wait(&g->bar);
    zaya_status s = ZAYA_OK;
    *all = NULL;
    if (r->rank == 0) {
        size_t total = 0;
        for (int i = 0; i < g->world; i++) total += g->lens[i];
        char *p = malloc(total + 1);
        if (!p) s = zaya_error_set(ZAYA_ENOMEM, "gather of %zu bytes", total);
        else {
            size_t at = 0;
            for (int i = 0; i < g->world; i++) {
                memcpy(p + at, g->bufs[i], g->lens[i]);
                lens[i] = g->lens[i];
                at += g->lens[i];
            }
            *all = p;
        }
    }
    pthread_barrier_wait(&g->bar); /* senders' buffers stay valid until rank 0 copied them */
    return s;
}

static zaya_status local_bcast(void *ctx, void *buf, size_t len) {
    local_rank *r = ctx;
    zaya_ckpt_local_group *g = r->g;
    if (r->rank == 0) g->bufs[0] = buf;
    pthread_barrier_wait(&g->bar);
    if (r->rank != 0) memcpy(buf, g->bufs[0], len);
    pthread_barrier_wait(&g->bar);
    return ZAYA_OK;
}

zaya_ckpt_comm zaya_ckpt_local_comm(zaya_ckpt_local_group *g, int rank) {
    local_rank *r = (local_rank *)(g + 1);
    return (zaya_ckpt_comm){rank, g->world, &r[rank], local_gather, local_bcast};
}
