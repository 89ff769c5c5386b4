/* zaya bench all: flags over zaya_bench_all_run (src/bench/all.c), which writes the machine profile. */
#include <stdio.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/bench_all.h"

static const char *g_details =
    "Runs, in order: collectives (outside mpirun: `zaya bench coll` under `mpirun -np 2` and `-np 4\n"
    "--oversubscribe` when mpirun is found, then world 1 in-process, which measures latency only;\n"
    "under mpirun: every rank in-process, then only rank 0 continues), memory (STREAM at 1, 2, 4 ...\n"
    "threads, no working-set sweep), and GEMM (square sizes and the ZAYA1 model shape classes, f32 and\n"
    "bf16, through zaya_matmul, with the oneDNN peak). Writes profile.json (docs/profile-format.md; read\n"
    "it with `zaya size predict ... --hw DIR/profile.json`), gemm.csv, mem/, coll/, coll-npN/ and their\n"
    "logs. --quick keeps the whole run under about a minute.";

int zaya_cmd_bench_all(int argc, char **argv) {
    zaya_bench_all_opts a = {.outdir = "out/bench-all", .mpi = 1};
    zaya_flag flags[] = {
        ZAYA_FLAG_THREADS(&a.threads),
        {"quick", 0, ZAYA_FLAG_BOOL, &a.quick, NULL, "shorter sweeps and fewer samples (about a minute)"},
        {"mpi", 0, ZAYA_FLAG_INT, &a.mpi, "0|1", "launch the 2- and 4-rank collective runs under mpirun (default 1)"},
        {"mpirun", 0, ZAYA_FLAG_STRING, &a.mpirun, "PATH", "mpirun to use (default: the one on PATH)"},
        ZAYA_FLAG_OUTDIR(&a.outdir, "out/bench-all"),
    };
    zaya_cmd_spec spec = {"bench all", "short run of mem, gemm and coll; writes the machine profile.json", "[options]",
                          g_details, flags, (int)(sizeof flags / sizeof flags[0])};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos) return zaya_flags_usage_error(&spec, "unexpected argument '%s'", args.pos[0]);
    if (a.threads < 0) return zaya_flags_usage_error(&spec, "--threads must be >= 0 (got %d)", a.threads);
    if (a.mpi != 0 && a.mpi != 1) return zaya_flags_usage_error(&spec, "--mpi takes 0 or 1 (got %d)", a.mpi);
    if (zaya_bench_all_run(&a, stdout) != ZAYA_OK) return zaya_cli_error("bench all", NULL);
    return 0;
}
