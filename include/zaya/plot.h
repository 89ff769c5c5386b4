/* PNG line plots rendered by gnuplot. The data and the gnuplot script are kept next to the PNG
 * (name.dat, name.gp) so a plot can be re-rendered or restyled by hand. */
#ifndef ZAYA_PLOT_H
#define ZAYA_PLOT_H

#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zaya_plot_series {
    const char *title;
    const double *x, *y;
    int n;
} zaya_plot_series;

typedef struct zaya_plot_opts {
    const char *title, *xlabel, *ylabel;
    int logx, logy; /* log scales (base 2 for x when logx == 2, else base 10) */
    int points;     /* draw points as well as lines */
} zaya_plot_opts;

/* Renders series to png_path (ends in .png). Returns ZAYA_EUNSUPPORTED with a clear message when
 * gnuplot is not installed; callers treat plots as optional output and warn. */
zaya_status zaya_plot_lines(const char *png_path, const zaya_plot_opts *opts, const zaya_plot_series *series,
                            int nseries);

#ifdef __cplusplus
}
#endif

#endif
