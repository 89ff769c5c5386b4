/* Heartbeat records and event lines as the supervisor reads them (zaya_ft_monitor_poll): the input
 * is both rank 0's record file and its event log. */
#include <stdlib.h>

#include "fuzz_common.h"
#include "ft/internal.h"

static zaya_ft_monitor g_mon;
static int g_events;

static void on_event(void *ctx, const zaya_ft_event *e) {
    (void)ctx;
    FUZZ_ASSERT(e->rank == 0);
    g_events++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    fuzz_write("rank-00000.json", data, size);
    fuzz_write("events-r00000.jsonl", data, size);
    zaya_ft_monitor_reset(&g_mon, fuzz_dir());
    g_mon.nsamples = g_mon.sample_head = 0;
    g_events = 0;
    zaya_ft_monitor_poll(&g_mon, 1.0, on_event, NULL);
    zaya_ft_monitor_poll(&g_mon, 2.0, on_event, NULL);
    FUZZ_ASSERT(g_mon.nranks >= 0 && g_mon.nranks <= ZAYA_FT_MAX_RANKS);
    (void)zaya_ft_monitor_median_step(&g_mon);
    if (g_mon.nranks > 0 || g_events > 0) fuzz_accept();
    return 0;
}
