#include "cli/flags.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

zaya_status zaya_parse_i64(const char *s, int64_t *out) {
    if (!s || !*s) return zaya_error_set(ZAYA_EINVAL, "empty integer");
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end) return zaya_error_set(ZAYA_EINVAL, "'%s' is not an integer", s);
    *out = v;
    return ZAYA_OK;
}

zaya_status zaya_parse_f64(const char *s, double *out) {
    if (!s || !*s) return zaya_error_set(ZAYA_EINVAL, "empty number");
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return zaya_error_set(ZAYA_EINVAL, "'%s' is not a finite number", s);
    *out = v;
    return ZAYA_OK;
}

zaya_status zaya_parse_bytes(const char *s, int64_t *out) {
    if (!s || !*s) return zaya_error_set(ZAYA_EINVAL, "empty size");
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || v < 0) return zaya_error_set(ZAYA_EINVAL, "'%s' is not a size (examples: 8, 64K, 128M, 1G)", s);
    int64_t mult = 1;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': mult = 1ll << 10; end++; break;
    case 'm': case 'M': mult = 1ll << 20; end++; break;
    case 'g': case 'G': mult = 1ll << 30; end++; break;
    case 't': case 'T': mult = 1ll << 40; end++; break;
    default: return zaya_error_set(ZAYA_EINVAL, "'%s': unknown size suffix '%s' (use K, M, G or T)", s, end);
    }
    if (*end == 'B' || *end == 'b') end++;
    if (*end) return zaya_error_set(ZAYA_EINVAL, "'%s': trailing characters '%s' after size", s, end);
    if (v > INT64_MAX / mult) return zaya_error_set(ZAYA_EINVAL, "'%s': size overflows 64 bits", s);
    *out = v * mult;
    return ZAYA_OK;
}

void zaya_flags_print_help(const zaya_cmd_spec *spec, FILE *f) {
    fprintf(f, "usage: zaya %s %s\n\n%s\n", spec->name, spec->args ? spec->args : "[options]", spec->summary);
    if (spec->nflags > 0) fprintf(f, "\noptions:\n");
    for (int i = 0; i < spec->nflags; i++) {
        const zaya_flag *fl = &spec->flags[i];
        char lhs[96] = "";
        int n = 0;
        if (fl->short_name) n += snprintf(lhs + n, sizeof lhs - (size_t)n, "-%c", fl->short_name);
        if (fl->short_name && fl->name) n += snprintf(lhs + n, sizeof lhs - (size_t)n, ", ");
        if (fl->name) n += snprintf(lhs + n, sizeof lhs - (size_t)n, "--%s", fl->name);
        if (fl->kind != ZAYA_FLAG_BOOL && fl->metavar)
            snprintf(lhs + n, sizeof lhs - (size_t)n, " %s", fl->metavar);
        fprintf(f, "  %-28s %s", lhs, fl->help ? fl->help : "");
        if (fl->kind == ZAYA_FLAG_LIST) fprintf(f, " [repeatable, at most %d]", ((const zaya_flag_list *)fl->dst)->max);
        fputc('\n', f);
    }
    fprintf(f, "  %-28s %s\n", "-h, --help", "show this help and exit");
    if (spec->details) fprintf(f, "\n%s\n", spec->details);
}

int zaya_flags_usage_error(const zaya_cmd_spec *spec, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "zaya %s: %s\nusage: zaya %s %s\nrun 'zaya %s --help' for the options\n", spec->name, msg,
            spec->name, spec->args ? spec->args : "[options]", spec->name);
    return 2;
}

int zaya_cli_error(const char *command, const char *fmt, ...) {
    char msg[2048];
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
    } else {
        snprintf(msg, sizeof msg, "%s", zaya_error_message());
    }
    fflush(stdout);
    fprintf(stderr, "zaya %s: error: %s\n", command, msg);
    return 1;
}

static const zaya_flag *find_long(const zaya_cmd_spec *spec, const char *name, size_t len) {
    for (int i = 0; i < spec->nflags; i++) {
        const char *n = spec->flags[i].name;
        if (n && strlen(n) == len && !strncmp(n, name, len)) return &spec->flags[i];
    }
    return NULL;
}

static const zaya_flag *find_short(const zaya_cmd_spec *spec, char c) {
    for (int i = 0; i < spec->nflags; i++)
        if (spec->flags[i].short_name == c) return &spec->flags[i];
    return NULL;
}

int zaya_flags_threads_cap(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    long cap = n > 0 ? 4 * n : 16;
    return cap < 16 ? 16 : cap > 1 << 20 ? 1 << 20 : (int)cap;
}

static void flag_range(const zaya_flag *fl, int64_t *lo, int64_t *hi) {
    const zaya_flag_range *r = fl->dst;
    *lo = r->min;
    *hi = r->threads_cap ? zaya_flags_threads_cap() : r->max;
    if (fl->kind == ZAYA_FLAG_INT_IN && *hi > 2147483647) *hi = 2147483647;
}

static zaya_status check_range(const zaya_flag *fl, int64_t v) {
    int64_t lo, hi;
    flag_range(fl, &lo, &hi);
    if (v >= lo && v <= hi) return ZAYA_OK;
    if (((const zaya_flag_range *)fl->dst)->threads_cap)
        return zaya_error_set(ZAYA_EINVAL, "%lld is out of range: must be in [%lld, %lld] (4 x the %ld cores, at least 16)",
                              (long long)v, (long long)lo, (long long)hi, sysconf(_SC_NPROCESSORS_ONLN));
    if (hi == (fl->kind == ZAYA_FLAG_INT_IN ? 2147483647 : INT64_MAX))
        return zaya_error_set(ZAYA_EINVAL, "%lld is out of range: must be >= %lld", (long long)v, (long long)lo);
    return zaya_error_set(ZAYA_EINVAL, "%lld is out of range: must be in [%lld, %lld]", (long long)v, (long long)lo, (long long)hi);
}

static zaya_status assign(const zaya_flag *fl, const char *val) {
    int64_t i = 0;
    double d = 0;
    switch (fl->kind) {
    case ZAYA_FLAG_BOOL: *(int *)fl->dst = 1; return ZAYA_OK;
    case ZAYA_FLAG_INT:
        ZAYA_TRY(zaya_parse_i64(val, &i));
        if (i < -2147483647 - 1 || i > 2147483647) return zaya_error_set(ZAYA_EINVAL, "'%s' is out of range", val);
        *(int *)fl->dst = (int)i;
        return ZAYA_OK;
    case ZAYA_FLAG_I64: ZAYA_TRY(zaya_parse_i64(val, &i)); *(int64_t *)fl->dst = i; return ZAYA_OK;
    case ZAYA_FLAG_INT_IN:
    case ZAYA_FLAG_I64_IN:
        ZAYA_TRY(zaya_parse_i64(val, &i));
        ZAYA_TRY(check_range(fl, i));
        if (fl->kind == ZAYA_FLAG_INT_IN) *(int *)((const zaya_flag_range *)fl->dst)->dst = (int)i;
        else *(int64_t *)((const zaya_flag_range *)fl->dst)->dst = i;
        return ZAYA_OK;
    case ZAYA_FLAG_DOUBLE: ZAYA_TRY(zaya_parse_f64(val, &d)); *(double *)fl->dst = d; return ZAYA_OK;
    case ZAYA_FLAG_STRING: *(const char **)fl->dst = val; return ZAYA_OK;
    case ZAYA_FLAG_BYTES: ZAYA_TRY(zaya_parse_bytes(val, &i)); *(int64_t *)fl->dst = i; return ZAYA_OK;
    case ZAYA_FLAG_LIST: {
        zaya_flag_list *l = fl->dst;
        if (l->n >= l->max) return zaya_error_set(ZAYA_EINVAL, "given more than %d times", l->max);
        l->items[l->n++] = val;
        return ZAYA_OK;
    }
    }
    return zaya_error_set(ZAYA_EINVAL, "unknown flag kind");
}

static const char *kind_name(zaya_flag_kind k) {
    switch (k) {
    case ZAYA_FLAG_BOOL: return "bool";
    case ZAYA_FLAG_INT: case ZAYA_FLAG_INT_IN: return "int";
    case ZAYA_FLAG_I64: case ZAYA_FLAG_I64_IN: return "i64";
    case ZAYA_FLAG_DOUBLE: return "double";
    case ZAYA_FLAG_STRING: return "string";
    case ZAYA_FLAG_BYTES: return "bytes";
    case ZAYA_FLAG_LIST: return "list";
    }
    return "?";
}

/* ZAYA_CLI_PARSE_ONLY: the parsed values, one line per flag, for the CLI contract test. */
static void dump_parsed(const zaya_cmd_spec *spec, const zaya_args *a) {
    for (int i = 0; i < spec->nflags; i++) {
        const zaya_flag *fl = &spec->flags[i];
        if (fl->name) printf("--%s %s ", fl->name, kind_name(fl->kind));
        else printf("-%c %s ", fl->short_name, kind_name(fl->kind));
        switch (fl->kind) {
        case ZAYA_FLAG_BOOL: case ZAYA_FLAG_INT: printf("%d", *(const int *)fl->dst); break;
        case ZAYA_FLAG_I64: case ZAYA_FLAG_BYTES: printf("%lld", (long long)*(const int64_t *)fl->dst); break;
        case ZAYA_FLAG_INT_IN: printf("%d", *(const int *)((const zaya_flag_range *)fl->dst)->dst); break;
        case ZAYA_FLAG_I64_IN: printf("%lld", (long long)*(const int64_t *)((const zaya_flag_range *)fl->dst)->dst); break;
        case ZAYA_FLAG_DOUBLE: printf("%.17g", *(const double *)fl->dst); break;
        case ZAYA_FLAG_STRING: {
            const char *v = *(const char *const *)fl->dst;
            if (v) printf("'%s'", v);
            else printf("(none)");
            break;
        }
        case ZAYA_FLAG_LIST: {
            const zaya_flag_list *l = fl->dst;
            printf("[");
            for (int k = 0; k < l->n; k++) printf("%s'%s'", k ? " " : "", l->items[k]);
            printf("]");
            break;
        }
        }
        if (fl->kind == ZAYA_FLAG_INT_IN || fl->kind == ZAYA_FLAG_I64_IN) {
            int64_t lo, hi;
            flag_range(fl, &lo, &hi);
            printf(" range %lld %lld", (long long)lo, (long long)hi);
        }
        printf("\n");
    }
    for (int i = 0; i < a->npos; i++) printf("arg %d '%s'\n", i, a->pos[i]);
    fflush(stdout);
}

static int add_positional(const zaya_cmd_spec *spec, zaya_args *out, char *arg) {
    if (out->npos >= ZAYA_MAX_POSITIONAL) return zaya_flags_usage_error(spec, "too many arguments");
    out->pos[out->npos++] = arg;
    return -1;
}

int zaya_flags_parse(const zaya_cmd_spec *spec, int argc, char **argv, zaya_args *out) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i < argc; i++) {
        char *arg = argv[i];
        if (!strcmp(arg, "--")) {
            for (i++; i < argc; i++) {
                int rc = add_positional(spec, out, argv[i]);
                if (rc >= 0) return rc;
            }
            break;
        }
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            zaya_flags_print_help(spec, stdout);
            return 0;
        }
        const zaya_flag *fl = NULL;
        const char *val = NULL;
        char shown[128];
        if (arg[0] == '-' && arg[1] == '-') {
            const char *name = arg + 2;
            const char *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            fl = find_long(spec, name, len);
            snprintf(shown, sizeof shown, "--%.*s", (int)len, name);
            if (!fl) return zaya_flags_usage_error(spec, "unknown option '%s'", shown);
            if (eq) {
                if (fl->kind == ZAYA_FLAG_BOOL) return zaya_flags_usage_error(spec, "option '%s' takes no value", shown);
                val = eq + 1;
            }
        } else if (arg[0] == '-' && arg[1] != '\0' && !(arg[1] >= '0' && arg[1] <= '9')) {
            fl = find_short(spec, arg[1]);
            snprintf(shown, sizeof shown, "-%c", arg[1]);
            if (!fl) return zaya_flags_usage_error(spec, "unknown option '%s'", shown);
            if (arg[2]) {
                if (fl->kind == ZAYA_FLAG_BOOL) return zaya_flags_usage_error(spec, "option '%s' takes no value", shown);
                val = arg + 2;
            }
        } else {
            int rc = add_positional(spec, out, arg);
            if (rc >= 0) return rc;
            continue;
        }
        if (fl->kind != ZAYA_FLAG_BOOL && !val) {
            if (i + 1 >= argc) return zaya_flags_usage_error(spec, "option '%s' needs a value (%s)", shown, fl->metavar ? fl->metavar : "VALUE");
            val = argv[++i];
        }
        if (assign(fl, val) != ZAYA_OK)
            return zaya_flags_usage_error(spec, "option '%s': %s", shown, zaya_error_message());
    }
    const char *po = getenv("ZAYA_CLI_PARSE_ONLY");
    if (po && *po && strcmp(po, "0")) {
        dump_parsed(spec, out);
        return 0;
    }
    return -1;
}
