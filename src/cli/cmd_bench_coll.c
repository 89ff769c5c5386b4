/* zaya bench coll: collective bandwidth and correctness, nccl-tests conventions, under mpirun. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/bench_coll.h"
#include "zaya/dist.h"
#include "zaya/log.h"

static const char *g_details =
    "Run under MPI, e.g.\n"
    "  mpirun -np 4 --allow-run-as-root --oversubscribe zaya bench coll -b 8 -e 64M -f 2 --coll all\n"
    "Flags follow nccl-tests (-b -e -f -i -n -w -c -o -d -r -z -a -m -N -C -J -g -t -G, the same long\n"
    "names too). Sizes take K/M/G suffixes (binary); GB/s are 1e9 bytes/s. busbw = algbw x factor:\n"
    "allreduce 2(n-1)/n; reducescatter, allgather, alltoall (n-1)/n; broadcast, reduce, sendrecv 1.\n"
    "Since -o selects the reduction op (as in nccl-tests), the output directory is --out. Every check\n"
    "iteration compares every element with its exact expected value; the footer's 'Out of bounds values' counts wrong elements summed over ranks (any -> exit 1).\n"
    "--sweep repeats everything on sub-groups of 2, 4, ... ranks; --placement spread builds those groups\n"
    "from ranks spaced world/k apart instead of the first k. Each size is also timed as a bare MPI loop\n"
    "(interleaved iteration by iteration) and the summary reports the zaya/bare time ratio.\n"
    "-z 0 (the default, as in nccl-tests) times MPI_Iallreduce & co. + MPI_Wait: in Open MPI that is\n"
    "libnbc, a different code path from the blocking calls OSU and IMB time. Compare them with -z 1, or\n"
    "-z 2 (each sweep twice, non-blocking then blocking; the summary's -z column tells them apart).\n"
    "count follows nccl-tests: for reducescatter, allgather and alltoall the per-rank count, rounded\n"
    "down to 16 bytes per rank; size is the whole buffer.\n"
    "In-place follows MPI: reduce-scatter leaves the result in the first block; MPI broadcasts in\n"
    "place, so broadcast's two columns time the same call. bf16 reductions round once per pairwise\n"
    "combine (see include/zaya/dist.h); check inputs make every expected value exact.\n"
    "--backend nccl: the same sizes, table, busbw and exact check on device buffers through NCCL, one rank\n"
    "per GPU: mpirun -np N (one GPU per process) or -g N in one process; each iteration timed with device\n"
    "events; in-place alltoall/sendrecv are N/A (grouped send/recv cannot share one buffer).\n"
    "nccl-tests flags: -a 0..3 picks what time is reported over ranks (coll.json keeps all four), -m N\n"
    "times N operations per sample, -N N repeats the plan (-N 0: until Ctrl-C / SIGTERM; the cycle in\n"
    "progress finishes, then results are written and the exit is clean; a second signal terminates),\n"
    "-C 1 reports CPU time, -J FILE writes the JSON report (docs/bench.md). -g, -t and -G are GPU options:\n"
    "-g N needs --backend nccl; -t takes only 1 and -G only 0 (no CUDA graphs).\n"
    "Writes coll.json, coll.csv and coll_<collective>_{busbw,latency}.png.";

int zaya_cmd_bench_coll(int argc, char **argv) {
    int64_t min_bytes = 8, max_bytes = 1 << 20, step_bytes = 0;
    double factor = 0;
    int iters = 20, warmup = 5, check = 1, root = 0, blocking = 0, sweep = 0, bare = 1, stats = 0, inject = 0;
    int64_t seed = 1234;
    int ngpus = 1, nthreads = 1, cudagraph = 0, average = 1, agg_iters = 1, cycles = 1, cputime = 0;
    const char *backend_s = "mpi", *report = NULL;
    const char *op_s = "sum", *dtype_s = "float", *coll_s = "allreduce", *place_s = "packed", *outdir = "out/bench-coll";
    zaya_flag flags[] = {
        {"minbytes", 'b', ZAYA_FLAG_BYTES, &min_bytes, "SIZE", "smallest message in bytes, K/M/G suffixes (default 8)"},
        {"maxbytes", 'e', ZAYA_FLAG_BYTES, &max_bytes, "SIZE", "largest message in bytes (default 1M)"},
        {"stepfactor", 'f', ZAYA_FLAG_DOUBLE, &factor, "F", "multiply the size by F each step (default 2)"},
        {"stepbytes", 'i', ZAYA_FLAG_BYTES, &step_bytes, "SIZE", "add SIZE bytes each step instead of -f"},
        {"iters", 'n', ZAYA_FLAG_INT, &iters, "N", "timed iterations per size (default 20)"},
        {"warmup_iters", 'w', ZAYA_FLAG_INT, &warmup, "N", "warmup iterations per size (default 5)"},
        {"check", 'c', ZAYA_FLAG_INT, &check, "N", "iterations whose results are checked exactly (default 1; 0 = off)"},
        {"op", 'o', ZAYA_FLAG_STRING, &op_s, "OP", "reduction: sum, prod, min, max, avg or all (default sum)"},
        {"datatype", 'd', ZAYA_FLAG_STRING, &dtype_s, "TYPE", "float, bf16 or all (default float)"},
        {"root", 'r', ZAYA_FLAG_INT, &root, "R", "root of broadcast and reduce (default 0)"},
        {"blocking", 'z', ZAYA_FLAG_INT, &blocking, "0|1|2",
         "0: MPI_I* start + MPI_Wait (libnbc, default); 1: blocking calls (what OSU/IMB time); 2: both"},
        {"coll", 0, ZAYA_FLAG_STRING, &coll_s, "LIST",
         "allreduce,reducescatter,allgather,broadcast,reduce,alltoall,sendrecv or all (default allreduce)"},
        {"sweep", 0, ZAYA_FLAG_BOOL, &sweep, NULL, "also run on sub-groups of 2, 4, ... ranks"},
        {"placement", 0, ZAYA_FLAG_STRING, &place_s, "P", "sub-group placement: packed, spread or both (default packed); hosts: also every host's ranks (intra-host) and the first rank of each host (inter-host)"},
        {"bare", 0, ZAYA_FLAG_INT, &bare, "0|1", "time the bare MPI loop for the overhead ratio (default 1)"},
        {"stats", 0, ZAYA_FLAG_BOOL, &stats, NULL, "print the per-iteration timing table (min/avg/max, p50/p99)"},
        {"seed", 0, ZAYA_FLAG_I64, &seed, "S", "seed of the check inputs (default 1234)"},
        {"inject-wrong", 0, ZAYA_FLAG_BOOL, &inject, NULL,
         "self-test of the check: the last rank corrupts one output element before each check (must FAIL)"},
        {"backend", 0, ZAYA_FLAG_STRING, &backend_s, "mpi|nccl", "mpi: host buffers over MPI; nccl: device buffers over NCCL, one rank per GPU (default mpi)"},
        {"average", 'a', ZAYA_FLAG_INT, &average, "0|1|2|3",
         "time reported over ranks: 0 rank 0's, 1 the average, 2 min, 3 max of each rank's mean (default 1)"},
        {"agg_iters", 'm', ZAYA_FLAG_INT, &agg_iters, "N",
         "operations per timed sample, reported per operation (MPI back to back, NCCL one group; default 1)"},
        {"run_cycles", 'N', ZAYA_FLAG_INT, &cycles, "N",
         "run the whole plan N times, each cycle printed (default 1; 0: until SIGINT/SIGTERM, clean end)"},
        {"report_cputime", 'C', ZAYA_FLAG_INT, &cputime, "0|1",
         "1: report CPU time (MPI: the process's, every thread; NCCL: host enqueue time) (default 0)"},
        {"ngpus", 'g', ZAYA_FLAG_INT, &ngpus, "N", "GPUs per process with --backend nccl (nccl-tests -g; default 1)"},
        {"nthreads", 't', ZAYA_FLAG_INT, &nthreads, "N",
         "threads per process (nccl-tests -t): only 1; use -g for more GPUs"},
        {"cudagraph", 'G', ZAYA_FLAG_INT, &cudagraph, "N",
         "CUDA graph launches (nccl-tests -G): only 0, events time each iteration"},
        {"output_file", 'J', ZAYA_FLAG_STRING, &report, "FILE",
         "also write a JSON report: rows, hosts, MPI/NCCL versions, devices, env, start/end time, command line"},
        {"out", 0, ZAYA_FLAG_STRING, &outdir, "DIR", "output directory (default: out/bench-coll)"},
    };
    zaya_cmd_spec spec = {"bench coll", "collective bandwidth, latency and exact correctness (nccl-tests style)",
                          "[options]", g_details, flags, (int)(sizeof flags / sizeof flags[0])};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos) return zaya_flags_usage_error(&spec, "unexpected argument '%s'", args.pos[0]);

    zaya_coll_plan plan = {0};
    zaya_coll_opts_default(&plan.opts);
    if (factor != 0 && step_bytes != 0) return zaya_flags_usage_error(&spec, "use either -f or -i, not both");
    if (factor != 0 && factor <= 1) return zaya_flags_usage_error(&spec, "-f must be > 1 (got %g)", factor);
    if (min_bytes < 1) return zaya_flags_usage_error(&spec, "-b must be at least 1 byte");
    if (max_bytes < min_bytes)
        return zaya_flags_usage_error(&spec, "-e %lld is smaller than -b %lld", (long long)max_bytes, (long long)min_bytes);
    if (iters < 1 || warmup < 0 || check < 0) return zaya_flags_usage_error(&spec, "-n must be >= 1, -w and -c >= 0");
    if (blocking < 0 || blocking > 2) return zaya_flags_usage_error(&spec, "-z takes 0, 1 or 2 (got %d)", blocking);
    plan.opts.min_bytes = min_bytes;
    plan.opts.max_bytes = max_bytes;
    plan.opts.step_factor = step_bytes ? 0 : (factor ? factor : 2.0);
    plan.opts.step_bytes = step_bytes;
    plan.opts.iters = iters;
    plan.opts.warmup = warmup;
    plan.opts.check_iters = check;
    plan.opts.blocking = blocking;
    plan.opts.bare = bare != 0;
    plan.opts.seed = (uint64_t)seed;
    plan.opts.inject_wrong = inject;
    plan.root = root;
    if (!strcmp(backend_s, "nccl")) plan.backend = ZAYA_COLL_BACKEND_NCCL;
    else if (strcmp(backend_s, "mpi")) return zaya_flags_usage_error(&spec, "--backend: unknown backend '%s' (mpi or nccl)", backend_s);
    if (cycles < 0) return zaya_flags_usage_error(&spec, "-N/--run_cycles must be >= 0 (got %d)", cycles);
    /* 0 means the default (1) in the library's plan; on the command line it is a bad value. */
    if (ngpus < 1) return zaya_flags_usage_error(&spec, "-g/--ngpus must be in 1..64 (got %d)", ngpus);
    if (nthreads < 1) return zaya_flags_usage_error(&spec, "-t/--nthreads %d: only 1 (got %d)", nthreads, nthreads);
    plan.ngpus = ngpus;
    plan.nthreads = nthreads;
    plan.cudagraph = cudagraph;
    plan.cycles = cycles == 0 ? ZAYA_COLL_CYCLES_UNTIL_STOPPED : cycles;
    plan.report_path = report;
    plan.argc = argc;
    plan.argv = argv;
    plan.opts.average = average;
    plan.opts.agg_iters = agg_iters;
    plan.opts.report_cputime = cputime;
    plan.sweep = sweep;
    if (zaya_coll_parse_list(coll_s, &plan.colls) != ZAYA_OK)
        return zaya_flags_usage_error(&spec, "--coll: %s", zaya_error_message());
    if (!strcmp(op_s, "all")) plan.ops = (1u << ZAYA_REDOP_COUNT) - 1;
    else {
        zaya_redop op;
        if (zaya_redop_parse(op_s, &op) != ZAYA_OK) return zaya_flags_usage_error(&spec, "-o: %s", zaya_error_message());
        plan.ops = 1u << op;
    }
    if (!strcmp(dtype_s, "all")) plan.dtypes = 3;
    else {
        zaya_dist_dtype t;
        if (zaya_dist_dtype_parse(dtype_s, &t) != ZAYA_OK)
            return zaya_flags_usage_error(&spec, "-d: %s", zaya_error_message());
        plan.dtypes = 1u << t;
    }
    if (!strcmp(place_s, "packed")) plan.placements = 1;
    else if (!strcmp(place_s, "spread")) plan.placements = 2;
    else if (!strcmp(place_s, "both")) plan.placements = 3;
    else if (!strcmp(place_s, "hosts")) plan.placements = 1 | 4;
    else return zaya_flags_usage_error(&spec, "--placement: unknown placement '%s' (packed, spread, both or hosts)", place_s);
    if (zaya_coll_plan_check(&plan) != ZAYA_OK) return zaya_flags_usage_error(&spec, "%s", zaya_error_message());

    int64_t wrong = 0;
    if (zaya_bench_coll_main(&plan, stats, outdir, stdout, &wrong) != ZAYA_OK) return zaya_cli_error("bench coll", NULL);
    return wrong ? 1 : 0;
}
