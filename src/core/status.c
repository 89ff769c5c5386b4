#include "zaya/status.h"

#include <stdarg.h>
#include <string.h>

#define ZAYA_ERROR_CAP 2048
static _Thread_local char g_error[ZAYA_ERROR_CAP];

const char *zaya_status_name(zaya_status s) {
    switch (s) {
    case ZAYA_OK: return "ok";
    case ZAYA_EINVAL: return "invalid argument";
    case ZAYA_EIO: return "I/O error";
    case ZAYA_EFORMAT: return "format error";
    case ZAYA_ENOMEM: return "out of memory";
    case ZAYA_ERANGE: return "out of range";
    case ZAYA_EUNSUPPORTED: return "unsupported";
    case ZAYA_EMPI: return "MPI error";
    case ZAYA_ENUMERIC: return "numeric error";
    case ZAYA_EBACKEND: return "backend error";
    case ZAYA_EBUSY: return "in use";
    }
    return "unknown status";
}

zaya_status zaya_error_set(zaya_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_error, sizeof g_error, fmt, ap);
    va_end(ap);
    return code;
}

zaya_status zaya_error_context(zaya_status code, const char *fmt, ...) {
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char old[ZAYA_ERROR_CAP];
    memcpy(old, g_error, sizeof old);
    /* Truncation of an over-long message is acceptable; the prefix is what matters most. */
    int n = snprintf(g_error, sizeof g_error, "%s: ", prefix);
    if (n > 0 && (size_t)n < sizeof g_error)
        memcpy(g_error + n, old[0] ? old : zaya_status_name(code),
               strnlen(old[0] ? old : zaya_status_name(code), sizeof g_error - (size_t)n - 1) + 1);
    g_error[sizeof g_error - 1] = '\0';
    return code;
}

const char *zaya_error_message(void) { return g_error[0] ? g_error : "no error message"; }

void zaya_error_clear(void) { g_error[0] = '\0'; }
