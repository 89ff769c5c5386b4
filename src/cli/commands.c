#include "cli/commands.h"

#include <stdio.h>
#include <string.h>

static const zaya_command bench_commands[] = {
    {"coll", "collective bandwidth and correctness under mpirun (nccl-tests style)", zaya_cmd_bench_coll, NULL},
    {"mem", "memory bandwidth: STREAM kernels, thread sweep, working-set sweep", zaya_cmd_bench_mem, NULL},
    {0},
};

const zaya_command zaya_commands[] = {
    {"bench", "benchmarks that characterise the machine", NULL, bench_commands},
    {0},
};

static void print_table(FILE *f, const zaya_command *table, const char *prefix) {
    fprintf(f, "usage: zaya %s%s<command> [options]\n\ncommands:\n", prefix, *prefix ? " " : "");
    for (const zaya_command *c = table; c->name; c++) fprintf(f, "  %-12s %s\n", c->name, c->summary);
    fprintf(f, "\nrun 'zaya %s%s<command> --help' for its options\n", prefix, *prefix ? " " : "");
}

int zaya_cli_dispatch(const zaya_command *table, const char *prefix, int argc, char **argv) {
    if (argc < 1 || !strcmp(argv[0], "help") || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
        if (argc >= 2 && !strcmp(argv[0], "help")) {
            /* `zaya help bench kernels` == `zaya bench kernels --help` */
            char *args[64];
            int n = 0;
            for (int i = 1; i < argc && n < 62; i++) args[n++] = argv[i];
            args[n++] = "--help";
            return zaya_cli_dispatch(table, prefix, n, args);
        }
        print_table(argc < 1 ? stderr : stdout, table, prefix);
        return argc < 1 ? 2 : 0;
    }
    for (const zaya_command *c = table; c->name; c++) {
        if (strcmp(c->name, argv[0]) != 0) continue;
        if (c->run) return c->run(argc - 1, argv + 1);
        char sub_prefix[256];
        snprintf(sub_prefix, sizeof sub_prefix, "%s%s%s", prefix, *prefix ? " " : "", c->name);
        return zaya_cli_dispatch(c->sub, sub_prefix, argc - 1, argv + 1);
    }
    if (argv[0][0] == '-')
        fprintf(stderr, "zaya%s%s: unknown option '%s'\n", *prefix ? " " : "", prefix, argv[0]);
    else
        fprintf(stderr, "zaya: unknown command '%s%s%s'\n", prefix, *prefix ? " " : "", argv[0]);
    print_table(stderr, table, prefix);
    return 2;
}
