/* The built-in corpus of the main job: prose from the `fortunes` package and code from the C headers
 * in /usr/include, both installed from Debian by scripts/setup.sh. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "zaya/corpus.h"
#include "zaya/fs.h"
#include "zaya/log.h"
#include "zaya/tokenizer.h"

#define FORTUNE_DIR "/usr/share/games/fortunes"
#define HEADER_DIR "/usr/include"

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Fortune text files: every plain file without an extension (the .dat files are binary indexes and
 * the .u8 files UTF-8 duplicates). */
static zaya_status list_fortunes(char ***out, int *n) {
    DIR *d = opendir(FORTUNE_DIR);
    if (!d)
        return zaya_error_set(ZAYA_EIO, "'%s' not found: the built-in corpus needs the 'fortunes' package (run scripts/setup.sh)",
                              FORTUNE_DIR);
    char **v = NULL;
    int cnt = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || strchr(e->d_name, '.')) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", FORTUNE_DIR, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (cnt == cap) {
            cap = cap ? 2 * cap : 64;
            char **nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv) break;
            v = nv;
        }
        v[cnt++] = strdup(path);
    }
    closedir(d);
    if (cnt == 0) {
        free(v);
        return zaya_error_set(ZAYA_EIO, "no fortune text files in '%s' (is the 'fortunes' package installed?)", FORTUNE_DIR);
    }
    qsort(v, (size_t)cnt, sizeof *v, cmp_str);
    *out = v;
    *n = cnt;
    return ZAYA_OK;
}

static void free_list(char **v, int n) {
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

zaya_status zaya_train_prepare_builtin_data(const char *dir, int64_t vocab_size) {
    char tok_path[4096], prose_manifest[4096], code_manifest[4096];
    ZAYA_TRY(zaya_mkdir_p(dir));
    ZAYA_TRY(zaya_path_join(tok_path, sizeof tok_path, dir, "tokenizer.json"));
    ZAYA_TRY(zaya_path_join(prose_manifest, sizeof prose_manifest, dir, "prose.json"));
    ZAYA_TRY(zaya_path_join(code_manifest, sizeof code_manifest, dir, "code.json"));
    if (exists(tok_path) && exists(prose_manifest) && exists(code_manifest)) {
        ZAYA_INFO("built-in corpus already prepared in %s", dir);
        return ZAYA_OK;
    }
    if (!exists(HEADER_DIR)) return zaya_error_set(ZAYA_EIO, "'%s' not found: the code corpus reads C headers", HEADER_DIR);
    char **fort = NULL;
    int nfort = 0;
    ZAYA_TRY(list_fortunes(&fort, &nfort));

    zaya_status s = ZAYA_OK;
    if (!exists(tok_path)) {
        /* The tokenizer sees all the prose and the first megabytes of headers, so both kinds of text
         * get merges of their own. */
        const char **paths = malloc(sizeof(char *) * (size_t)(nfort + 1));
        for (int i = 0; i < nfort; i++) paths[i] = fort[i];
        paths[nfort] = HEADER_DIR;
        zaya_bpe_train_opts o = {.vocab_size = vocab_size, .bos = "<|bos|>", .eos = "<|eos|>", .pad = "<|pad|>",
                                 .min_frequency = 2, .max_bytes = 12 << 20};
        zaya_tokenizer *tok = NULL;
        ZAYA_INFO("training a %lld-token BPE tokenizer on fortunes + %s", (long long)vocab_size, HEADER_DIR);
        s = zaya_tokenizer_train(paths, nfort + 1, &o, &tok);
        free(paths);
        if (s == ZAYA_OK) s = zaya_tokenizer_save(tok, tok_path);
        zaya_tokenizer_free(tok);
        if (s != ZAYA_OK) goto done;
    }
    zaya_prepare_stats st;
    zaya_prepare_opts prose = {.name = "prose", .out_dir = dir, .val_fraction = 0.02, .seed = 1234,
                               .doc_delimiter = "%", .overwrite = 1};
    memset(&st, 0, sizeof st);
    s = zaya_corpus_prepare(tok_path, (const char *const *)fort, nfort, &prose, &st);
    if (s != ZAYA_OK) goto done;
    ZAYA_INFO("prose: %llu documents, %llu train / %llu validation tokens", (unsigned long long)st.docs,
              (unsigned long long)st.train_tokens, (unsigned long long)st.val_tokens);
    const char *hdr = HEADER_DIR;
    zaya_prepare_opts code = {.name = "code", .out_dir = dir, .val_fraction = 0.01, .seed = 1234,
                              .extensions = "h", .overwrite = 1};
    memset(&st, 0, sizeof st);
    s = zaya_corpus_prepare(tok_path, &hdr, 1, &code, &st);
    if (s != ZAYA_OK) goto done;
    ZAYA_INFO("code: %llu documents, %llu train / %llu validation tokens", (unsigned long long)st.docs,
              (unsigned long long)st.train_tokens, (unsigned long long)st.val_tokens);
done:
    free_list(fort, nfort);
    return s;
}
