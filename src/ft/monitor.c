/* Reads the heartbeat channel: DIR/rank-RRRRR.json (rewritten atomically by each rank) and the
 * append-only DIR/events-rRRRRR.jsonl. Progress is judged on the supervisor's own clock (when a
 * record's seq changed), so clock skew between nodes does not matter. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ft/internal.h"
#include "zaya/fs.h"
#include "zaya/json.h"

double zaya_ft_wall_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double zaya_ft_median(double *v, int n) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void zaya_ft_monitor_reset(zaya_ft_monitor *m, const char *dir) {
    for (int r = 0; r < ZAYA_FT_MAX_RANKS; r++) memset(&m->ranks[r], 0, sizeof m->ranks[r]);
    m->nranks = 0;
    snprintf(m->dir, sizeof m->dir, "%s", dir);
}

double zaya_ft_monitor_median_step(const zaya_ft_monitor *m) {
    double v[ZAYA_FT_SAMPLES];
    memcpy(v, m->samples, sizeof(double) * (size_t)m->nsamples);
    return zaya_ft_median(v, m->nsamples);
}

double zaya_ft_monitor_median_regime(const zaya_ft_monitor *m, int64_t phase, int64_t seq_len, int *n) {
    double v[ZAYA_FT_SAMPLES];
    int k = 0;
    for (int i = 0; i < m->nsamples; i++)
        if (m->sample_phase[i] == phase && m->sample_seq[i] == seq_len) v[k++] = m->samples[i];
    *n = k;
    return zaya_ft_median(v, k);
}

static void add_sample(zaya_ft_monitor *m, double x, int64_t phase, int64_t seq_len) {
    m->sample_phase[m->sample_head] = phase;
    m->sample_seq[m->sample_head] = seq_len;
    m->samples[m->sample_head] = x;
    m->sample_head = (m->sample_head + 1) % ZAYA_FT_SAMPLES;
    if (m->nsamples < ZAYA_FT_SAMPLES) m->nsamples++;
}

static void read_heartbeat(zaya_ft_monitor *m, const char *path, double now) {
    char *data = NULL;
    size_t len = 0;
    if (zaya_read_file(path, &data, &len) != ZAYA_OK) return;
    cJSON *j = cJSON_ParseWithLength(data, len);
    free(data);
    if (!j) return; /* caught mid-write: read it again at the next poll */
    int rank = -1;
    int64_t seq_end = -1, seq0 = -2;
    zaya_json_get_i64(j, "seq", &seq0, 0);
    zaya_json_get_i64(j, "seq_end", &seq_end, 0);
    if (seq0 != seq_end) {
        cJSON_Delete(j);
        return;
    }
    zaya_json_get_int(j, "rank", &rank, 0);
    if (rank >= 0 && rank < ZAYA_FT_MAX_RANKS) {
        zaya_ft_rank *r = &m->ranks[rank];
        int64_t seq = 0, steps = 0;
        zaya_json_get_i64(j, "seq", &seq, 0);
        zaya_json_get_i64(j, "steps_done", &steps, 0);
        const char *sec = NULL;
        zaya_json_get_str(j, "section", &sec, 0);
        int section = zaya_ft_section_parse(sec);
        if (section >= 0 && (!r->seen || seq != r->seq)) { /* a record naming no section is not one of ours */
            /* how long a rank can go between two records in an evaluation (one batch) */
            if (r->seen && r->section == ZAYA_FT_EVAL && now - r->last_change > m->eval_gap_max)
                m->eval_gap_max = now - r->last_change;
            r->last_change = now;
            r->seq = seq;
            r->section = (zaya_ft_section)section;
            zaya_json_get_int(j, "pid", &r->pid, 0);
            const char *host = "";
            zaya_json_get_str(j, "host", &host, 0);
            snprintf(r->host, sizeof r->host, "%s", host);
            zaya_json_get_int(j, "world", &r->world, 0);
            zaya_json_get_i64(j, "step", &r->step, 0);
            const int64_t prev_phase = r->phase, prev_seq = r->seq_len;
            const double prev_train = r->train_time;
            r->phase = r->seq_len = 0;
            zaya_json_get_i64(j, "phase", &r->phase, 0);
            zaya_json_get_i64(j, "seq_len", &r->seq_len, 0);
            zaya_json_get_f64(j, "step_time", &r->step_time, 0);
            zaya_json_get_f64(j, "time", &r->hb_time, 0);
            zaya_json_get_f64(j, "busy_time", &r->busy_time, 0);
            zaya_json_get_f64(j, "train_time", &r->train_time, 0);
            if (steps > r->steps_done && r->step_time > 0) { /* steps finished since the last look */
                /* fast steps finish several per poll: one sample per step, at their mean time, so the
                 * calibration counts steps rather than polls (same regime and attempt only) */
                const int64_t k = steps - r->steps_done;
                int64_t add = 1;
                double x = r->step_time;
                if (k > 1 && prev_phase == r->phase && prev_seq == r->seq_len && r->train_time > prev_train) {
                    add = k < ZAYA_FT_SAMPLES ? k : ZAYA_FT_SAMPLES;
                    x = (r->train_time - prev_train) / (double)k;
                }
                for (int64_t i = 0; i < add; i++) add_sample(m, x, r->phase, r->seq_len);
                r->busy_hist[r->nbusy++ % 32] = r->busy_time;
            }
            r->steps_done = steps;
            r->seen = 1;
            if (rank + 1 > m->nranks) m->nranks = rank + 1;
        }
    }
    cJSON_Delete(j);
}

static void read_events(zaya_ft_monitor *m, int rank, const char *path, zaya_ft_event_fn fn, void *ctx) {
    FILE *f = fopen(path, "r");
    if (!f) return;
    zaya_ft_rank *r = &m->ranks[rank];
    fseek(f, r->events_off, SEEK_SET);
    char line[2048];
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        if (n == 0 || line[n - 1] != '\n') break; /* a line still being written: read it next time */
        r->events_off += (long long)n;
        cJSON *j = cJSON_Parse(line);
        if (!j) continue;
        zaya_ft_event e;
        memset(&e, 0, sizeof e);
        const char *s = "";
        zaya_json_get_str(j, "kind", &s, 0);
        snprintf(e.kind, sizeof e.kind, "%s", s);
        s = "";
        zaya_json_get_str(j, "detail", &s, 0);
        snprintf(e.detail, sizeof e.detail, "%s", s);
        e.rank = rank;
        zaya_json_get_int(j, "attempt", &e.attempt, 0);
        zaya_json_get_i64(j, "step", &e.step, 0);
        zaya_json_get_f64(j, "time", &e.time, 0);
        cJSON_Delete(j);
        fn(ctx, &e);
    }
    fclose(f);
}

void zaya_ft_monitor_poll(zaya_ft_monitor *m, double now, zaya_ft_event_fn fn, void *ctx) {
    DIR *d = opendir(m->dir);
    if (!d) return;
    struct dirent *e;
    char path[4400];
    while ((e = readdir(d))) {
        int rank;
        if (sscanf(e->d_name, "rank-%d.json", &rank) == 1 /* ZAYA_FT_HB_RANK_FILE */ && strstr(e->d_name, ".json") && e->d_name[0] == 'r') {
            snprintf(path, sizeof path, "%s/%s", m->dir, e->d_name);
            read_heartbeat(m, path, now);
        } else if (sscanf(e->d_name, "events-r%d.jsonl", &rank) == 1 /* ZAYA_FT_HB_EVENTS_FILE */ && rank >= 0 && rank < ZAYA_FT_MAX_RANKS) {
            snprintf(path, sizeof path, "%s/%s", m->dir, e->d_name);
            read_events(m, rank, path, fn, ctx);
        }
    }
    closedir(d);
}
