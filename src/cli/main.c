/* zaya: pretraining Mixture-of-Experts language models (ZAYA1) on CPU clusters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"

#define ZAYA_VERSION_STRING "0.1.0"

/* A shared machine by default: OpenMP workers (zaya's loops and oneDNN's share one libgomp pool) that
 * spin after each parallel region burn the cores other processes need and lose theirs to them in
 * turn (steps 20-60x slower beside one busy process; even a 10000-spin bound was 15x slower than
 * passive on a loaded machine). Unless the user chose a policy (OMP_WAIT_POLICY or GOMP_SPINCOUNT
 * set, even empty), zaya runs with OMP_WAIT_POLICY=passive: a worker sleeps as soon as it has nothing
 * to do. libgomp reads these variables in its constructor, before main() runs, so setting them here
 * takes a re-exec of this program (same pid, same arguments, the variable then set: once). */
static void apply_wait_policy(char **argv) {
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0 || setenv("ZAYA_WAIT_POLICY_DEFAULT", "1", 1) != 0) return;
    execv("/proc/self/exe", argv);
    /* no re-exec (no /proc): run on, with libgomp's default policy */
    fprintf(stderr, "zaya: warning: could not re-execute to apply OMP_WAIT_POLICY=passive; set it yourself on a "
                    "shared machine\n");
}

int main(int argc, char **argv) {
    apply_wait_policy(argv);
    if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version"))) {
        const char *w = getenv("OMP_WAIT_POLICY"), *sc = getenv("GOMP_SPINCOUNT"), *d = getenv("ZAYA_WAIT_POLICY_DEFAULT");
        printf("zaya %s\n", ZAYA_VERSION_STRING);
        if (d && w && !strcmp(w, "passive") && !sc) printf("OpenMP wait policy: passive (zaya's default; set OMP_WAIT_POLICY to choose)\n");
        else printf("OpenMP wait policy: OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s (set by the user)\n", w ? w : "(unset)", sc ? sc : "(unset)");
        return 0;
    }
    return zaya_cli_main(argc - 1, argv + 1);
}
