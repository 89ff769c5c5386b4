/* `zaya bench coll --placement hosts`: the groups of ranks by host. Ranks are on the same host when
 * they report the same hostname (on a real cluster the node name; in the simulated cluster of
 * scripts/cluster.sh each host namespace has its own UTS namespace and name). The intra-host group of a
 * rank is every rank of its host; the inter-host group is the first rank of each host. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll_internal.h"
#include "dist/dist_mpi.h"
#include "zaya/alloc.h"

const char *zaya_coll_placement_name(int placement) {
    switch (placement) {
    case ZAYA_COLL_PLACE_PACKED: return "packed";
    case ZAYA_COLL_PLACE_SPREAD: return "spread";
    case ZAYA_COLL_PLACE_INTRA_HOST: return "intra-host";
    case ZAYA_COLL_PLACE_INTER_HOST: return "inter-host";
    default: return "?";
    }
}

int zaya_coll_placement_parse(const char *name) {
    for (int p = 0; p < ZAYA_COLL_PLACE_COUNT; p++)
        if (name && !strcmp(name, zaya_coll_placement_name(p))) return p;
    return -1;
}

zaya_status zaya_coll_host_groups(const zaya_comm *world, zaya_coll_hosts *h) {
    memset(h, 0, sizeof *h);
    enum { NAME = 64 };
    char mine[NAME] = {0};
    if (gethostname(mine, NAME - 1) != 0) strcpy(mine, "?");
    int n = world->size;
    char *all = zaya_malloc((size_t)n * NAME);
    if (!all) return zaya_error_set(ZAYA_ENOMEM, "bench coll: host names of %d ranks", n);
    int rc = MPI_Allgather(mine, NAME, MPI_CHAR, all, NAME, MPI_CHAR, world->comm);
    if (rc != MPI_SUCCESS) {
        zaya_free(all);
        return zaya_error_set(ZAYA_EMPI, "bench coll: gathering the ranks' host names failed (MPI error %d)", rc);
    }
    /* A host's color is the first world rank on it; the local rank counts the earlier ranks there. */
    int color = -1, local = 0;
    for (int r = 0; r < n; r++) {
        const char *name = all + (size_t)r * NAME;
        int first = 1;
        for (int q = 0; q < r; q++)
            if (!strcmp(all + (size_t)q * NAME, name)) {
                first = 0;
                break;
            }
        if (first) h->nhosts++;
        if (!strcmp(name, mine)) {
            if (color < 0) color = r;
            if (r < world->rank) local++;
        }
    }
    zaya_free(all);
    zaya_status st = zaya_comm_split(world, color, world->rank, &h->intra);
    if (st == ZAYA_OK) st = zaya_comm_split(world, local == 0 ? 0 : -1, world->rank, &h->inter);
    if (st != ZAYA_OK) zaya_coll_hosts_free(h);
    return st;
}

void zaya_coll_hosts_free(zaya_coll_hosts *h) {
    zaya_comm_free(h->intra);
    zaya_comm_free(h->inter);
    h->intra = h->inter = NULL;
}
