/* The machine profile (`profile.json`, docs/profile-format.md): what `zaya bench all` measured, in
 * the form the sizing tool reads. This module holds the one writer and the one reader of the file;
 * the reader validates every key it knows (naming the key and its place) and ignores keys it does
 * not know. */
#ifndef ZAYA_PROFILE_H
#define ZAYA_PROFILE_H

#include <stdint.h>
#include <cjson/cJSON.h>

#include "zaya/bench_coll.h"
#include "zaya/bench_mem.h"
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZAYA_PROFILE_FORMAT "zaya-profile"
#define ZAYA_PROFILE_VERSION 1

/* One measured GEMM: C[m,n] = A[m,k] B[k,n] at gflops = 2mnk / time / 1e9. The shape-class fields
 * (cls, name, pass, trans_*, direct_gflops) are written when `detail` is set and read when present. */
typedef struct zaya_profile_gemm {
    int bf16; /* dtype: 0 "f32", 1 "bf16" */
    int64_t m, n, k;
    double gflops;
    int detail;
    char cls[16], name[48], pass[16];
    int trans_a, trans_b;
    double direct_gflops; /* oneDNN called directly on the same shape */
} zaya_profile_gemm;

typedef struct zaya_profile_machine {
    char hostname[256];   /* "hostname" (a "name" key wins when both are present) */
    char cpu_model[256];
    int cores;            /* logical CPUs ("cores", else "physical_cores"; 0: unknown) */
    int threads;          /* threads of the measurement ("threads", else "logical_cpus"; 0: unknown) */
    int64_t llc_bytes;    /* last-level cache, all instances (0: unknown) */
    int world_size;       /* MPI ranks of the collective run (0: unknown) */
    char created[32];     /* UTC, ISO 8601 */
    char zaya_version[32];
    double mem_bytes;     /* optional: memory capacity (0: not given) */
    int ranks_per_node;   /* optional (0: not given) */
} zaya_profile_machine;

typedef struct zaya_profile {
    zaya_profile_machine machine;
    zaya_profile_gemm *gemm; /* owned */
    int ngemm;
    double peak_gflops[2];   /* best measured rate per dtype: [0] f32, [1] bf16 */
    zaya_stream_result memory;       /* best_GBps (all > 0), threads, elems, validated */
    zaya_coll_results collectives;   /* out-of-place rows (oop timings), grouped by collective */
} zaya_profile;

void zaya_profile_free(zaya_profile *p);
/* Appends one GEMM row (copied). */
zaya_status zaya_profile_add_gemm(zaya_profile *p, const zaya_profile_gemm *g);

/* The whole profile as JSON (the caller deletes it). */
cJSON *zaya_profile_to_json(const zaya_profile *p);
/* Atomic write of the pretty-printed profile to path. */
zaya_status zaya_profile_write_file(const zaya_profile *p, const char *path);

/* Reads a profile tree. Errors are prefixed with `what` (a path or a name) and name the key:
 * "p.json: gemm[1]: key 'gflops' must be positive (got -1)". On error *out is empty. */
zaya_status zaya_profile_from_json(const cJSON *root, const char *what, zaya_profile *out);
zaya_status zaya_profile_read_file(const char *path, zaya_profile *out);

#ifdef __cplusplus
}
#endif

#endif
