/* The numbers docs/data-format.md states about the built-in run, generated from the run itself
 * (zaya_run_default, resolved: steps, tokens, batches, learning rates) between the markers
 * <!-- builtin-run:begin --> and <!-- builtin-run:end -->. `builtin_run_doc DOC` checks that the
 * paragraph there is the one the run gives (the ctest builtin_run_doc; it fails when the run changed
 * and the doc did not); `builtin_run_doc --write DOC` rewrites it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/curriculum.h"

#define BEGIN "<!-- builtin-run:begin -->\n"
#define END "<!-- builtin-run:end -->"

static void ktok(char *out, size_t cap, int64_t t) { /* 131072 -> "128K", else grouped digits */
    if (t > 0 && t % 1024 == 0 && t < (1 << 20)) snprintf(out, cap, "%lldK", (long long)(t / 1024));
    else if (t >= 1000000) snprintf(out, cap, "%lld,%03lld,%03lld", (long long)(t / 1000000), (long long)(t / 1000 % 1000), (long long)(t % 1000));
    else if (t >= 1000) snprintf(out, cap, "%lld,%03lld", (long long)(t / 1000), (long long)(t % 1000));
    else snprintf(out, cap, "%lld", (long long)t);
}

static int render(char *out, size_t cap) {
    zaya_run r;
    if (zaya_run_default(NULL, &r) != ZAYA_OK) {
        fprintf(stderr, "builtin_run_doc: the built-in run does not parse: %s\n", zaya_error_message());
        return -1;
    }
    size_t n = 0;
#define P(...) n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, __VA_ARGS__)
    const zaya_phase *last = &r.phases[r.nphases - 1];
    char tot[32];
    ktok(tot, sizeof tot, r.total_tokens);
    P("**Built-in run** (`zaya_run_default`, `%s`, modelled on the paper's recipe at CPU scale; this paragraph is\n"
      "generated from the run by `build/tests/builtin_run_doc --write docs/data-format.md`, and the ctest\n"
      "`builtin_run_doc` fails when they differ): %d phases, %lld steps, %s tokens, %lld tokens per step after\n"
      "the ramp, seed %llu.",
      r.name, r.nphases, (long long)r.total_steps, tot, (long long)(last->batch * last->seq_len), (unsigned long long)r.seed);
    for (int i = 0; i < r.nphases; i++) {
        const zaya_phase *p = &r.phases[i];
        const int64_t end_tok = i + 1 < r.nphases ? r.phases[i + 1].first_token : r.total_tokens;
        char t[32], ramp[32], warm[32];
        ktok(t, sizeof t, end_tok - p->first_token);
        ktok(ramp, sizeof ramp, p->batch_ramp_tokens);
        ktok(warm, sizeof warm, p->warmup_tokens);
        P(" (%d) `%s`: steps %lld-%lld, %s tokens;", i + 1, p->name, (long long)p->first_step,
          (long long)(p->first_step + p->steps - 1), t);
        for (int k = 0; k < p->nsources; k++) P("%s %s %g", k ? " /" : "", p->source[k], p->weight[k]);
        P("; T = %lld, batch ", (long long)p->seq_len);
        if (p->batch_from != p->batch) P("%lld -> %lld over %s tokens", (long long)p->batch_from, (long long)p->batch, ramp);
        else P("%lld", (long long)p->batch);
        P(", theta %g; lr %g -> %g", p->rope_theta, p->lr_peak, p->lr_final);
        if (p->warmup_tokens > 0) P(" after a warmup over %s tokens", warm);
        if (p->lr_peak != p->lr_final) {
            if (p->decay == ZAYA_LR_WSD) P(", held then decayed linearly over the last %g%%", 100 * p->decay_fraction);
            else P(", cosine");
        }
        P(".");
    }
    P(" `batch_multiple` %lld (the world sizes that divide it:", (long long)r.batch_multiple);
    for (int64_t w = 1; w <= r.batch_multiple; w++)
        if (r.batch_multiple % w == 0) P(" %lld", (long long)w);
    P("), `seq_multiple` %lld.\n", (long long)r.seq_multiple);
#undef P
    zaya_run_free(&r);
    return n < cap ? (int)n : -1;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = sz >= 0 ? malloc((size_t)sz + 1) : NULL;
    if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) b[sz] = 0, *len = (size_t)sz;
    return b;
}

int main(int argc, char **argv) {
    const int write = argc == 3 && !strcmp(argv[1], "--write");
    if (argc != 2 + write) {
        fprintf(stderr, "usage: builtin_run_doc [--write] DOC\n");
        return 2;
    }
    const char *doc = argv[1 + write];
    static char want[8192];
    if (render(want, sizeof want) < 0) return 1;
    size_t len = 0;
    char *text = slurp(doc, &len);
    if (!text) {
        fprintf(stderr, "builtin_run_doc: cannot read '%s'\n", doc);
        return 1;
    }
    char *b = strstr(text, BEGIN), *e = b ? strstr(b, END) : NULL;
    if (!b || !e) {
        fprintf(stderr, "builtin_run_doc: '%s' has no %s ... %s block\n", doc, "<!-- builtin-run:begin -->", END);
        free(text);
        return 1;
    }
    b += strlen(BEGIN);
    const size_t have = (size_t)(e - b);
    int same = have == strlen(want) && !memcmp(b, want, have);
    int rc = 0;
    if (write && !same) {
        FILE *f = fopen(doc, "wb");
        rc = !f || fwrite(text, 1, (size_t)(b - text), f) != (size_t)(b - text) || fputs(want, f) < 0 || fputs(e, f) < 0;
        if (f && fclose(f) != 0) rc = 1;
        printf("builtin_run_doc: %s %s\n", doc, rc ? "could not be written" : "rewritten");
    } else if (!same) {
        fprintf(stderr, "builtin_run_doc: the built-in run paragraph of '%s' is stale; it should read:\n%s"
                        "(regenerate: builtin_run_doc --write %s)\n", doc, want, doc);
        rc = 1;
    } else {
        printf("builtin_run_doc: %s agrees with the built-in run\n", doc);
    }
    free(text);
    return rc;
}
