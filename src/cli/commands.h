/* The command tree of the `zaya` executable. Each leaf is `int fn(int argc, char **argv)` receiving
 * the arguments after its own name; it returns the process exit code (0 ok, 1 runtime failure,
 * 2 usage error). A group has a sub-table instead of a function. Tables end with a zeroed entry. */
#ifndef ZAYA_CLI_COMMANDS_H
#define ZAYA_CLI_COMMANDS_H

typedef int (*zaya_cmd_fn)(int argc, char **argv);

typedef struct zaya_command {
    const char *name;
    const char *summary;
    zaya_cmd_fn run;                /* leaf */
    const struct zaya_command *sub; /* group */
} zaya_command;

extern const zaya_command zaya_commands[];

/* Runs argv[0..] against table (prefix names the group for messages, "" at top level). */
int zaya_cli_dispatch(const zaya_command *table, const char *prefix, int argc, char **argv);

/* Leaf commands (one cmd_*.c file each). */
int zaya_cmd_bench_coll(int argc, char **argv);
int zaya_cmd_bench_mem(int argc, char **argv);

#endif
