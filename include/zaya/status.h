/* Status codes and error context.
 *
 * Functions that can fail on user input return zaya_status and leave a human-readable message in a
 * thread-local buffer: zaya_error_set() writes it, zaya_error_context() prepends where it happened
 * ("loading ckpt/step-00000010/manifest.json: tensor 'x': offset 12 beyond file size 8"), and
 * zaya_error_message() reads it. Programmer errors (broken invariants) use ZAYA_ASSERT and abort. */
#ifndef ZAYA_STATUS_H
#define ZAYA_STATUS_H

#include <stdio.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum zaya_status {
    ZAYA_OK = 0,
    ZAYA_EINVAL,       /* bad argument, flag or config value */
    ZAYA_EIO,          /* open/read/write/fsync/rename failed */
    ZAYA_EFORMAT,      /* malformed or truncated file */
    ZAYA_ENOMEM,       /* allocation failed */
    ZAYA_ERANGE,       /* size, offset or index out of range */
    ZAYA_EUNSUPPORTED, /* valid request this build cannot do */
    ZAYA_EMPI,         /* MPI call failed or world size mismatch */
    ZAYA_ENUMERIC,     /* NaN/Inf or other numeric failure */
    ZAYA_EBACKEND,     /* oneDNN or another backend reported an error */
    ZAYA_EBUSY,        /* a resource (an output directory) is held by another process */
} zaya_status;

const char *zaya_status_name(zaya_status s);

/* Sets the message (printf-style) and returns code, so callers can `return zaya_error_set(...)`. */
zaya_status zaya_error_set(zaya_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prepends "context: " to the current message and returns code unchanged. */
zaya_status zaya_error_context(zaya_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *zaya_error_message(void);
void zaya_error_clear(void);

#define ZAYA_TRY(expr)                          \
    do {                                        \
        zaya_status zaya_try_s_ = (expr);       \
        if (zaya_try_s_ != ZAYA_OK) return zaya_try_s_; \
    } while (0)

/* Invariants that only a bug can break. Active in every build type. */
#define ZAYA_ASSERT(cond)                                                                  \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "zaya: internal error: %s:%d: assertion '%s' failed\n", __FILE__, \
                    __LINE__, #cond);                                                      \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

#ifdef __cplusplus
}
#endif

#endif
