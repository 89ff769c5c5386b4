/* Robust z-score spike guard (see zaya/spike.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/json.h"
#include "zaya/spike.h"

void zaya_spike_config_default(zaya_spike_config *c) {
    c->window = 64;
    c->warmup = 20;
    c->threshold = 6.0;
    c->max_consecutive = 5;
}

static zaya_status check_config(const zaya_spike_config *c) {
    if (c->window < 3 || c->window > ZAYA_SPIKE_MAX_WINDOW)
        return zaya_error_set(ZAYA_EINVAL, "spike guard: window %d outside [3, %d]", c->window, ZAYA_SPIKE_MAX_WINDOW);
    if (c->warmup < 3) return zaya_error_set(ZAYA_EINVAL, "spike guard: warmup %d < 3", c->warmup);
    if (!(c->threshold > 0)) return zaya_error_set(ZAYA_EINVAL, "spike guard: threshold %g must be > 0", c->threshold);
    if (c->max_consecutive < 0)
        return zaya_error_set(ZAYA_EINVAL, "spike guard: max_consecutive %d < 0", c->max_consecutive);
    return ZAYA_OK;
}

zaya_status zaya_spike_guard_init(zaya_spike_guard *g, const zaya_spike_config *cfg) {
    memset(g, 0, sizeof *g);
    ZAYA_TRY(check_config(cfg));
    g->cfg = *cfg;
    return ZAYA_OK;
}

void zaya_spike_guard_reset(zaya_spike_guard *g) {
    g->count = 0;
    g->head = 0;
    g->consecutive = 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_sorted(const double *v, int n) { return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]); }

static double robust_z(const zaya_spike_guard *g, double x) {
    double s[ZAYA_SPIKE_MAX_WINDOW];
    int n = g->count;
    memcpy(s, g->hist, sizeof(double) * (size_t)n); /* the order of a ring does not matter here */
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    double med = median_sorted(s, n);
    for (int i = 0; i < n; i++) s[i] = fabs(s[i] - med);
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    /* floor: a perfectly flat window would otherwise call any wiggle a spike */
    double mad = fmax(median_sorted(s, n), 1e-3 * fabs(med) + 1e-12);
    return (x - med) / (1.4826 * mad);
}

static void push(zaya_spike_guard *g, double x) {
    g->hist[g->head] = x;
    g->head = (g->head + 1) % g->cfg.window;
    if (g->count < g->cfg.window) g->count++;
    g->accepted++;
    g->consecutive = 0;
}

int zaya_spike_guard_check(zaya_spike_guard *g, double x) {
    g->checks++;
    g->last_z = 0;
    if (!isfinite(x)) {
        g->nonfinite++;
        g->skipped++;
        g->consecutive++;
        return 1;
    }
    if (g->count < g->cfg.warmup && g->count < g->cfg.window) {
        push(g, x);
        return 0;
    }
    g->last_z = robust_z(g, x);
    if (g->last_z > g->cfg.threshold) {
        if (g->cfg.max_consecutive > 0 && g->consecutive >= g->cfg.max_consecutive) {
            g->forced++;
            push(g, x);
            return 0;
        }
        g->skipped++;
        g->consecutive++;
        return 1;
    }
    push(g, x);
    return 0;
}

cJSON *zaya_spike_guard_to_json(const zaya_spike_guard *g) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddNumberToObject(j, "window", g->cfg.window);
    cJSON_AddNumberToObject(j, "warmup", g->cfg.warmup);
    cJSON_AddNumberToObject(j, "threshold", g->cfg.threshold);
    cJSON_AddNumberToObject(j, "max_consecutive", g->cfg.max_consecutive);
    cJSON *h = cJSON_AddArrayToObject(j, "history"); /* oldest first */
    for (int i = 0; i < g->count; i++) {
        int at = (g->head - g->count + i + 2 * g->cfg.window) % g->cfg.window;
        cJSON_AddItemToArray(h, cJSON_CreateNumber(g->hist[at]));
    }
    cJSON_AddNumberToObject(j, "checks", (double)g->checks);
    cJSON_AddNumberToObject(j, "accepted", (double)g->accepted);
    cJSON_AddNumberToObject(j, "skipped", (double)g->skipped);
    cJSON_AddNumberToObject(j, "nonfinite", (double)g->nonfinite);
    cJSON_AddNumberToObject(j, "forced", (double)g->forced);
    cJSON_AddNumberToObject(j, "consecutive", g->consecutive);
    return j;
}

zaya_status zaya_spike_guard_from_json(zaya_spike_guard *g, const cJSON *j) {
    zaya_spike_config c;
    zaya_spike_config_default(&c);
    zaya_spike_guard t;
    memset(&t, 0, sizeof t);
    zaya_status s = zaya_json_get_int(j, "window", &c.window, 1);
    if (s == ZAYA_OK) s = zaya_json_get_int(j, "warmup", &c.warmup, 1);
    if (s == ZAYA_OK) s = zaya_json_get_f64(j, "threshold", &c.threshold, 1);
    if (s == ZAYA_OK) s = zaya_json_get_int(j, "max_consecutive", &c.max_consecutive, 1);
    if (s == ZAYA_OK) s = zaya_spike_guard_init(&t, &c);
    if (s == ZAYA_OK) s = zaya_json_get_i64(j, "checks", &t.checks, 1);
    if (s == ZAYA_OK) s = zaya_json_get_i64(j, "accepted", &t.accepted, 1);
    if (s == ZAYA_OK) s = zaya_json_get_i64(j, "skipped", &t.skipped, 1);
    if (s == ZAYA_OK) s = zaya_json_get_i64(j, "nonfinite", &t.nonfinite, 1);
    if (s == ZAYA_OK) s = zaya_json_get_i64(j, "forced", &t.forced, 1);
    if (s == ZAYA_OK) s = zaya_json_get_int(j, "consecutive", &t.consecutive, 1);
    if (s != ZAYA_OK) return zaya_error_context(s, "spike guard state");
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(j, "history");
    if (!cJSON_IsArray(h) || cJSON_GetArraySize(h) > c.window)
        return zaya_error_set(ZAYA_EFORMAT, "spike guard state: 'history' must be an array of at most %d numbers",
                              c.window);
    const cJSON *it;
    cJSON_ArrayForEach(it, h) {
        if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
            return zaya_error_set(ZAYA_EFORMAT, "spike guard state: 'history' entry %d is not a finite number", t.count);
        t.hist[t.count++] = it->valuedouble;
    }
    t.head = t.count % c.window;
    *g = t;
    return ZAYA_OK;
}
