/* Sharded, atomic, verifiable training checkpoints.
 *
 * Layout under a root directory:
 *   ROOT/latest                      "step-00000100\n" (written atomically after the rename)
 *   ROOT/step-00000100/manifest.json format, step, tokens, world size, the caller's JSON sections
 *                                    (model_config, run_config, optimizer, data_loader, rng,
 *                                    schedule, ...), per-rank sections, file table and tensor table
 *   ROOT/step-00000100/model-r00000.safetensors   model tensors (rank 0, or split across ranks)
 *   ROOT/step-00000100/state-r00003.safetensors   the named arrays rank 3 owns
 * A save writes into ROOT/step-XXXXXXXX.tmp-<pid>/, fsyncs every file and the directory, renames it
 * (or atomically exchanges it with an existing step-XXXXXXXX being redone), fsyncs ROOT, then
 * rewrites `latest`. A kill at any instant leaves a loadable checkpoint: readers take the newest step
 * directory that opens and verifies, so a `latest` that is missing, stale or broken is only a hint.
 * The manifest carries `manifest_xxh3`, the XXH3-64 of its own content (every JSON section included).
 *
 * Tensors are either model tensors (full, each written by exactly one rank) or sharded arrays: a
 * global array (name, dtype, global shape) of which each rank stores ranges [start, start+count) of
 * the flattened elements. Every stored piece carries file, byte offset and xxh3-64 in the manifest;
 * the reader assembles any element range from the pieces, which is what re-slicing onto another
 * world size needs. See docs/checkpoints.md. */
#ifndef ZAYA_CKPT_H
#define ZAYA_CKPT_H

#include <stdint.h>
#include <stdio.h>
#include <cjson/cJSON.h>

#include "zaya/safetensors.h"
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZAYA_CKPT_FORMAT "zaya-checkpoint"
#define ZAYA_CKPT_VERSION 2 /* 2: manifest_xxh3 required; 1 (no manifest checksum) only with ZAYA_CKPT_OPEN_ACCEPT_V1 */
#define ZAYA_CKPT_SECTION_MODEL "model_config" /* zaya_config_to_json of the model */

/* How ranks coordinate during a save. The trainer implements it over MPI (gather = MPI_Gather of
 * lengths + MPI_Gatherv; bcast = MPI_Bcast from rank 0); NULL means a single process. In async mode
 * these are called from the writer thread (MPI must then run with MPI_THREAD_MULTIPLE, or use a
 * communicator reserved for checkpoints). */
typedef struct zaya_ckpt_comm {
    int rank, world;
    void *ctx;
    /* Each rank contributes len bytes; rank 0 receives the concatenation in rank order (*all,
     * malloc'd, freed by the caller) and lens[world]; other ranks get *all = NULL. */
    zaya_status (*gather)(void *ctx, const void *buf, size_t len, char **all, size_t *lens);
    /* Copies rank 0's len bytes into buf on every rank. */
    zaya_status (*bcast)(void *ctx, void *buf, size_t len);
} zaya_ckpt_comm;

/* An in-process group of `world` threads that act as ranks (tests, benchmarks, reshape). */
typedef struct zaya_ckpt_local_group zaya_ckpt_local_group;
zaya_status zaya_ckpt_local_group_new(zaya_ckpt_local_group **g, int world);
void zaya_ckpt_local_group_free(zaya_ckpt_local_group *g);
zaya_ckpt_comm zaya_ckpt_local_comm(zaya_ckpt_local_group *g, int rank);

typedef struct zaya_ckpt_options {
    zaya_st_dtype model_dtype; /* F32 (default) or BF16 */
    int split_model;           /* 1 (default): model tensors balanced across ranks by bytes; 0: rank 0 writes all */
    int keep_last;             /* keep the newest K checkpoints (0 = keep all) */
    int keep_every;            /* also keep steps that are multiples of M (0 = none) */
} zaya_ckpt_options;
zaya_ckpt_options zaya_ckpt_default_options(void);

typedef struct zaya_ckpt_save_stats {
    double snapshot_s; /* async: time the caller was stalled copying into host buffers */
    double write_s;    /* files written and fsynced, manifest, rename, latest (this rank's view) */
    double total_s;
    uint64_t bytes;    /* bytes this rank wrote */
    uint64_t bytes_all;/* bytes all ranks wrote (rank 0; others: own bytes) */
    int files;
    char dir[640];     /* final step directory */
} zaya_ckpt_save_stats;

/* Reusable host buffer for async snapshots (grown as needed, kept between saves). */
typedef struct zaya_ckpt_snapshot {
    void *buf;
    size_t cap;
} zaya_ckpt_snapshot;
/* Allocates and touches `bytes` up front (e.g. parameters + this rank's state at startup), so the
 * first async save does not pay the page faults of a fresh buffer inside its stall. */
zaya_status zaya_ckpt_snapshot_reserve(zaya_ckpt_snapshot *s, size_t bytes);
void zaya_ckpt_snapshot_free(zaya_ckpt_snapshot *s);

typedef struct zaya_ckpt_writer zaya_ckpt_writer;

/* Starts a save of `step` into root; every rank calls it with the same step, tokens and options. */
zaya_status zaya_ckpt_writer_init(zaya_ckpt_writer **w, const char *root, int64_t step, int64_t tokens,
                                  const zaya_ckpt_options *opt, const zaya_ckpt_comm *comm);
/* A global JSON section (copied). Rank 0's sections are the ones written; reserved names (format,
 * step, tensors, ...) are rejected. */
zaya_status zaya_ckpt_writer_add_section(zaya_ckpt_writer *w, const char *name, const cJSON *json);
/* A per-rank JSON section (copied), stored as manifest.ranks[r].sections[name]. */
zaya_status zaya_ckpt_writer_add_rank_section(zaya_ckpt_writer *w, const char *name, const cJSON *json);
/* A full model tensor (f32 data, stored as opt.model_dtype). Every rank adds the same list in the
 * same order; which rank writes each one is decided deterministically. */
zaya_status zaya_ckpt_writer_add_model(zaya_ckpt_writer *w, const char *name, int ndim, const int64_t *shape,
                                       const float *data);
/* Every tensor of a model (HF names) plus the model_config section. */
struct zaya_model;
zaya_status zaya_ckpt_writer_add_model_params(zaya_ckpt_writer *w, const struct zaya_model *m);
/* Elements [start, start+count) of the global array `name` (global shape, dtype) owned by this
 * rank; data has dtype `dtype`. A rank may add several ranges of one array; across ranks the
 * ranges must tile the array exactly (checked at commit). */
zaya_status zaya_ckpt_writer_add_shard(zaya_ckpt_writer *w, const char *name, zaya_st_dtype dtype, int ndim,
                                       const int64_t *global_shape, int64_t start, int64_t count, const void *data);
/* Collective. Writes, verifies the tiling, commits atomically, updates latest, applies retention.
 * Frees w. On failure nothing of this step remains and the previous checkpoints are untouched. */
zaya_status zaya_ckpt_writer_commit(zaya_ckpt_writer *w, zaya_ckpt_save_stats *st);
/* Copies every added buffer into snap (the stall, returned in *stall_s) and commits on a
 * background thread; the caller may modify its buffers as soon as this returns. */
zaya_status zaya_ckpt_writer_commit_async(zaya_ckpt_writer *w, zaya_ckpt_snapshot *snap, double *stall_s);
/* 1 once an async commit has finished (succeeded or failed): zaya_ckpt_writer_wait then returns at once. */
int zaya_ckpt_writer_done(const zaya_ckpt_writer *w);
/* Joins an async commit; returns its status and frees w. */
zaya_status zaya_ckpt_writer_wait(zaya_ckpt_writer *w, zaya_ckpt_save_stats *st);
void zaya_ckpt_writer_free(zaya_ckpt_writer *w); /* abandons an uncommitted writer */
/* A rank that failed while preparing its part must still take part in the collective commit: mark
 * the writer failed, then commit; every rank gets an error naming this rank and message. */
void zaya_ckpt_writer_set_error(zaya_ckpt_writer *w, zaya_status s, const char *msg);

/* ---- reading ---- */

typedef struct zaya_ckpt_piece {
    int rank;
    int file;        /* index into the checkpoint's file list */
    char *key;       /* tensor name inside the safetensors file */
    int64_t start, count;
    uint64_t offset; /* absolute byte offset in the file */
    uint64_t xxh3;
} zaya_ckpt_piece;

typedef struct zaya_ckpt_entry {
    char *name;
    int model;       /* 1: model tensor; 0: sharded array */
    zaya_st_dtype dtype;
    int ndim;
    int64_t shape[ZAYA_ST_MAX_DIMS];
    int64_t numel;
    int npieces;
    zaya_ckpt_piece *pieces; /* sorted by start, tiling [0, numel) */
} zaya_ckpt_entry;

typedef struct zaya_ckpt {
    char dir[512];
    cJSON *manifest;
    int64_t step, tokens;
    int world;
    int nfiles;
    char **file_names;
    zaya_st_file *files;
    int nentries;
    zaya_ckpt_entry *entries;
} zaya_ckpt;

/* Flags of zaya_ckpt_open's `verify` (and of the functions that pass it on). */
#define ZAYA_CKPT_OPEN_VERIFY 1    /* check every tensor xxh3 */
#define ZAYA_CKPT_OPEN_ACCEPT_V1 2 /* accept a format_version 1 manifest without manifest_xxh3 (warns) */

/* Opens one step directory: manifest (its manifest_xxh3 checked; a version-1 manifest without one is
 * refused unless ZAYA_CKPT_OPEN_ACCEPT_V1), every file (validated), every piece (present, dtype and
 * count match, offset matches, rank in [0, world_size)), every tensor name once, and the tiling of
 * every entry. verify & ZAYA_CKPT_OPEN_VERIFY also checks every tensor xxh3. */
zaya_status zaya_ckpt_open(zaya_ckpt **c, const char *step_dir, int verify);

/* What `latest` said compared with what the step directories hold (zaya_ckpt_open_newest). */
typedef enum zaya_ckpt_latest_state {
    ZAYA_CKPT_LATEST_OK,        /* latest names the checkpoint that was opened */
    ZAYA_CKPT_LATEST_MISSING,   /* no latest file (or unreadable) */
    ZAYA_CKPT_LATEST_GARBAGE,   /* latest does not name a step directory */
    ZAYA_CKPT_LATEST_BEHIND,    /* latest names an older step: a commit stopped before rewriting it */
    ZAYA_CKPT_LATEST_ABSENT,    /* latest names a step directory that does not exist */
    ZAYA_CKPT_LATEST_UNUSABLE,  /* latest names a step directory that did not open or verify */
} zaya_ckpt_latest_state;

#define ZAYA_CKPT_MAX_UNUSABLE 16
typedef struct zaya_ckpt_resolution {
    zaya_ckpt_latest_state latest;
    int64_t latest_step;        /* the step latest names; -1 when missing or garbage */
    int64_t step;               /* the step opened */
    int nunusable;              /* step directories newer than `step` that did not open or verify */
    int64_t unusable[ZAYA_CKPT_MAX_UNUSABLE]; /* newest first */
    char detail[1024];          /* why: latest's problem and the first unusable directory's error */
} zaya_ckpt_resolution;
const char *zaya_ckpt_latest_state_name(zaya_ckpt_latest_state s);

/* `root` holds step directories: opens the newest one that opens (and verifies with verify = 1),
 * whatever `latest` says, and describes in *r (may be NULL) how that compares with `latest`. Also
 * accepts a step directory (r->latest = OK). Error when no step directory opens. */
zaya_status zaya_ckpt_open_newest(zaya_ckpt **c, const char *root, int verify, zaya_ckpt_resolution *r);
/* zaya_ckpt_open_newest that warns (with the reason) when latest disagrees with what was opened. */
zaya_status zaya_ckpt_open_latest(zaya_ckpt **c, const char *path, int verify);
/* 1 when root has anything committed: a latest file or a step directory. */
int zaya_ckpt_root_has_checkpoints(const char *root);
/* The manifest checksum: XXH3-64 (16 hex digits) of cJSON_PrintUnformatted of the manifest without its
 * "manifest_xxh3" key, so it covers every value (sections, tables) but not the formatting. seal sets
 * or replaces the key (as the last one): call it after editing a manifest by hand. */
zaya_status zaya_ckpt_manifest_checksum(cJSON *manifest, char out[17]);
zaya_status zaya_ckpt_manifest_seal(cJSON *manifest);
void zaya_ckpt_close(zaya_ckpt *c);
zaya_status zaya_ckpt_verify(const zaya_ckpt *c); /* every checksum */
/* The tensor set against the model_config section (required): the config is valid (sizes within
 * their bounds), every tensor of its layout is stored exactly once as a model tensor of its shape,
 * and no other model tensor is stored. `ckpt verify` runs it. */
zaya_status zaya_ckpt_check_model(const zaya_ckpt *c);
/* Error (naming both sizes and the reshape command) unless the checkpoint was saved by `world` ranks.
 * For trainers that restore per-rank state as saved; reading ranges works on any world size. */
zaya_status zaya_ckpt_require_world(const zaya_ckpt *c, int world);
const cJSON *zaya_ckpt_section(const zaya_ckpt *c, const char *name);
const cJSON *zaya_ckpt_rank_section(const zaya_ckpt *c, int rank, const char *name);
const zaya_ckpt_entry *zaya_ckpt_find(const zaya_ckpt *c, const char *name);
/* Elements [start, start+count) of an entry, converted to f32 (F32/BF16/F16 entries). */
zaya_status zaya_ckpt_read_f32(const zaya_ckpt *c, const char *name, int64_t start, int64_t count, float *dst);
/* The same range as raw bytes in the entry's dtype. */
zaya_status zaya_ckpt_read_raw(const zaya_ckpt *c, const char *name, int64_t start, int64_t count, void *dst);
/* Writes a human summary (sections, files, tensors) to f. */
void zaya_ckpt_print_info(const zaya_ckpt *c, FILE *f, int list_tensors);

/* Rewrites a checkpoint for new_world ranks into dst_root (same step): sharded arrays are re-cut into
 * new_world contiguous ranges, balanced by elements and cut only at the unit boundaries listed in the
 * optimizer section ("units": {"<array>": [b0, b1, ...]}) when present; model tensors are split
 * (split_model) or all on rank 0. Sections are copied; world_size becomes new_world. new_world = 1
 * with split_model = 0 is `consolidate`. */
zaya_status zaya_ckpt_reshape(const char *src, const char *dst_root, int new_world, int split_model);

/* Retention over ROOT (what commit applies): removes step directories that are neither among the
 * newest keep_last nor multiples of keep_every, abandoned temp directories and latest.tmp.PID files
 * of dead processes, and (keep_last > 0) quarantined unusable-step-N-PID / rolledback-step-N-PID
 * directories once a step >= N is committed again. */
zaya_status zaya_ckpt_apply_retention(const char *root, int keep_last, int keep_every);

/* ---- model import/export (src/ckpt/hf.c) ---- */

struct zaya_config;
/* Fills m->params (m initialised with the right config) from a zaya checkpoint (step dir or root)
 * or a Hugging Face directory (HF or original 80-half-layer layout; f32/bf16/f16). Shapes must
 * match m's table; every tensor must be present. Syncs the bf16 shadow. */
zaya_status zaya_ckpt_load_model(const char *path, struct zaya_model *m);
/* The model config stored with a checkpoint or an HF directory (config.json). An HF config without
 * the zaya extension key "zaya_skip_mode" gets skip mode zero: transformers' (and vLLM's) Zaya
 * outputs zero for tokens routed to the skip class. */
zaya_status zaya_ckpt_load_config(const char *path, struct zaya_config *cfg);

/* Model tensors of a checkpoint one at a time, for readers that do not want a whole f32 block
 * (the inference weight store). A source is a zaya checkpoint (root or step directory; opened and
 * verified) or an HF directory (either layout); its safetensors files stay mapped until close. */
typedef struct zaya_model_source zaya_model_source;
struct zaya_tensor_info;
zaya_status zaya_model_source_open(zaya_model_source **s, const char *path);
void zaya_model_source_close(zaya_model_source *s);
/* Checks that tensor t of the model's table (nlayers: the config's) is stored, with t's shape. When it
 * is stored as one tensor, *raw points at its bytes in the mapping (possibly unaligned) and *dtype is
 * its stored dtype; otherwise (experts stored one tensor each) *raw is NULL. */
zaya_status zaya_model_source_find(const zaya_model_source *s, const struct zaya_tensor_info *t, int64_t nlayers,
                                   zaya_st_dtype *dtype, const void **raw);
/* Elements [start, start+count) of tensor t, converted to f32 (F32/BF16/F16 storage). */
zaya_status zaya_model_source_read_f32(const zaya_model_source *s, const struct zaya_tensor_info *t, int64_t nlayers,
                                       int64_t start, int64_t count, float *dst);

typedef struct zaya_hf_export_opts {
    zaya_st_dtype dtype;   /* F32 or BF16 */
    int64_t shard_bytes;   /* max bytes per model-*.safetensors (default 5 GiB) */
    const char *tokenizer; /* tokenizer.json to copy (NULL: none) */
} zaya_hf_export_opts;
zaya_status zaya_ckpt_export_hf(const char *ckpt, const char *out_dir, const zaya_hf_export_opts *o, int *nshards);
/* The same layout from the deterministic random init of cfg (zaya_model_init_weights' values for
 * `seed`), generated tensor by tensor in pieces: an 8B model is written in a few MiB of memory. */
zaya_status zaya_ckpt_export_hf_random(const struct zaya_config *cfg, uint64_t seed, const char *out_dir,
                                       const zaya_hf_export_opts *o, int *nshards);
typedef struct zaya_hf_import_opts {
    int skip_mode; /* -1: "zaya_skip_mode" of config.json, zero when absent; else a zaya_skip_mode that overrides it */
} zaya_hf_import_opts;
typedef struct zaya_hf_import_result {
    char step_dir[1024];     /* the checkpoint written */
    int skip_mode;           /* the zaya_skip_mode the checkpoint got */
    const char *skip_source; /* "config.json", "default" (key absent: transformers' zero) or "option" */
    int original_layout;     /* the tensors were in the original 80-half-layer layout */
} zaya_hf_import_result;
/* HF directory (either layout) -> a zaya checkpoint at out_root/step-00000000 (model + config).
 * o may be NULL (skip_mode -1); r may be NULL. */
zaya_status zaya_ckpt_import_hf(const char *hf_dir, const char *out_root, const zaya_hf_import_opts *o,
                                zaya_hf_import_result *r);

/* ---- `zaya ckpt bench`: save throughput of a model-sized state (parameters + AdamW m and v, the
 * moments sharded over in-process ranks) against the disk's sequential write throughput and a naive
 * single-file baseline, in the same run and directory; plus the async stall per save and the
 * verified load throughput. Table to out; ckpt_bench.json, .csv and .png in o->out. */
typedef struct zaya_ckpt_bench_opts {
    const char *out;    /* results */
    const char *config; /* model spec whose parameter block is saved */
    const char *dir;    /* checkpoints go to DIR/scratch (NULL: OUT/scratch), removed afterwards */
    int ranks;          /* 1..64 */
    int repeats;        /* 1..20; the best is reported */
    int threads;        /* 0: all cores */
} zaya_ckpt_bench_opts;
zaya_status zaya_ckpt_bench_run(const zaya_ckpt_bench_opts *o, FILE *out);

#ifdef __cplusplus
}
#endif

#endif
