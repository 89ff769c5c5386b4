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

static void print_shard(const zaya_shard *s, int64_t ntok) {
    const zaya_shard_header *h = &s->hdr;
    uint64_t mn = UINT64_MAX, mx = 0;
    for (uint64_t d = 0; d < h->doc_count; d++) {
        uint64_t len = s->doc_index[d + 1] - s->doc_index[d];
        mn = len < mn ? len : mn;
        mx = len > mx ? len : mx;
    }
    printf("shard %s\n", s->path);
    printf("  format       version %u, header %u bytes, %u-byte tokens (u%u)\n", h->version, h->header_size,
           h->token_width, 8 * h->token_width);
    printf("  vocab        %" PRIu64 " ids, eos id ", h->vocab_size);
    if (h->eos_id == ZAYA_SHARD_NO_EOS) printf("none"); else printf("%u", h->eos_id);
    printf(", tokenizer %016" PRIx64 "%s\n", h->tokenizer_hash, h->tokenizer_hash ? "" : " (unknown)");
    printf("  tokens       %" PRIu64 " in %" PRIu64 " documents", h->token_count, h->doc_count);
    if (h->doc_count)
        printf(" (mean %.1f, min %" PRIu64 ", max %" PRIu64 " tokens)", (double)h->token_count / (double)h->doc_count, mn, mx);
    printf("\n  layout       tokens at %" PRIu64 ", index at %" PRIu64 ", file %" PRIu64 " bytes\n", h->tokens_offset,
           h->index_offset, h->file_size);
    printf("  first tokens");
    for (uint64_t i = 0; i < h->token_count && i < (uint64_t)ntok; i++) printf(" %u", zaya_shard_token(s, i));
    printf("%s\n", h->token_count > (uint64_t)ntok ? " ..." : "");
}

int zaya_cmd_data_inspect(int argc, char **argv) {
    int64_t ntok = 16;
    int no_verify = 0;
    zaya_flag flags[] = {
        {"tokens", 'n', ZAYA_FLAG_I64, &ntok, "N", "print the first N token ids (default 16)"},
        {"no-verify", 0, ZAYA_FLAG_BOOL, &no_verify, NULL, "skip the payload checksum (default: verify)"},
    };
    zaya_cmd_spec spec = {"data inspect", "Show a token shard's header, counts, checksum and first tokens", "[options] SHARD...",
                          "Every header field and offset is validated on open; a bad shard is reported and the "
                          "command exits 1 after the others were shown.",
                          flags, 2};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos < 1) return zaya_flags_usage_error(&spec, "expected at least one SHARD");
    if (ntok < 0) return zaya_flags_usage_error(&spec, "--tokens must be >= 0");
    int bad = 0;
    for (int i = 0; i < args.npos; i++) {
        zaya_shard s;
        if (zaya_shard_open(args.pos[i], 0, &s) != ZAYA_OK) {
            zaya_cli_error("data inspect", NULL);
            bad++;
            continue;
        }
        print_shard(&s, ntok);
        if (!no_verify) {
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
    zaya_flag flags[] = {
        {"run", 0, ZAYA_FLAG_STRING, &run, "FILE", "also validate a run file and every shard its sources name"},
    };
    zaya_cmd_spec spec = {"data validate", "Fully validate token shards (structure, ids < vocab, checksums)",
                          "[options] [SHARD|DIR|GLOB...]", NULL, flags, 1};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos < 1 && !run) return zaya_flags_usage_error(&spec, "expected shards or --run FILE");
    int bad = 0;
    if (args.npos > 0) {
        char **paths;
        int n;
        if (zaya_data_expand((const char *const *)args.pos, args.npos, &paths, &n) != ZAYA_OK)
            return zaya_cli_error("data validate", NULL);
        for (int i = 0; i < n; i++) {
            zaya_shard s;
            if (zaya_shard_open(paths[i], 1, &s) != ZAYA_OK) {
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
