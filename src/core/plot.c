#include "zaya/plot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static void write_escaped(FILE *f, const char *s) {
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
}

zaya_status zaya_plot_lines(const char *png_path, const zaya_plot_opts *o, const zaya_plot_series *series,
                            int nseries) {
    size_t len = strlen(png_path);
    if (len < 5 || strcmp(png_path + len - 4, ".png") != 0)
        return zaya_error_set(ZAYA_EINVAL, "plot path '%s' must end in .png", png_path);
    char dat[4096], gp[4096];
    snprintf(dat, sizeof dat, "%.*s.dat", (int)(len - 4), png_path);
    snprintf(gp, sizeof gp, "%.*s.gp", (int)(len - 4), png_path);

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
    if (o && o->logx) fprintf(f, "set logscale x %d\n", o->logx == 2 ? 2 : 10);
    if (o && o->logy) fprintf(f, "set logscale y\n");
    fprintf(f, "plot ");
    for (int s = 0; s < nseries; s++) {
        fprintf(f, "%s\"", s ? ", \\\n     " : "");
        write_escaped(f, dat);
        fprintf(f, "\" index %d using 1:2 with %s lw 2 title \"", s, (o && o->points) ? "linespoints" : "lines");
        write_escaped(f, series[s].title ? series[s].title : "");
        fprintf(f, "\"");
    }
    fprintf(f, "\n");
    if (fclose(f) != 0) return zaya_error_set(ZAYA_EIO, "writing '%s' failed", gp);

    if (system("command -v gnuplot >/dev/null 2>&1") != 0)
        return zaya_error_set(ZAYA_EUNSUPPORTED, "gnuplot is not installed; data kept in '%s' (run scripts/setup.sh)", dat);
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "gnuplot '%s' 2>&1", gp);
    int rc = system(cmd);
    if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0)
        return zaya_error_set(ZAYA_EIO, "gnuplot failed on '%s'", gp);
    return ZAYA_OK;
}
