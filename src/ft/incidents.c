/* The incident log: incidents.jsonl (appended, one line per incident once its recovery figures are
 * known), the end-of-run table and summary.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft/internal.h"
#include "zaya/fs.h"
#include "zaya/json.h"

zaya_status zaya_ft_log_open(zaya_ft_log *l, const char *path) {
    memset(l, 0, sizeof *l);
    l->f = fopen(path, "a");
    if (!l->f) return zaya_error_set(ZAYA_EIO, "cannot open '%s' for appending", path);
    return ZAYA_OK;
}

void zaya_ft_log_close(zaya_ft_log *l) {
    if (l->f) fclose(l->f);
    free(l->v);
    memset(l, 0, sizeof *l);
}

zaya_ft_incident *zaya_ft_log_add(zaya_ft_log *l, const char *kind, int attempt, int rank, int64_t step, double detected_at,
                                  double latency_s, const char *detail) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        zaya_ft_incident *n = realloc(l->v, sizeof *n * (size_t)cap);
        if (!n) return NULL;
        l->v = n;
        l->cap = cap;
    }
    zaya_ft_incident *I = &l->v[l->n++];
    memset(I, 0, sizeof *I);
    snprintf(I->kind, sizeof I->kind, "%s", kind);
    snprintf(I->detail, sizeof I->detail, "%s", detail);
    I->attempt = attempt;
    I->rank = rank;
    I->step = step;
    I->detected_at = detected_at;
    I->latency_s = latency_s;
    I->recovery_s = -1;
    I->steps_lost = -1;
    return I;
}

void zaya_ft_log_write(zaya_ft_log *l, const zaya_ft_incident *I) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "kind", I->kind);
    cJSON_AddNumberToObject(j, "attempt", I->attempt);
    cJSON_AddNumberToObject(j, "rank", I->rank);
    cJSON_AddNumberToObject(j, "step", (double)I->step);
    cJSON_AddNumberToObject(j, "detected_at_s", I->detected_at);
    if (I->latency_s >= 0) cJSON_AddNumberToObject(j, "detection_latency_s", I->latency_s);
    else cJSON_AddNullToObject(j, "detection_latency_s");
    if (I->recovery_s >= 0) cJSON_AddNumberToObject(j, "recovery_s", I->recovery_s);
    else cJSON_AddNullToObject(j, "recovery_s");
    if (I->steps_lost >= 0) cJSON_AddNumberToObject(j, "steps_lost", (double)I->steps_lost);
    else cJSON_AddNullToObject(j, "steps_lost");
    cJSON_AddStringToObject(j, "detail", I->detail);
    char *txt = cJSON_PrintUnformatted(j);
    if (txt && l->f) {
        fprintf(l->f, "%s\n", txt);
        fflush(l->f);
    }
    free(txt);
    cJSON_Delete(j);
}

void zaya_ft_log_print(const zaya_ft_log *l, const zaya_supervise_result *r, FILE *out) {
    fprintf(out, "%-18s %4s %7s %7s %10s %10s %10s\n", "incident", "rank", "attempt", "step", "detect s", "recover s", "steps lost");
    for (int i = 0; i < l->n; i++) {
        const zaya_ft_incident *I = &l->v[i];
        char lat[32] = "-", rec[32] = "-", lost[32] = "-";
        if (I->latency_s >= 0) snprintf(lat, sizeof lat, "%.2f", I->latency_s);
        if (I->recovery_s >= 0) snprintf(rec, sizeof rec, "%.2f", I->recovery_s);
        if (I->steps_lost >= 0) snprintf(lost, sizeof lost, "%lld", (long long)I->steps_lost);
        fprintf(out, "%-18s %4d %7d %7lld %10s %10s %10s\n", I->kind, I->rank, I->attempt, (long long)I->step, lat, rec, lost);
    }
    fprintf(out, "%s after %d attempt%s, %d incident%s; step %lld; wall %.1f s, useful training %.1f s, goodput %.1f%%\n",
            r->completed ? "completed" : r->preempted ? "preempted" : "stopped", r->attempts, r->attempts == 1 ? "" : "s",
            r->incidents, r->incidents == 1 ? "" : "s", (long long)r->final_step, r->wall_s, r->useful_s, 100.0 * r->goodput);
    fflush(out);
}

zaya_status zaya_ft_write_summary(const zaya_supervise_result *r, const char *out_dir) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddBoolToObject(j, "completed", r->completed);
    cJSON_AddBoolToObject(j, "preempted", r->preempted);
    cJSON_AddBoolToObject(j, "gave_up", r->gave_up);
    cJSON_AddNumberToObject(j, "attempts", r->attempts);
    cJSON_AddNumberToObject(j, "incidents", r->incidents);
    cJSON_AddNumberToObject(j, "final_step", (double)r->final_step);
    cJSON_AddNumberToObject(j, "wall_s", r->wall_s);
    cJSON_AddNumberToObject(j, "useful_training_s", r->useful_s);
    cJSON_AddNumberToObject(j, "goodput", r->goodput);
    cJSON_AddStringToObject(j, "diagnosis", r->diagnosis);
    char path[4096];
    zaya_status s = zaya_path_join(path, sizeof path, out_dir, "summary.json");
    if (s == ZAYA_OK) s = zaya_json_write_file(path, j, 1);
    cJSON_Delete(j);
    return s;
}
