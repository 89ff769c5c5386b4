#include "zaya/plot.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/proc.h"

static void write_escaped(FILE *f, const char *s) {
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
}

static zaya_status run_gnuplot(const char *gp, const char *dat) {
    if (!zaya_proc_which("gnuplot", NULL, 0))
        return zaya_error_set(ZAYA_EUNSUPPORTED, "gnuplot is not installed; data kept in '%s' (run scripts/setup.sh)", dat);
    char *argv[] = {"gnuplot", (char *)gp, NULL};
    char log[4200];
    snprintf(log, sizeof log, "%s.log", gp); /* gnuplot's warnings go here, not onto the caller's stderr */
    zaya_proc_opts po;
    memset(&po, 0, sizeof po);
    po.log_path = log;
    zaya_proc_result r;
    ZAYA_TRY(zaya_proc_run(argv, &po, 120, &r));
    char why[32];
    if (!zaya_proc_ok(&r))
        return zaya_error_set(ZAYA_EIO, "gnuplot failed on '%s' (%s); its output is in '%s'", gp,
                              zaya_proc_describe(&r, why, sizeof why), log);
    return ZAYA_OK;
}

static zaya_status side_paths(const char *png_path, char *dat, char *gp, size_t cap) {
    size_t len = strlen(png_path);
    if (len < 5 || strcmp(png_path + len - 4, ".png") != 0)
        return zaya_error_set(ZAYA_EINVAL, "plot path '%s' must end in .png", png_path);
    snprintf(dat, cap, "%.*s.dat", (int)(len - 4), png_path);
    snprintf(gp, cap, "%.*s.gp", (int)(len - 4), png_path);
    return ZAYA_OK;
}

zaya_status zaya_plot_heatmap(const char *png_path, const zaya_plot_heatmap_opts *o, const double *x, int ncols,
                              const double *z, int nrows) {
    char dat[4096], gp[4096];
    ZAYA_TRY(side_paths(png_path, dat, gp, sizeof dat));
    if (ncols < 1 || nrows < 1) return zaya_error_set(ZAYA_EINVAL, "heatmap '%s' has no cells", png_path);
    FILE *f = fopen(dat, "w");
    if (!f) return zaya_error_set(ZAYA_EIO, "cannot write '%s': %s", dat, strerror(errno));
    /* x row y value triples, one block per column: gnuplot's `with image` reads them as a grid */
    for (int c = 0; c < ncols; c++) {
        for (int r = 0; r < nrows; r++) fprintf(f, "%d %d %.6g\n", c, r, z[(size_t)c * (size_t)nrows + (size_t)r]);
        fprintf(f, "\n");
    }
    if (fclose(f) != 0) return zaya_error_set(ZAYA_EIO, "writing '%s' failed", dat);
    f = fopen(gp, "w");
    if (!f) return zaya_error_set(ZAYA_EIO, "cannot write '%s': %s", gp, strerror(errno));
    fprintf(f, "set terminal pngcairo size 1100,%d noenhanced font 'sans,10'\n", 240 + 12 * (nrows < 200 ? nrows : 200));
    fprintf(f, "set output \"");
    write_escaped(f, png_path);
    fprintf(f, "\"\nset xrange [-0.5:%d.5]\nset yrange [%d.5:-0.5]\n", ncols - 1, nrows - 1);
    if (o && o->title) { fprintf(f, "set title \""); write_escaped(f, o->title); fprintf(f, "\"\n"); }
    if (o && o->xlabel) { fprintf(f, "set xlabel \""); write_escaped(f, o->xlabel); fprintf(f, "\"\n"); }
    if (o && o->ylabel) { fprintf(f, "set ylabel \""); write_escaped(f, o->ylabel); fprintf(f, "\"\n"); }
    if (o && o->cblabel) { fprintf(f, "set cblabel \""); write_escaped(f, o->cblabel); fprintf(f, "\"\n"); }
    if (o && o->zmax > o->zmin) fprintf(f, "set cbrange [%g:%g]\n", o->zmin, o->zmax);
    fprintf(f, "set palette defined (0 '#2c7bb6', 0.5 '#ffffbf', 1 '#d7191c')\n");
    /* x tics: the real x values of up to 10 columns */
    fprintf(f, "set xtics (");
    int step = ncols > 10 ? ncols / 10 : 1;
    for (int c = 0, k = 0; c < ncols; c += step, k++) fprintf(f, "%s\"%g\" %d", k ? ", " : "", x ? x[c] : (double)c, c);
    fprintf(f, ")\n");
    if (o && o->row_group > 0 && nrows > o->row_group) {
        /* one labelled tic per group of rows (e.g. the experts of one layer) and a separator line */
        int groups = nrows / o->row_group, gstep = groups > 40 ? (groups + 39) / 40 : 1;
        fprintf(f, "set ytics (");
        for (int g = 0, k = 0; g < groups; g += gstep, k++)
            fprintf(f, "%s\"%s %d\" %g", k ? ", " : "", o->group_label ? o->group_label : "", g,
                    g * o->row_group + (o->row_group - 1) / 2.0);
        fprintf(f, ")\n");
        for (int g = 1; g < groups; g++)
            fprintf(f, "set arrow from -0.5,%g to %d.5,%g nohead lc rgb '#404040' lw 0.5 front\n",
                    g * o->row_group - 0.5, ncols - 1, g * o->row_group - 0.5);
    }
    fprintf(f, "plot \"");
    write_escaped(f, dat);
    fprintf(f, "\" using 1:2:3 with image notitle\n");
    if (fclose(f) != 0) return zaya_error_set(ZAYA_EIO, "writing '%s' failed", gp);
    return run_gnuplot(gp, dat);
}

/* x tics at powers of two over the data's range, labelled with binary suffixes (gnuplot's default
 * prints 1.04858e+06), at most about 12 of them. */
static void write_byte_tics(FILE *f, const zaya_plot_series *series, int nseries) {
    double lo = 0, hi = 0;
    for (int s = 0; s < nseries; s++)
        for (int i = 0; i < series[s].n; i++) {
            double x = series[s].x[i];
            if (x <= 0) continue;
            if (lo == 0 || x < lo) lo = x;
            if (x > hi) hi = x;
        }
    if (hi <= 0) return;
    int e0 = 0, e1 = 0;
    while (e0 < 62 && ldexp(1.0, e0 + 1) <= lo) e0++;
    while (e1 < 62 && ldexp(1.0, e1) < hi) e1++;
    int step = (e1 - e0) / 12 + 1;
    static const char suffix[] = " KMGTPE";
    fprintf(f, "set xtics (");
    for (int e = e0, k = 0; e <= e1; e += step, k++) {
        int unit = e / 10;
        fprintf(f, "%s\"%lld%.*s\" %.0f", k ? ", " : "", 1ll << (e - 10 * unit), unit ? 1 : 0, suffix + unit, ldexp(1.0, e));
    }
    fprintf(f, ")\n");
}

zaya_status zaya_plot_lines(const char *png_path, const zaya_plot_opts *o, const zaya_plot_series *series,
                            int nseries) {
    char dat[4096], gp[4096];
    ZAYA_TRY(side_paths(png_path, dat, gp, sizeof dat));
    /* the data's extent: no point, no plot; a single x (or y) value gets a range around it, which
     * gnuplot would otherwise widen itself with an "empty x range" warning */
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int s = 0; s < nseries; s++)
        for (int i = 0; i < series[s].n; i++) {
            const double x = series[s].x[i], y = series[s].y[i];
            if (!isfinite(x) || !isfinite(y)) continue;
            x0 = x < x0 ? x : x0, x1 = x > x1 ? x : x1, y0 = y < y0 ? y : y0, y1 = y > y1 ? y : y1;
        }
    if (!(x0 <= x1)) return ZAYA_OK;
    FILE *f = fopen(dat, "w");
    if (!f) return zaya_error_set(ZAYA_EIO, "cannot write '%s': %s", dat, strerror(errno));
    for (int s = 0; s < nseries; s++) {
        fprintf(f, "# %s\n", series[s].title ? series[s].title : "");
        for (int i = 0; i < series[s].n; i++) fprintf(f, "%.9g %.9g\n", series[s].x[i], series[s].y[i]);
        fprintf(f, "\n\n"); /* gnuplot data-set separator: `index s` selects series s */
    }
    if (fclose(f) != 0) return zaya_error_set(ZAYA_EIO, "writing '%s' failed", dat);

    f = fopen(gp, "w");
    if (!f) return zaya_error_set(ZAYA_EIO, "cannot write '%s': %s", gp, strerror(errno));
    fprintf(f, "set terminal pngcairo size 1000,640 noenhanced font 'sans,11'\n");
    fprintf(f, "set output \"");
    write_escaped(f, png_path);
    fprintf(f, "\"\nset grid\nset key outside right top\n");
    if (o && o->title) { fprintf(f, "set title \""); write_escaped(f, o->title); fprintf(f, "\"\n"); }
    if (o && o->xlabel) { fprintf(f, "set xlabel \""); write_escaped(f, o->xlabel); fprintf(f, "\"\n"); }
    if (o && o->ylabel) { fprintf(f, "set ylabel \""); write_escaped(f, o->ylabel); fprintf(f, "\"\n"); }
    if (o && o->logx) fprintf(f, "set logscale x %d\n", o->logx == 2 || o->logx == ZAYA_PLOT_LOGX_BYTES ? 2 : 10);
    if (o && o->logy) fprintf(f, "set logscale y\n");
    if (o && o->logx == ZAYA_PLOT_LOGX_BYTES) write_byte_tics(f, series, nseries);
    if (x0 == x1) {
        if (o && o->logx && x0 > 0) fprintf(f, "set xrange [%.9g:%.9g]\n", x0 / 2, x0 * 2);
        else fprintf(f, "set xrange [%.9g:%.9g]\n", x0 - 1, x0 + 1);
    }
    if (y0 == y1) {
        if (o && o->logy && y0 > 0) fprintf(f, "set yrange [%.9g:%.9g]\n", y0 / 2, y0 * 2);
        else fprintf(f, "set yrange [%.9g:%.9g]\n", y0 - (y0 != 0 ? fabs(y0) / 10 : 1), y0 + (y0 != 0 ? fabs(y0) / 10 : 1));
    }
    fprintf(f, "plot ");
    for (int s = 0, first = 1; s < nseries; s++) {
        if (series[s].n == 0) continue; /* an empty block: gnuplot would warn about it */
        fprintf(f, "%s\"", first ? "" : ", \\\n     ");
        first = 0;
        write_escaped(f, dat);
        fprintf(f, "\" index %d using 1:2 with %s lw 2 title \"", s, (o && o->points) ? "linespoints" : "lines");
        write_escaped(f, series[s].title ? series[s].title : "");
        fprintf(f, "\"");
    }
    fprintf(f, "\n");
    if (fclose(f) != 0) return zaya_error_set(ZAYA_EIO, "writing '%s' failed", gp);

    return run_gnuplot(gp, dat);
}
