/* zaya: pretraining Mixture-of-Experts language models (ZAYA1) on CPU clusters. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"

#define ZAYA_VERSION_STRING "0.1.0"

int main(int argc, char **argv) {
    if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version"))) {
        printf("zaya %s\n", ZAYA_VERSION_STRING);
        return 0;
    }
    return zaya_cli_main(argc - 1, argv + 1);
}
