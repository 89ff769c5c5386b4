/* A plain driver for the fuzz harnesses (no libFuzzer, any compiler): runs every file given, or every
 * file in the directories given, through LLVMFuzzerTestOneInput once. The test suite replays the seed
 * corpora and the kept reproducers (tests/fuzz/regressions/) this way under the normal and the
 * sanitizer builds. Inputs after -a must all be accepted by the loader (the seeds zaya wrote); inputs
 * after -r may be rejected (reproducers of fixed defects), but none may crash. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"
#include "zaya/fs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int g_inputs, g_must_accept, g_rejected;

static int replay_file(const char *path) {
    char *data = NULL;
    size_t len = 0;
    if (zaya_read_file(path, &data, &len) != ZAYA_OK) {
        fprintf(stderr, "replay: %s: %s\n", path, zaya_error_message());
        return 1;
    }
    /* An exact-size copy, so that ASan sees a read past the end as libFuzzer would. */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact) return 1;
    memcpy(exact, data, len);
    free(data);
    int before = fuzz_accepted;
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    g_inputs++;
    if (g_must_accept && fuzz_accepted == before) {
        fprintf(stderr, "replay: seed %s was rejected: %s\n", path, zaya_error_message());
        g_rejected++;
        return 1;
    }
    return 0;
}

static int replay(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: %s: not found\n", path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) return replay_file(path);
    DIR *d = opendir(path);
    if (!d) return 1;
    int bad = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        bad |= replay(p);
    }
    closedir(d);
    return bad;
}

int main(int argc, char **argv) {
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-a")) g_must_accept = 1;
        else if (!strcmp(argv[i], "-r")) g_must_accept = 0;
        else bad |= replay(argv[i]);
    }
    printf("%s: %d inputs replayed, %d accepted, %d seeds rejected\n", argv[0], g_inputs, fuzz_accepted, g_rejected);
    return bad;
}
