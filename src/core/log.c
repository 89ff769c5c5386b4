#include "zaya/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static zaya_log_level g_level = ZAYA_LOG_INFO;
static int g_level_from_env_done = 0;
static int g_rank = -1, g_world = 0;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void level_from_env(void) {
    if (g_level_from_env_done) return;
    g_level_from_env_done = 1;
    const char *e = getenv("ZAYA_LOG_LEVEL");
    if (!e) return;
    if (!strcmp(e, "error")) g_level = ZAYA_LOG_ERROR;
    else if (!strcmp(e, "warn")) g_level = ZAYA_LOG_WARN;
    else if (!strcmp(e, "info")) g_level = ZAYA_LOG_INFO;
    else if (!strcmp(e, "debug")) g_level = ZAYA_LOG_DEBUG;
}

void zaya_log_set_level(zaya_log_level level) {
    g_level_from_env_done = 1;
    g_level = level;
}

zaya_log_level zaya_log_get_level(void) {
    level_from_env();
    return g_level;
}

void zaya_log_set_rank(int rank, int world_size) {
    g_rank = rank;
    g_world = world_size;
}

void zaya_log(zaya_log_level level, const char *fmt, ...) {
    level_from_env();
    if (level > g_level) return;
    static const char *names[] = {"error", "warn", "info", "debug"};
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char rank[48] = "";
    if (g_world > 1) snprintf(rank, sizeof rank, "[rank %d/%d] ", g_rank, g_world);
    pthread_mutex_lock(&g_lock);
    fprintf(stderr, "%szaya %s: %s\n", rank, names[level], msg);
    fflush(stderr);
    pthread_mutex_unlock(&g_lock);
}
