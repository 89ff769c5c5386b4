/* Heartbeat channel: each rank keeps one small JSON file, DIR/rank-RRRRR.json, overwritten in place
 * (one pwrite of a fixed-size record on a descriptor kept open: a few microseconds, so it can run at
 * every section change) whenever it enters a section or finishes a step. The record carries its
 * sequence number at both ends ("seq" ... "seq_end"); a reader that catches a write half-done sees
 * them differ (or the JSON broken) and reads again at its next poll. No fsync: the reader is a live
 * process on the same node (or a shared filesystem), not a crash-recovery log. Numeric and checkpoint events are appended to DIR/events-rRRRRR.jsonl
 * (one line per write(2) with O_APPEND). DIR comes from ZAYA_HEARTBEAT_DIR. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "train/ft.h"

static struct {
    int on, rank, world, attempt, events_fd, fd;
    char host[64];
    int64_t seq, step, steps_done, phase, seq_len;
    zaya_ft_section section;
    double section_t, step_time, busy_time, train_time;
} hb = {.events_fd = -1, .fd = -1};

#define HB_RECORD ZAYA_FT_HB_RECORD_BYTES /* fixed size: every write covers the whole previous record */

static double wall_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void hb_write(void) {
    char buf[HB_RECORD];
    const long long seq = ++hb.seq;
    int n = snprintf(buf, sizeof buf,
                     "{\"seq\":%lld,\"rank\":%d,\"world\":%d,\"host\":\"%s\",\"pid\":%d,\"attempt\":%d,\"section\":\"%s\","
                     "\"step\":%lld,\"time\":%.6f,\"section_time\":%.6f,\"steps_done\":%lld,\"step_time\":%.6f,"
                     "\"busy_time\":%.6f,\"train_time\":%.6f,\"phase\":%lld,\"seq_len\":%lld,\"seq_end\":%lld}",
                     seq, hb.rank, hb.world, hb.host, (int)getpid(), hb.attempt, zaya_ft_section_name(hb.section),
                     (long long)hb.step, wall_s(), hb.section_t, (long long)hb.steps_done, hb.step_time, hb.busy_time,
                     hb.train_time, (long long)hb.phase, (long long)hb.seq_len, seq);
    if (n < 0 || n >= HB_RECORD - 1) return;
    memset(buf + n, ' ', (size_t)(HB_RECORD - 1 - n));
    buf[HB_RECORD - 1] = '\n';
    if (pwrite(hb.fd, buf, HB_RECORD, 0) != HB_RECORD) { /* best effort: the run must not fail over telemetry */
    }
}

void zaya_hb_open(int rank, int world) {
    const char *dir = getenv(ZAYA_ENV_HEARTBEAT_DIR);
    const char *att = getenv(ZAYA_ENV_ATTEMPT);
    if (hb.on) return; /* opened early (before the output lock), kept */
    hb.rank = rank;
    hb.world = world;
    hb.attempt = att ? atoi(att) : 1;
    if (!dir || !*dir) return;
    if (gethostname(hb.host, sizeof hb.host) != 0) snprintf(hb.host, sizeof hb.host, "?");
    hb.host[sizeof hb.host - 1] = 0;
    for (char *c = hb.host; *c; c++)
        if (*c == '"' || *c == '\\') *c = '_';
    char path[4200], ev[4200];
    snprintf(path, sizeof path, "%s/" ZAYA_FT_HB_RANK_FILE, dir, rank);
    hb.fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (hb.fd < 0) return;
    snprintf(ev, sizeof ev, "%s/" ZAYA_FT_HB_EVENTS_FILE, dir, rank);
    hb.events_fd = open(ev, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    hb.on = 1;
    hb.section = ZAYA_FT_STARTUP;
    hb.section_t = wall_s();
    hb_write();
}

void zaya_hb_section(zaya_ft_section s, int64_t step) {
    if (!hb.on) return;
    hb.section = s;
    hb.step = step;
    hb.section_t = wall_s();
    hb_write();
}

void zaya_hb_regime(int64_t phase, int64_t seq_len) {
    hb.phase = phase;
    hb.seq_len = seq_len;
}

void zaya_hb_tick(void) {
    if (hb.on) hb_write();
}

void zaya_hb_step(int64_t step, double seconds, double busy) {
    if (!hb.on) return;
    hb.step = step + 1;
    hb.steps_done++;
    hb.step_time = seconds;
    hb.busy_time = busy;
    hb.train_time += seconds;
    hb_write();
}

void zaya_hb_event(const char *kind, int64_t step, const char *detail) {
    if (!hb.on || hb.events_fd < 0) return;
    char buf[1024], clean[600];
    size_t j = 0;
    for (size_t i = 0; detail && detail[i] && j + 1 < sizeof clean; i++) /* keep the line valid JSON */
        clean[j++] = (detail[i] == '"' || detail[i] == '\\' || (unsigned char)detail[i] < 0x20) ? '\'' : detail[i];
    clean[j] = 0;
    int n = snprintf(buf, sizeof buf,
                     "{\"kind\":\"%s\",\"rank\":%d,\"attempt\":%d,\"step\":%lld,\"time\":%.6f,\"detail\":\"%s\"}\n", kind,
                     hb.rank, hb.attempt, (long long)step, wall_s(), clean);
    if (n > (int)sizeof buf - 1) n = (int)sizeof buf - 1;
    if (write(hb.events_fd, buf, (size_t)n) != n) { /* best effort: the run must not fail over telemetry */
    }
}

void zaya_hb_close(void) {
    if (hb.events_fd >= 0) close(hb.events_fd);
    if (hb.fd >= 0) close(hb.fd);
    hb.events_fd = hb.fd = -1;
    hb.on = 0;
}
