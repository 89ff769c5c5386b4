#include "zaya/progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "zaya/timer.h"

void zaya_progress_init(zaya_progress *p, const char *label, const char *unit, int64_t total) {
    p->label = label;
    p->unit = unit ? unit : "item";
    p->total = total;
    p->scale = 1;
    p->t_start = p->t_last = zaya_now_s();
    p->tty = isatty(STDERR_FILENO);
    p->min_interval_s = p->tty ? 0.1 : 2.0;
    const char *e = getenv("ZAYA_PROGRESS");
    p->enabled = !(e && e[0] == '0');
}

static void emit(zaya_progress *p, int64_t done, const char *note, int final) {
    double now = zaya_now_s(), el = now - p->t_start;
    const double sc = p->scale > 0 ? p->scale : 1;
    double rate = el > 0 ? (double)done / sc / el : 0;
    double eta = (rate > 0 && p->total > done) ? (double)(p->total - done) / sc / rate : 0;
    if (p->tty) {
        int width = 24, fill = p->total > 0 ? (int)((double)width * (double)done / (double)p->total) : 0;
        if (fill > width) fill = width;
        char bar[32];
        for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
        bar[width] = '\0';
        if (sc == 1)
            fprintf(stderr, "\r\033[K%s [%s] %lld/%lld %s  %.2f %s/s  ETA %.0fs%s%s", p->label, bar, (long long)done,
                    (long long)p->total, p->unit, rate, p->unit, eta, note ? "  " : "", note ? note : "");
        else
            fprintf(stderr, "\r\033[K%s [%s] %.1f/%.1f %s  %.2f %s/s  ETA %.0fs%s%s", p->label, bar, (double)done / sc,
                    (double)p->total / sc, p->unit, rate, p->unit, eta, note ? "  " : "", note ? note : "");
        if (final) fputc('\n', stderr);
    } else {
        fprintf(stderr,
                "{\"progress\":\"%s\",\"done\":%lld,\"total\":%lld,\"unit\":\"%s\",\"rate\":%.4g,\"elapsed_s\":%.3f,"
                "\"eta_s\":%.1f%s%s%s}\n",
                p->label, (long long)done, (long long)p->total, sc == 1 ? p->unit : "B", rate * sc, el, eta, note ? ",\"note\":\"" : "",
                note ? note : "", note ? "\"" : "");
    }
    fflush(stderr);
    p->t_last = now;
}

void zaya_progress_update(zaya_progress *p, int64_t done, const char *note) {
    if (!p->enabled) return;
    if (zaya_now_s() - p->t_last < p->min_interval_s && done < p->total) return;
    emit(p, done, note, 0);
}

void zaya_progress_stop(zaya_progress *p, int64_t done, const char *note) {
    if (!p->enabled) return;
    emit(p, done, note, 1);
}

void zaya_progress_finish(zaya_progress *p, const char *note) {
    if (!p->enabled) return;
    emit(p, p->total, note, 1);
}
