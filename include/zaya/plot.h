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
    int logx, logy; /* log scales (base 2 for x when logx == 2 or ZAYA_PLOT_LOGX_BYTES, else base 10) */
    int points;     /* draw points as well as lines */
} zaya_plot_opts;
/* logx value for sizes in bytes: base 2, tics at powers of two labelled 8, 512, 1K, 64M, 1G. */
#define ZAYA_PLOT_LOGX_BYTES 3

/* Renders series to png_path (ends in .png). Returns ZAYA_EUNSUPPORTED with a clear message when
 * gnuplot is not installed; callers treat plots as optional output and warn. */
zaya_status zaya_plot_lines(const char *png_path, const zaya_plot_opts *opts, const zaya_plot_series *series,
                            int nseries);

typedef struct zaya_plot_heatmap_opts {
    const char *title, *xlabel, *ylabel, *cblabel;
    double zmin, zmax;       /* colour range; zmax <= zmin: automatic */
    int row_group;           /* > 0: rows come in groups of this many (labelled, separated by lines) */
    const char *group_label; /* tic label prefix of a group, e.g. "layer" */
} zaya_plot_heatmap_opts;

/* Renders a grid of ncols columns (x[c] labels column c; NULL: 0..ncols-1) by nrows rows as a colour
 * image: z[c * nrows + r] is the cell of column c, row r (row 0 at the top). Same side files and
 * gnuplot handling as zaya_plot_lines. */
zaya_status zaya_plot_heatmap(const char *png_path, const zaya_plot_heatmap_opts *opts, const double *x, int ncols,
                              const double *z, int nrows);

#ifdef __cplusplus
}
#endif

#endif
