/* Private steps of building a weight store (src/infer/weights.c, weights_load.c). */
#ifndef ZAYA_INFER_WEIGHTS_INTERNAL_H
#define ZAYA_INFER_WEIGHTS_INTERNAL_H

#include "zaya/infer_weights.h"

/* Empty store with the tensor table of cfg (no data yet). */
zaya_status zaya_infer_weights_table(zaya_infer_weights *w, const zaya_config *cfg, zaya_dtype dtype);
/* Own buffers for every vector and for every matrix i with !mapped[i] (mapped may be NULL); sets data[i]. */
zaya_status zaya_infer_weights_alloc(zaya_infer_weights *w, const unsigned char *mapped);
/* Binds the block pointers (every data[i] set) and builds the RoPE table. */
zaya_status zaya_infer_weights_finish(zaya_infer_weights *w);
/* Closes the checkpoint source (mapped shards), if any. */
void zaya_infer_weights_close_sources(zaya_infer_weights *w);

#endif
