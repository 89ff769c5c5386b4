/* zaya bench mem: STREAM by STREAM's rules across thread counts, plus a working-set sweep. */
#include <stdio.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/bench_mem.h"
#include "zaya/threads.h"

static const char *g_details =
    "STREAM rules: 8-byte elements, each array >= 4x the last-level cache (read from sysfs), NTIMES\n"
    "repetitions with the first discarded and the best reported, bytes counted as STREAM does (copy,\n"
    "scale 16 B/element; add, triad 24; read, write 8; no write-allocate traffic), MB = 1e6 bytes,\n"
    "results validated. Thread counts 1, 2, 4, ... up to --threads. The working-set sweep runs triad\n"
    "and read (--ws-threads threads) on total array sizes from --ws-min to --ws-max (x2), showing the\n"
    "L1/L2/L3/DRAM plateaus. Writes mem.json, mem.csv, mem_ws.csv, mem_threads.png, mem_ws.png.\n"
    "--device cuda[:N]: BabelStream copy/mul/add/triad/dot on device arrays (default max(256M, 4 x L2)\n"
    "each) by the same rules, host<->device copies of --copy-bytes from pinned and pageable memory, %\n"
    "of the datasheet HBM bandwidth; writes mem.json (docs/gpu.md).";

int zaya_cmd_bench_mem(int argc, char **argv) {
    zaya_mem_plan plan;
    zaya_mem_plan_default(&plan);
    int threads = 0;
    int64_t array_bytes = 0;
    const char *outdir = "out/bench-mem", *device = "cpu";
    int64_t copy_bytes = 0;
    zaya_flag flags[] = {
        ZAYA_FLAG_THREADS(&threads),
        {"ntimes", 0, ZAYA_FLAG_INT, &plan.ntimes, "N", "STREAM repetitions, first discarded (default 10, min 2)"},
        {"array-bytes", 0, ZAYA_FLAG_BYTES, &array_bytes, "SIZE",
         "bytes per array (default: max(80M, 4 x last-level cache)); smaller than 4 x LLC is flagged non-conforming"},
        {"ws-sweep", 0, ZAYA_FLAG_INT, &plan.ws_sweep, "0|1", "run the working-set sweep (default 1)"},
        {"ws-threads", 0, ZAYA_FLAG_INT, &plan.ws_threads, "N",
         "threads of the working-set sweep (default 1: one core's L1/L2 plateaus; 0 = --threads)"},
        {"ws-min", 0, ZAYA_FLAG_BYTES, &plan.ws_min, "SIZE", "smallest working set (default 16K)"},
        {"ws-max", 0, ZAYA_FLAG_BYTES, &plan.ws_max, "SIZE", "largest working set (default 1G)"},
        {"device", 0, ZAYA_FLAG_STRING, &device, "cpu|cuda[:N]", "host memory (STREAM) or a CUDA device's (BabelStream) (default cpu)"},
        {"copy-bytes", 0, ZAYA_FLAG_BYTES, &copy_bytes, "SIZE", "host<->device copy size with --device cuda (default 256M)"},
        ZAYA_FLAG_OUTDIR(&outdir, "out/bench-mem"),
    };
    zaya_cmd_spec spec = {"bench mem", "memory bandwidth: STREAM copy/scale/add/triad + read/write, thread and "
                                       "working-set sweeps",
                          "[options]", g_details, flags, (int)(sizeof flags / sizeof flags[0])};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos) return zaya_flags_usage_error(&spec, "unexpected argument '%s'", args.pos[0]);
    if (plan.ntimes < 2 || plan.ntimes > 64)
        return zaya_flags_usage_error(&spec, "--ntimes must be in 2..64 (got %d)", plan.ntimes);
    if (plan.ws_min < 1024 || plan.ws_max < plan.ws_min)
        return zaya_flags_usage_error(&spec, "--ws-min must be >= 1K and <= --ws-max");
    if (plan.ws_threads < 0) return zaya_flags_usage_error(&spec, "--ws-threads must be >= 0");
    if (array_bytes != 0 && array_bytes < 8 * 1024)
        return zaya_flags_usage_error(&spec, "--array-bytes must be at least 8K");
    zaya_device dev;
    if (zaya_device_parse(device, &dev) != ZAYA_OK)
        return zaya_flags_usage_error(&spec, "--device: %s", zaya_error_message());
    if (dev.kind == ZAYA_DEVICE_CUDA) {
        if (copy_bytes < 0 || (copy_bytes > 0 && copy_bytes < 4096))
            return zaya_flags_usage_error(&spec, "--copy-bytes must be at least 4K");
        zaya_mem_gpu_plan gp = {dev, array_bytes, copy_bytes, plan.ntimes};
        if (zaya_bench_mem_gpu_run(&gp, outdir, stdout) != ZAYA_OK) return zaya_cli_error("bench mem", NULL);
        return 0;
    }
    plan.max_threads = zaya_threads_init(threads);
    plan.array_elems = array_bytes / 8;

    static zaya_mem_run run; /* large (a few KiB of results): keep it off the stack */
    zaya_status st = zaya_bench_mem_run(&plan, &run, stdout);
    if (st == ZAYA_OK) st = zaya_bench_mem_write(&run, outdir);
    if (st != ZAYA_OK) {
        return zaya_cli_error("bench mem", NULL);
    }
    printf("# results written to %s (mem.json, mem.csv, mem_ws.csv, plots)\n", outdir);
    return 0;
}
