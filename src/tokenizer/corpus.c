/* Training input: files and directories walked recursively in sorted order (deterministic), read as
 * raw bytes, up to a byte limit. */
#include "tokenizer/corpus.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "zaya/fs.h"

static zaya_status visit(const char *path, zaya_corpus_fn fn, void *ctx, int64_t max_bytes, int64_t *used, int depth) {
    if (max_bytes > 0 && *used >= max_bytes) return ZAYA_OK;
    if (depth > 64) return zaya_error_set(ZAYA_EINVAL, "%s: directories nested too deeply (link loop?)", path);
    struct stat st;
    if (stat(path, &st) != 0) return zaya_error_set(ZAYA_EIO, "%s: cannot stat (missing file?)", path);
    if (S_ISDIR(st.st_mode)) {
        struct dirent **list;
        int n = scandir(path, &list, NULL, alphasort);
        if (n < 0) return zaya_error_set(ZAYA_EIO, "%s: cannot list directory", path);
        zaya_status s = ZAYA_OK;
        for (int i = 0; i < n; i++) {
            const char *name = list[i]->d_name;
            if (s == ZAYA_OK && strcmp(name, ".") && strcmp(name, "..")) {
                size_t len = strlen(path) + strlen(name) + 2;
                char *child = malloc(len);
                if (!child) s = zaya_error_set(ZAYA_ENOMEM, "out of memory");
                else {
                    snprintf(child, len, "%s/%s", path, name);
                    s = visit(child, fn, ctx, max_bytes, used, depth + 1);
                    free(child);
                }
            }
            free(list[i]);
        }
        free(list);
        return s;
    }
    if (!S_ISREG(st.st_mode)) return ZAYA_OK; /* sockets, fifos, devices: not text */
    char *data;
    size_t len;
    ZAYA_TRY(zaya_read_file(path, &data, &len));
    if (max_bytes > 0 && (int64_t)len > max_bytes - *used) len = (size_t)(max_bytes - *used);
    *used += (int64_t)len;
    zaya_status s = fn(ctx, path, (const uint8_t *)data, len);
    free(data);
    return s;
}

zaya_status zaya_corpus_walk(const char *const *paths, int npaths, int64_t max_bytes, zaya_corpus_fn fn, void *ctx,
                             int64_t *bytes_read) {
    int64_t used = 0;
    for (int i = 0; i < npaths; i++) ZAYA_TRY(visit(paths[i], fn, ctx, max_bytes, &used, 0));
    if (bytes_read) *bytes_read = used;
    return ZAYA_OK;
}
