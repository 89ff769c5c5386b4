/* `zaya data inspect|validate|bench`: look inside token shards, validate shards and run files; the
 * loader benchmark is zaya_data_bench_run (src/data/bench.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/curriculum.h"
#include "zaya/data.h"

/* ---------------------------------------------------------------- inspect */

static void print_foreign(const zaya_shard *s) {
    const zaya_shard_header *h = &s->hdr;
    if (s->format == ZAYA_SHARD_MEGATRON)
        printf("  format       Megatron indexed dataset (.idx version %u), dtype %s (code %d), %" PRIu64
               " sequences; .idx %zu bytes, .bin %" PRIu64 " bytes\n", s->file_version, zaya_token_dtype_name(s->dtype),
               s->dtype, s->sequences, s->idx_size, h->file_size);
    else
        printf("  format       llm.c token file (version %u), %s ids after the %u-byte header, file %" PRIu64 " bytes\n",
               s->file_version, zaya_token_dtype_name(s->dtype), ZAYA_LLMC_HEADER_BYTES, h->file_size);
    printf("  separator    eos id %u: %s\n", h->eos_id,
           s->format == ZAYA_SHARD_LLMC ? "before every document in the file (not counted in the documents)"
           : s->sep_stride ? "ends every document in the file (not counted in the documents)"
                           : "not stored in the file (packing inserts it between documents)");
    printf("  file tokens  %" PRIu64 " (documents and stored separators)\n", s->file_tokens);
}

static void print_shard(const zaya_shard *s, int64_t ntok) {
    const zaya_shard_header *h = &s->hdr;
    uint64_t mn = UINT64_MAX, mx = 0;
    for (uint64_t d = 0; d < h->doc_count; d++) {
        uint64_t len = s->doc_index[d + 1] - s->doc_index[d];
        mn = len < mn ? len : mn;
        mx = len > mx ? len : mx;
    }
    printf("shard %s\n", s->path);
    if (s->format != ZAYA_SHARD_ZTOK) {
        print_foreign(s);
        printf("  vocab        %" PRIu64 " ids (given)\n", h->vocab_size);
    } else {
        printf("  format       version %u, header %u bytes, %u-byte tokens (u%u)\n", h->version, h->header_size,
               h->token_width, 8 * h->token_width);
        printf("  vocab        %" PRIu64 " ids, eos id ", h->vocab_size);
        if (h->eos_id == ZAYA_SHARD_NO_EOS) printf("none"); else printf("%u", h->eos_id);
        printf(", tokenizer %016" PRIx64 "%s\n", h->tokenizer_hash, h->tokenizer_hash ? "" : " (unknown)");
    }
    printf("  tokens       %" PRIu64 " in %" PRIu64 " documents", h->token_count, h->doc_count);
    if (h->doc_count)
        printf(" (mean %.1f, min %" PRIu64 ", max %" PRIu64 " tokens)", (double)h->token_count / (double)h->doc_count, mn, mx);
    printf("\n");
    if (s->format == ZAYA_SHARD_ZTOK)
        printf("  layout       tokens at %" PRIu64 ", index at %" PRIu64 ", file %" PRIu64 " bytes\n", h->tokens_offset,
               h->index_offset, h->file_size);
    printf("  first tokens");
    for (uint64_t i = 0; i < s->file_tokens && i < (uint64_t)ntok; i++) printf(" %u", zaya_shard_token(s, i));
    printf("%s\n", s->file_tokens > (uint64_t)ntok ? " ..." : "");
}

/* Megatron and llm.c token files store no vocabulary size and no end-of-document id. */
#define FOREIGN_FLAGS(vocab, eos)                                                                                    \
    {"vocab-size", 0, ZAYA_FLAG_I64, vocab, "V", "Megatron / llm.c files: the tokenizer's vocabulary size"},         \
    {"eos-id", 0, ZAYA_FLAG_I64, eos, "ID", "Megatron / llm.c files: the end-of-document id (llm.c: EOT)"}

static int foreign_opts(const zaya_cmd_spec *spec, int64_t vocab, int64_t eos, int verify, zaya_shard_open_opts *o) {
    if (vocab < 0 || vocab > (1ll << 31)) return zaya_flags_usage_error(spec, "--vocab-size must be in [1, 2^31]");
    if (eos < -1 || (eos >= 0 && vocab > 0 && eos >= vocab))
        return zaya_flags_usage_error(spec, "--eos-id must be in [0, --vocab-size)");
    *o = (zaya_shard_open_opts){.verify_checksum = verify, .vocab_size = (uint64_t)vocab,
                                .eos_id = eos < 0 ? ZAYA_SHARD_NO_EOS : (uint32_t)eos};
    return -1;
}

int zaya_cmd_data_inspect(int argc, char **argv) {
    int64_t ntok = 16, vocab = 0, eos = -1;
    int no_verify = 0;
    zaya_flag flags[] = {
        {"tokens", 'n', ZAYA_FLAG_I64, &ntok, "N", "print the first N token ids (default 16)"},
        {"no-verify", 0, ZAYA_FLAG_BOOL, &no_verify, NULL, "skip the payload checksum (default: verify)"},
        FOREIGN_FLAGS(&vocab, &eos),
    };
    zaya_cmd_spec spec = {"data inspect", "Show a token shard's header, counts, checksum and first tokens", "[options] SHARD...",
                          "Every header field and offset is validated on open; a bad shard is reported and the "
                          "command exits 1 after the others were shown. SHARD may also be a Megatron indexed "
                          "dataset (PREFIX, PREFIX.idx or PREFIX.bin) or an llm.c .bin token file, read in place: "
                          "those need --vocab-size and --eos-id.",
                          flags, 4};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos < 1) return zaya_flags_usage_error(&spec, "expected at least one SHARD");
    if (ntok < 0) return zaya_flags_usage_error(&spec, "--tokens must be >= 0");
    zaya_shard_open_opts o;
    if ((rc = foreign_opts(&spec, vocab, eos, 0, &o)) >= 0) return rc;
    int bad = 0;
    for (int i = 0; i < args.npos; i++) {
        zaya_shard s;
        if (zaya_shard_open_ext(args.pos[i], &o, &s) != ZAYA_OK) {
            zaya_cli_error("data inspect", NULL);
            bad++;
            continue;
        }
        print_shard(&s, ntok);
        if (s.format != ZAYA_SHARD_ZTOK) {
            printf("  checksum     none stored in this format; every size, offset and id was checked\n");
        } else if (!no_verify) {
            if (zaya_shard_verify_checksum(&s) == ZAYA_OK) {
                printf("  checksum     xxh3 %016" PRIx64 ": ok\n", s.hdr.payload_xxh3);
            } else {
                printf("  checksum     xxh3 %016" PRIx64 ": MISMATCH\n", s.hdr.payload_xxh3);
                zaya_cli_error("data inspect", NULL);
                bad++;
            }
        }
        zaya_shard_close(&s);
    }
    return bad ? 1 : 0;
}

/* ---------------------------------------------------------------- validate */

static int validate_run(const char *path) {
    zaya_run run;
    if (zaya_run_load(path, &run) != ZAYA_OK) return zaya_cli_error("data validate", NULL);
    printf("run %s: %d phases, %" PRId64 " steps, %" PRId64 " tokens\n", run.name, run.nphases, run.total_steps,
           run.total_tokens);
    for (int i = 0; i < run.nphases; i++) {
        const zaya_phase *p = &run.phases[i];
        printf("  %-20s steps %6" PRId64 "-%-6" PRId64 " seq %5" PRId64 " batch %4" PRId64 "->%-4" PRId64 " theta %-8g lr %g->%g\n",
               p->name, p->first_step, p->first_step + p->steps - 1, p->seq_len, p->batch_from, p->batch, p->rope_theta,
               p->lr_peak, p->lr_final);
    }
    int bad = 0;
    for (int val = 0; val < 2; val++) {
        zaya_dataset ds;
        if (zaya_run_open_dataset(&run, val, 1, &ds) != ZAYA_OK) {
            zaya_cli_error("data validate", NULL);
            bad++;
            continue;
        }
        for (int i = 0; i < ds.nsources; i++)
            printf("  %-5s source %-12s %3d shards, %" PRIu64 " tokens, %" PRIu64 " documents: ok\n", val ? "val" : "train",
                   ds.src[i].name, ds.src[i].nshards, ds.src[i].ntokens, ds.src[i].ndocs);
        for (int i = 0; i < run.nphases && !val; i++) /* every phase must find a sequence in each source it draws */
            for (int k = 0; k < run.phases[i].nsources; k++) {
                int j = zaya_dataset_find(&ds, run.phases[i].source[k]);
                if (run.phases[i].weight[k] > 0 && zaya_data_source_sequences(&ds.src[j], run.phases[i].seq_len) == 0) {
                    zaya_cli_error("data validate", "phase '%s': source '%s' is shorter than one sequence",
                            run.phases[i].name, ds.src[j].name);
                    bad++;
                }
            }
        zaya_dataset_free(&ds);
    }
    zaya_run_free(&run);
    return bad ? 1 : 0;
}

int zaya_cmd_data_validate(int argc, char **argv) {
    const char *run = NULL;
    int64_t vocab = 0, eos = -1;
    zaya_flag flags[] = {
        {"run", 0, ZAYA_FLAG_STRING, &run, "FILE", "also validate a run file and every shard its sources name"},
        FOREIGN_FLAGS(&vocab, &eos),
    };
    zaya_cmd_spec spec = {"data validate", "Fully validate token shards (structure, ids < vocab, checksums)",
                          "[options] [SHARD|DIR|GLOB...]",
                          "Megatron indexed datasets (PREFIX.idx + PREFIX.bin) and llm.c .bin token files are "
                          "validated too (every size, offset, document index and id), given --vocab-size and "
                          "--eos-id.", flags, 3};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos < 1 && !run) return zaya_flags_usage_error(&spec, "expected shards or --run FILE");
    zaya_shard_open_opts o;
    if ((rc = foreign_opts(&spec, vocab, eos, 1, &o)) >= 0) return rc;
    int bad = 0;
    if (args.npos > 0) {
        char **paths;
        int n;
        if (zaya_data_expand((const char *const *)args.pos, args.npos, &paths, &n) != ZAYA_OK)
            return zaya_cli_error("data validate", NULL);
        for (int i = 0; i < n; i++) {
            zaya_shard s;
            if (zaya_shard_open_ext(paths[i], &o, &s) != ZAYA_OK) {
                zaya_cli_error("data validate", NULL);
                bad++;
                continue;
            }
            printf("ok   %s (%" PRIu64 " tokens, %" PRIu64 " documents)\n", paths[i], s.hdr.token_count, s.hdr.doc_count);
            zaya_shard_close(&s);
        }
        printf("%d of %d shards valid\n", n - bad, n);
        zaya_data_paths_free(paths, n);
    }
    if (run) bad += validate_run(run);
    return bad ? 1 : 0;
}

int zaya_cmd_data_bench(int argc, char **argv) {
    int64_t G = 32;
    double min_s = 1.0;
    const char *out = "results/data-bench";
    zaya_flag flags[] = {
        {"batch", 'b', ZAYA_FLAG_I64, &G, "G", "global batch in sequences (default 32)"},
        {"seconds", 0, ZAYA_FLAG_DOUBLE, &min_s, "S", "measure each case for at least S seconds (default 1)"},
        ZAYA_FLAG_OUTDIR(&out, "results/data-bench"),
    };
    zaya_cmd_spec spec = {"data bench", "Loader throughput (shuffled, packed batches from mmap) vs a sequential copy",
                          "[options] SHARD|DIR|GLOB...",
                          "Each argument is one source, drawn with equal weight. Sequence lengths 128..8192; the "
                          "loader runs on one thread. Results: table on stdout, data-bench.json and "
                          "data-bench.png in the output directory.",
                          flags, 3};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos < 1) return zaya_flags_usage_error(&spec, "expected at least one SHARD, DIR or GLOB");
    if (G < 1 || !(min_s > 0)) return zaya_flags_usage_error(&spec, "--batch must be >= 1 and --seconds > 0");
    if (args.npos > ZAYA_DATA_MAX_SOURCES) return zaya_flags_usage_error(&spec, "at most %d sources", ZAYA_DATA_MAX_SOURCES);
    if (zaya_data_bench_run((const char *const *)args.pos, args.npos, G, min_s, out, stdout) != ZAYA_OK)
        return zaya_cli_error("data bench", NULL);
    return 0;
}
