/* Command-line flags for every zaya command.
 *
 * Each command declares a table of flags; zaya_flags_parse() fills the destinations, collects
 * positional arguments, prints --help, and rejects unknown flags or bad values with a message that
 * names them (exit code 2). Accepted forms: --name value, --name=value, -x value, -xvalue, and `--`
 * to end option parsing (everything after it is positional); the short and long spellings of a
 * flag are the same flag in every form, repeatable ones included.
 *
 * With ZAYA_CLI_PARSE_ONLY=1 in the environment, zaya_flags_parse prints what every flag and
 * positional argument was set to (one line each, `--name KIND VALUE`) and returns 0 before the
 * command runs: the CLI contract test checks every short option against its long spelling this way. */
#ifndef ZAYA_CLI_FLAGS_H
#define ZAYA_CLI_FLAGS_H

#include <stdint.h>

#include "zaya/status.h"

typedef enum zaya_flag_kind {
    ZAYA_FLAG_BOOL,   /* int*: presence sets 1 */
    ZAYA_FLAG_INT,    /* int* */
    ZAYA_FLAG_I64,    /* int64_t* */
    ZAYA_FLAG_DOUBLE, /* double* */
    ZAYA_FLAG_STRING, /* const char ** */
    ZAYA_FLAG_BYTES,  /* int64_t*: 64, 8K, 128M, 1G (binary multiples, as nccl-tests) */
    ZAYA_FLAG_LIST,   /* zaya_flag_list*: repeatable; every occurrence appends its value */
    ZAYA_FLAG_INT_IN, /* zaya_flag_range* over an int: a value outside [min, max] is a usage error naming the flag */
    ZAYA_FLAG_I64_IN, /* zaya_flag_range* over an int64_t: likewise */
} zaya_flag_kind;

/* Destination of a range-checked integer flag; threads_cap: max is zaya_flags_threads_cap(). Written
 * through the macros: {"cp", 0, ZAYA_INT_IN(&o.cp, 1, 4096), "N", "help"}. */
typedef struct zaya_flag_range {
    void *dst;
    int64_t min, max;
    int threads_cap;
} zaya_flag_range;
#define ZAYA_FLAG_NO_MAX INT64_MAX
#define ZAYA_INT_IN(var, lo, hi) ZAYA_FLAG_INT_IN, &(zaya_flag_range){(var), (lo), (hi), 0}
#define ZAYA_I64_IN(var, lo, hi) ZAYA_FLAG_I64_IN, &(zaya_flag_range){(var), (lo), (hi), 0}
/* The largest --threads: 4 x the online cores, at least 16. */
int zaya_flags_threads_cap(void);

/* Destination of a ZAYA_FLAG_LIST flag: values go to items[0..n), at most max of them (more is a
 * usage error naming the flag). */
typedef struct zaya_flag_list {
    const char **items;
    int max;
    int n;
} zaya_flag_list;

typedef struct zaya_flag {
    const char *name; /* long name without dashes; NULL for short-only */
    char short_name;  /* 0 for long-only */
    zaya_flag_kind kind;
    void *dst;
    const char *metavar;
    const char *help; /* should mention the default */
} zaya_flag;

typedef struct zaya_cmd_spec {
    const char *name;    /* full command path, e.g. "bench kernels" */
    const char *summary; /* one line */
    const char *args;    /* positional synopsis, e.g. "[options] CONFIG" */
    const char *details; /* optional paragraph printed after the flags */
    const zaya_flag *flags;
    int nflags;
} zaya_cmd_spec;

#define ZAYA_MAX_POSITIONAL 64
typedef struct zaya_args {
    int npos;
    char *pos[ZAYA_MAX_POSITIONAL];
} zaya_args;

/* Returns -1 when the command should run, otherwise the exit code to return (0 after --help,
 * 2 after a usage error, already reported on stderr). */
int zaya_flags_parse(const zaya_cmd_spec *spec, int argc, char **argv, zaya_args *out);
void zaya_flags_print_help(const zaya_cmd_spec *spec, FILE *f);
/* Reports a usage error for spec (message + hint) and returns 2. */
int zaya_flags_usage_error(const zaya_cmd_spec *spec, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The one runtime-error reporter of the CLI: "zaya COMMAND: error: MESSAGE" on stderr, where MESSAGE
 * is the printf-formatted text, or the library's last error (zaya_error_message()) when fmt is NULL;
 * returns 1, the runtime-error exit code. */
int zaya_cli_error(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "128M" -> 134217728. Suffixes K, M, G, T (binary), optional trailing B; rejects anything else. */
zaya_status zaya_parse_bytes(const char *s, int64_t *out);
zaya_status zaya_parse_i64(const char *s, int64_t *out);
zaya_status zaya_parse_f64(const char *s, double *out);

/* Flags that most commands share. */
#define ZAYA_FLAG_THREADS(dst) \
    {"threads", 0, ZAYA_FLAG_INT_IN, &(zaya_flag_range){(dst), 1, 0, 1}, "N", \
     "worker threads for zaya and oneDNN, 1 to 4 x the cores (at least 16) (default: all cores)"}
#define ZAYA_FLAG_OUTDIR(dst, def) \
    {"out", 'o', ZAYA_FLAG_STRING, (dst), "DIR", "output directory (default: " def ")"}

#endif
