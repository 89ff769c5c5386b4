/* Evaluation: LM loss over windows equals the training forward's loss; multiple-choice scores equal
 * log-likelihoods from the full forward; JSONL errors name the line and return nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "zaya/fs.h"
#include "zaya/infer.h"
#include "zaya/rng.h"
#include "zaya/shard.h"
#include "zaya/tokenizer.h"

static const char *corpus =
    "the quick brown fox jumps over the lazy dog. the dog sleeps in the sun and the fox runs away. "
    "a cat watches the fox and the dog from the garden wall, then the cat sleeps too.";


static zaya_tokenizer *tok;
static zaya_model model;
static char dir[64];

static void setup(void) {
    zaya_bpe_train_opts o = {.vocab_size = 300, .min_frequency = 2};
    size_t len = strlen(corpus);
    CHECK(zaya_tokenizer_train_buffers(&corpus, &len, 1, &o, &tok) == ZAYA_OK, "tokenizer: %s", zaya_error_message());
    zaya_config c;
    zaya_config_preset("zaya1-tiny", &c);
    c.hidden_size = 20, c.num_hidden_layers = 2, c.head_dim = 8, c.num_experts = 3, c.moe_intermediate_size = 8;
    c.router_hidden_size = 8, c.vocab_size = zaya_tokenizer_vocab_size(tok), c.max_position_embeddings = 24;
    c.cca_time0 = 3, c.cca_time1 = 2;
    CHECK(zaya_model_init(&model, &c, ZAYA_DTYPE_F32) == ZAYA_OK, "model");
    th_randomize_model(&model, 11);
    snprintf(dir, sizeof dir, "/tmp/zaya_test_eval_XXXXXX");
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
}

static void test_lm(void) {
    int32_t *ids = NULL;
    size_t n = 0, cap = 0;
    CHECK(zaya_tokenizer_encode(tok, corpus, strlen(corpus), &ids, &n, &cap) == ZAYA_OK, "encode");
    const int64_t window = 13, V = model.cfg.vocab_size;
    zaya_infer *e = NULL;
    zaya_infer_opts o = {.max_seqs = 3, .max_len = 24, .max_step_tokens = 15, .gemv = 1}; /* chunks of 5 */
    CHECK(zaya_infer_init(&e, &model, &o) == ZAYA_OK, "engine");
    int64_t *tb = calloc((size_t)V, sizeof(int64_t));
    for (int32_t i = 0; i < V; i++) zaya_tokenizer_token_bytes(tok, i, (size_t *)&tb[i]);
    zaya_eval_lm r;
    CHECK(zaya_eval_lm_tokens(e, ids, (int64_t)n, window, tb, &r) == ZAYA_OK, "eval: %s", zaya_error_message());
    /* reference: the training loss of each window */
    double nll = 0;
    int64_t scored = 0, bytes = 0;
    for (int64_t s = 0; s < (int64_t)n; s += window) {
        int64_t w = (int64_t)n - s < window ? (int64_t)n - s : window;
        if (w < 2) continue;
        int32_t tg[24];
        for (int64_t t = 0; t < w; t++) tg[t] = t + 1 < w ? ids[s + t + 1] : -1;
        for (int64_t t = 0; t + 1 < w; t++) bytes += tb[ids[s + t + 1]];
        CHECK(zaya_model_plan(&model, 1, w) == ZAYA_OK, "plan");
        float loss;
        CHECK(zaya_model_forward(&model, ids + s, tg, 0, &loss) == ZAYA_OK, "forward");
        nll += (double)loss * (double)(w - 1);
        scored += w - 1;
    }
    CHECK(r.tokens == scored, "scored %lld want %lld", (long long)r.tokens, (long long)scored);
    CHECK(r.bytes == bytes && bytes > r.tokens, "bytes %lld want %lld", (long long)r.bytes, (long long)bytes);
    CHECK(fabs(r.nll - nll) <= 1e-5 * nll, "nll %.8f want %.8f", r.nll, nll);
    printf("lm: %lld tokens, ppl %.3f, bpb %.4f (reference nll %.6f, engine %.6f)\n", (long long)r.tokens,
           zaya_eval_ppl(&r), zaya_eval_bpb(&r), nll, r.nll);
    /* the same tokens through a shard give the same result; a shard with a larger vocabulary is refused */
    char path[300];
    snprintf(path, sizeof path, "%s/a.ztok", dir);
    zaya_shard_writer *w = NULL;
    CHECK(zaya_shard_writer_open(path, (uint64_t)V, 0, ZAYA_SHARD_NO_EOS, 0, &w) == ZAYA_OK, "shard writer");
    CHECK(zaya_shard_writer_add(w, ids, 40) == ZAYA_OK && zaya_shard_writer_add(w, ids + 40, n - 40) == ZAYA_OK, "add");
    CHECK(zaya_shard_writer_finish(w) == ZAYA_OK, "finish: %s", zaya_error_message());
    int32_t *sids = NULL;
    size_t sn = 0;
    CHECK(zaya_eval_read_shard(path, V, 0, &sids, &sn) == ZAYA_OK && sn == n, "read shard: %s", zaya_error_message());
    zaya_eval_lm r2;
    CHECK(zaya_eval_lm_tokens(e, sids, (int64_t)sn, window, tb, &r2) == ZAYA_OK && r2.nll == r.nll, "shard eval");
    free(sids);
    CHECK(zaya_eval_read_shard(path, V, 30, &sids, &sn) == ZAYA_OK && sn == 30, "--max-tokens limit");
    free(sids);
    CHECK(zaya_eval_read_shard(path, V - 1, 0, &sids, &sn) == ZAYA_ERANGE && sids == NULL, "vocabulary check");
    zaya_infer_free(e);
    free(tb);
    free(ids);
}

static void write_text(const char *name, const char *text, char *path) {
    snprintf(path, 256, "%s/%s", dir, name);
    CHECK(zaya_write_file_atomic(path, text, strlen(text)) == ZAYA_OK, "write %s", path);
}

/* lm-eval-harness: context + continuation encoded whole, the tokens past encode(context) scored. */
static double ref_score(const char *ctx, const char *choice) {
    char whole[512];
    snprintf(whole, sizeof whole, "%s%s", ctx, choice);
    int32_t *ids = NULL, *cids = NULL;
    size_t n = 0, cap = 0, nctx = 0, ccap = 0;
    zaya_tokenizer_encode(tok, ctx, strlen(ctx), &cids, &nctx, &ccap);
    zaya_tokenizer_encode(tok, whole, strlen(whole), &ids, &n, &cap);
    free(cids);
    const int64_t V = model.cfg.vocab_size;
    float *lg = th_alloc((int64_t)n * V);
    CHECK(zaya_model_plan(&model, 1, (int64_t)n) == ZAYA_OK, "plan");
    zaya_model_logits(&model, ids, NULL, lg);
    double s = 0;
    for (size_t t = nctx; t < n; t++) s += zaya_log_prob(lg + (t - 1) * V, V, ids[t]);
    free(lg);
    free(ids);
    return s;
}

static void test_mc(void) {
    static const char *ctx[3] = {"the quick brown", "the cat", "a dog sleeps in"};
    static const char *ch[3][4] = {{" fox", " dog"}, {" sleeps", " runs away", " watches"}, {" the sun", " a", " the garden wall", " fox"}};
    static const int nc[3] = {2, 3, 4}, label[3] = {0, 2, 1};
    char path[256];
    write_text("ok.jsonl",
          "{\"context\": \"the quick brown\", \"choices\": [\" fox\", \" dog\"], \"label\": 0}\n"
          "\n"
          "{\"context\": \"the cat\", \"choices\": [\" sleeps\", \" runs away\", \" watches\"], \"label\": 2}\n"
          "{\"context\": \"a dog sleeps in\", \"choices\": [\" the sun\", \" a\", \" the garden wall\", \" fox\"], "
          "\"label\": 1}\n",
          path);
    zaya_mc_set set;
    CHECK(zaya_mc_load(path, ZAYA_MC_AUTO, tok, 24, &set, NULL) == ZAYA_OK, "load: %s", zaya_error_message());
    CHECK(set.n == 3 && set.items[1].line == 3 && set.items[2].nchoices == 4, "parsed items");
    zaya_infer *e = NULL;
    zaya_infer_opts o = {.max_seqs = 5, .max_len = 24, .gemv = 1}; /* 5 slots: items 0+1 together, then 2 */
    CHECK(zaya_infer_init(&e, &model, &o) == ZAYA_OK, "engine");
    double scores[9];
    zaya_mc_result r;
    CHECK(zaya_eval_mc(e, &set, scores, &r) == ZAYA_OK, "eval: %s", zaya_error_message());
    int k = 0, correct = 0, correct_norm = 0;
    double worst = 0;
    for (int i = 0; i < 3; i++) {
        int best = 0, bestn = 0;
        double bv = -INFINITY, bn = -INFINITY;
        for (int c = 0; c < nc[i]; c++, k++) {
            double ref = ref_score(ctx[i], ch[i][c]);
            worst = fmax(worst, fabs(scores[k] - ref) / fmax(1.0, fabs(ref)));
            if (ref > bv) bv = ref, best = c;
            if (ref / (double)strlen(ch[i][c]) > bn) bn = ref / (double)strlen(ch[i][c]), bestn = c;
        }
        correct += best == label[i];
        correct_norm += bestn == label[i];
    }
    CHECK_ERR("mc scores vs full forward", worst, 1e-5);
    CHECK(r.n == 3 && r.correct == correct && r.correct_norm == correct_norm, "acc %lld/%lld, want %d/%d",
          (long long)r.correct, (long long)r.correct_norm, correct, correct_norm);
    printf("mc: acc %.3f acc_norm %.3f, score error %.2e\n", r.acc, r.acc_norm, worst);
    zaya_mc_free(&set);
    zaya_infer_free(e);
}

static void expect_error(const char *name, const char *text, int64_t max_len, const char *needle) {
    char path[256], want[300];
    write_text(name, text, path);
    zaya_mc_set set = {(zaya_mc_item *)1, 99};
    zaya_status s = zaya_mc_load(path, ZAYA_MC_AUTO, tok, max_len, &set, NULL);
    snprintf(want, sizeof want, "%s", needle);
    CHECK(s != ZAYA_OK && strstr(zaya_error_message(), want), "%s: want error with '%s', got '%s'", name, want,
          s == ZAYA_OK ? "ok" : zaya_error_message());
    CHECK(set.items == NULL && set.n == 0, "%s: partial items returned", name);
}

static void test_mc_errors(void) {
    const char *good = "{\"context\": \"the cat\", \"choices\": [\" a\", \" b\"], \"label\": 1}\n";
    char text[1024];
    snprintf(text, sizeof text, "%s{\"context\": \"the cat\", \"choices\": [\" a\"", good);
    expect_error("malformed.jsonl", text, 24, "malformed.jsonl:2");
    snprintf(text, sizeof text, "%s%s{\"context\": \"x\", \"choices\": [\" a\", \" b\"], \"label\": 2}\n", good, good);
    expect_error("label.jsonl", text, 24, "label.jsonl:3: label 2 is out of range for 2 choices");
    snprintf(text, sizeof text, "%s{\"context\": \"x\", \"choices\": [\" a\"], \"label\": -1}\n", good);
    expect_error("negative.jsonl", text, 24, "negative.jsonl:2: label -1");
    snprintf(text, sizeof text, "{\"context\": \"%s\", \"choices\": [\" a\"], \"label\": 0}\n", corpus);
    expect_error("long.jsonl", text, 24, "long.jsonl:1: context + choice 0 is");
    expect_error("nolabel.jsonl", "{\"context\": \"x\", \"choices\": [\"a\"]}\n", 24, "nolabel.jsonl:1");
    expect_error("choices.jsonl", "{\"context\": \"x\", \"choices\": \"a\", \"label\": 0}\n", 24, "'choices' must be");
    expect_error("empty.jsonl", "{\"context\": \"\", \"choices\": [\"a\"], \"label\": 0}\n", 24, "'context' is empty");
    expect_error("nochoice.jsonl", "{\"context\": \"x\", \"choices\": [\"a\", 3], \"label\": 0}\n", 24,
                 "choice 1 is not a string");
    expect_error("blank.jsonl", "\n\n", 24, "no items");
}

/* Winogrande partial scoring: per-choice contexts (shared prefix "the", and none at all) against the
 * full forward; acc, acc_norm and their standard errors from those references. */
static void test_mc_partial(void) {
    static const char *ctx[3][2] = {{"the dog", "the cat"}, {"the dog", "a cat"}, {"the fox runs", "the fox sleeps"}};
    static const char *cont[3] = {" sleeps in the sun", " watches the fox", " away"};
    static const int label[3] = {0, 1, 0};
    char path[256];
    write_text("wino.jsonl",
               "{\"sentence\": \"the _ sleeps in the sun\", \"option1\": \"dog\", \"option2\": \"cat\", \"answer\": \"1\"}\n"
               "{\"sentence\": \"_ watches the fox\", \"option1\": \"the dog\", \"option2\": \"a cat\", \"answer\": 2}\n"
               "{\"sentence\": \"the fox _ away\", \"option1\": \"runs\", \"option2\": \"sleeps\", \"answer\": \"1\"}\n",
               path);
    zaya_mc_set set;
    zaya_mc_format f = ZAYA_MC_AUTO;
    CHECK(zaya_mc_load(path, ZAYA_MC_AUTO, tok, 24, &set, &f) == ZAYA_OK, "load: %s", zaya_error_message());
    CHECK(f == ZAYA_MC_WINOGRANDE && set.n == 3, "detected %s, %lld items", zaya_mc_format_name(f), (long long)set.n);
    CHECK(set.items[0].common >= 1 && set.items[0].common < set.items[0].nctx[0], "shared prefix %lld of %lld",
          (long long)set.items[0].common, (long long)set.items[0].nctx[0]);
    zaya_infer *e = NULL;
    zaya_infer_opts o = {.max_seqs = 4, .max_len = 24, .gemv = 1};
    CHECK(zaya_infer_init(&e, &model, &o) == ZAYA_OK, "engine");
    double scores[6];
    zaya_mc_result r;
    CHECK(zaya_eval_mc(e, &set, scores, &r) == ZAYA_OK, "eval: %s", zaya_error_message());
    double worst = 0;
    int correct = 0;
    for (int i = 0; i < 3; i++) {
        double ref[2];
        for (int c = 0; c < 2; c++) {
            ref[c] = ref_score(ctx[i][c], cont[i]);
            worst = fmax(worst, fabs(scores[2 * i + c] - ref[c]) / fmax(1.0, fabs(ref[c])));
        }
        correct += (ref[1] > ref[0]) == (label[i] == 1);
    }
    CHECK_ERR("winogrande scores vs full forward", worst, 1e-5);
    const double p = correct / 3.0;
    CHECK(r.correct == correct && r.correct_norm == correct, "acc %lld, acc_norm %lld, want %d", (long long)r.correct,
          (long long)r.correct_norm, correct);
    CHECK(fabs(r.acc_stderr - sqrt(p * (1 - p) / 2)) < 1e-12, "stderr %g want %g", r.acc_stderr, sqrt(p * (1 - p) / 2));
    printf("winogrande: acc %.3f +- %.3f, score error %.2e\n", r.acc, r.acc_stderr, worst);
    zaya_mc_free(&set);
    zaya_infer_free(e);
}

/* Full-forward logits of encode(ctx + cont); *nctx = tokens of encode(ctx). Caller frees ids and logits. */
static float *ref_logits(const char *ctx, const char *cont, int32_t **ids, size_t *n, size_t *nctx) {
    char whole[512];
    snprintf(whole, sizeof whole, "%s%s", ctx, cont);
    int32_t *cids = NULL;
    size_t cap = 0, ccap = 0;
    *ids = NULL;
    *n = *nctx = 0;
    zaya_tokenizer_encode(tok, ctx, strlen(ctx), &cids, nctx, &ccap);
    zaya_tokenizer_encode(tok, whole, strlen(whole), ids, n, &cap);
    free(cids);
    const int64_t V = model.cfg.vocab_size;
    float *lg = th_alloc((int64_t)*n * V);
    CHECK(zaya_model_plan(&model, 1, (int64_t)*n) == ZAYA_OK, "plan");
    zaya_model_logits(&model, *ids, NULL, lg);
    return lg;
}

/* lm-eval's is_greedy: every continuation token is the argmax (first on ties) of the logits before it. */
static int ref_greedy(const char *ctx, const char *cont) {
    int32_t *ids;
    size_t n, nctx;
    float *lg = ref_logits(ctx, cont, &ids, &n, &nctx);
    const int64_t V = model.cfg.vocab_size;
    int greedy = 1;
    for (size_t t = nctx; t < n; t++) {
        int64_t am = 0;
        for (int64_t v = 1; v < V; v++) am = lg[(t - 1) * V + v] > lg[(t - 1) * V + am] ? v : am;
        greedy = greedy && am == ids[t];
    }
    free(lg);
    free(ids);
    return greedy;
}

/* LAMBADA (lm-eval lambada_openai) on a hand-computed example: the context is the text up to its last
 * space and the target " " + the last word (a double space leaves one space at the end of the
 * context, which lm-eval's pair encoding moves into the continuation); acc counts items whose every
 * target token is the argmax, perplexity = exp(-(ll_1 + ll_2 + ll_3) / 3). One item is made greedy by
 * construction: its last word is the model's own argmax token after the context. */
static void test_lambada(void) {
    /* candidate contexts: pairs and triples of the corpus's words */
    static const char *words[] = {"the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "sleeps", "in", "sun",
                                  "and", "runs", "away", "a", "cat", "watches", "from", "garden", "wall", "then", "too"};
    enum { NW = sizeof words / sizeof words[0] };
    static char cands[NW * NW * 2][64];
    int ncand = 0;
    for (int i = 0; i < NW; i++)
        for (int j = 0; j < NW; j++) {
            snprintf(cands[ncand++], sizeof cands[0], "%s %s", words[i], words[j]);
            snprintf(cands[ncand++], sizeof cands[0], "the %s %s", words[i], words[j]);
        }
    char greedy_text[300] = "", word[64] = "";
    const char *greedy_ctx = NULL;
    for (int c = 0; c < ncand && !greedy_ctx; c++) {
        int32_t *ids = NULL;
        size_t n = 0, nctx, cap = 0;
        zaya_tokenizer_encode(tok, cands[c], strlen(cands[c]), &ids, &n, &cap);
        free(ids);
        if (n + 4 > 24) continue; /* the model's context */
        float *lg = ref_logits(cands[c], "", &ids, &n, &nctx);
        const int64_t V = model.cfg.vocab_size;
        int64_t am = 0;
        for (int64_t v = 1; v < V; v++) am = lg[(n - 1) * V + v] > lg[(n - 1) * V + am] ? v : am;
        free(lg);
        free(ids);
        size_t bl = 0; /* the argmax token must be " word" (letters) */
        const uint8_t *bytes = zaya_tokenizer_token_bytes(tok, (int32_t)am, &bl);
        int ok = bytes && bl >= 2 && bl < sizeof word && bytes[0] == ' ';
        for (size_t i = 1; ok && i < bl; i++) ok = bytes[i] >= 'a' && bytes[i] <= 'z';
        if (!ok) continue;
        snprintf(word, sizeof word, "%.*s", (int)bl, (const char *)bytes);
        if (ref_greedy(cands[c], word)) greedy_ctx = cands[c]; /* context + word encodes as context, argmax */
    }
    CHECK(greedy_ctx != NULL, "no context whose argmax token is a word (test model)");
    if (greedy_ctx) snprintf(greedy_text, sizeof greedy_text, "%s%s", greedy_ctx, word);
    char path[256], body[1024];
    snprintf(body, sizeof body,
             "{\"text\": \"the dog sleeps in the sun\"}\n{\"text\": \"the fox runs  away\"}\n{\"text\": \"%s\"}\n",
             greedy_ctx ? greedy_text : "the cat sleeps");
    write_text("lambada.jsonl", body, path);
    zaya_mc_docs docs;
    CHECK(zaya_mc_read(path, ZAYA_MC_AUTO, &docs) == ZAYA_OK, "read: %s", zaya_error_message());
    CHECK(docs.format == ZAYA_MC_LAMBADA && docs.n == 3, "detected %s, %lld items", zaya_mc_format_name(docs.format),
          (long long)docs.n);
    if (docs.n == 3) {
        CHECK(!strcmp(docs.docs[0].ctx[0], "the dog sleeps in the") && !strcmp(docs.docs[0].cont[0], " sun") &&
                  docs.docs[0].nchoices == 1 && docs.docs[0].label == 0 && docs.docs[0].norm_bytes[0] == 3,
              "item 1: '%s' + '%s'", docs.docs[0].ctx[0], docs.docs[0].cont[0]);
        CHECK(!strcmp(docs.docs[1].ctx[0], "the fox runs ") && !strcmp(docs.docs[1].cont[0], " away"),
              "item 2: '%s' + '%s'", docs.docs[1].ctx[0], docs.docs[1].cont[0]);
    }
    zaya_mc_docs_free(&docs);
    zaya_mc_set set;
    CHECK(zaya_mc_load(path, ZAYA_MC_LAMBADA, tok, 24, &set, NULL) == ZAYA_OK, "load: %s", zaya_error_message());
    zaya_infer *e = NULL;
    zaya_infer_opts o = {.max_seqs = 2, .max_len = 24, .gemv = 1};
    CHECK(zaya_infer_init(&e, &model, &o) == ZAYA_OK, "engine");
    zaya_mc_result r;
    CHECK(zaya_eval_mc(e, &set, NULL, &r) == ZAYA_OK, "eval: %s", zaya_error_message());
    /* by hand: the pairs as lm-eval encodes them, their log-likelihoods and greedy flags */
    const char *ctx[3] = {"the dog sleeps in the", "the fox runs", greedy_ctx ? greedy_ctx : "the cat"};
    const char *cont[3] = {" sun", "  away", greedy_ctx ? word : " sleeps"};
    double ll = 0;
    int greedy = 0;
    for (int i = 0; i < 3; i++) {
        ll += ref_score(ctx[i], cont[i]);
        greedy += ref_greedy(ctx[i], cont[i]);
    }
    CHECK(greedy_ctx == NULL || ref_greedy(ctx[2], cont[2]), "constructed item is greedy");
    const double ppl = exp(-ll / 3), acc = greedy / 3.0;
    CHECK(r.n == 3 && r.greedy == greedy && fabs(r.acc_greedy - acc) < 1e-12, "acc %lld/3, want %d/3",
          (long long)r.greedy, greedy);
    CHECK(fabs(r.ll_gold - ll) <= 1e-5 * fabs(ll) && fabs(r.ppl_gold - ppl) <= 1e-5 * ppl,
          "perplexity %.9g (ll %.9g), want %.9g (ll %.9g)", r.ppl_gold, r.ll_gold, ppl, ll);
    CHECK(fabs(r.acc_greedy_stderr - sqrt(acc * (1 - acc) / 2)) < 1e-12, "stderr %g", r.acc_greedy_stderr);
    printf("lambada: acc %.3f (%d/3 greedy), perplexity %.4f (ll %.5f)\n", r.acc_greedy, greedy, r.ppl_gold, r.ll_gold);
    zaya_mc_free(&set);
    zaya_infer_free(e);
    expect_error("lambada-nospace.jsonl", "{\"text\": \"the dog\"}\n{\"text\": \"dog\"}\n", 24,
                 "lambada-nospace.jsonl:2: field 'text' has no space");
}

/* The released layouts in tests/fixtures/eval parse into lm-eval-harness's contexts and choices. */
static zaya_mc_docs read_fixture(const char *name, zaya_mc_format want, int64_t n) {
    char path[512];
    const char *data = getenv("ZAYA_TEST_DATA");
    snprintf(path, sizeof path, "%s/fixtures/eval/%s", data ? data : "tests", name);
    zaya_mc_docs d = {0};
    CHECK(zaya_mc_read(path, ZAYA_MC_AUTO, &d) == ZAYA_OK, "%s: %s", name, zaya_error_message());
    CHECK(d.format == want && d.n == n, "%s: format %s, %lld items", name, zaya_mc_format_name(d.format), (long long)d.n);
    return d;
}

static void check_doc(const char *what, const zaya_mc_docs *d, int64_t i, int64_t line, int nch, int label, int c,
                      const char *ctx, const char *cont, int64_t nb) {
    if (i >= d->n) {
        CHECK(0, "%s: no item %lld", what, (long long)i);
        return;
    }
    const zaya_mc_doc *x = &d->docs[i];
    CHECK(x->line == line && x->nchoices == nch && x->label == label, "%s: line %lld, %d choices, label %d", what,
          (long long)x->line, x->nchoices, x->label);
    if (c >= x->nchoices) return;
    CHECK(strcmp(x->ctx[c], ctx) == 0, "%s: context\n  got  '%s'\n  want '%s'", what, x->ctx[c], ctx);
    CHECK(strcmp(x->cont[c], cont) == 0, "%s: continuation '%s', want '%s'", what, x->cont[c], cont);
    CHECK(x->norm_bytes[c] == nb, "%s: norm bytes %lld, want %lld", what, (long long)x->norm_bytes[c], (long long)nb);
}

static void test_formats(void) {
    zaya_mc_docs d = read_fixture("hellaswag.jsonl", ZAYA_MC_HELLASWAG, 3);
    check_doc("hellaswag 1", &d, 0, 1, 4, 3, 3,
              "Removing ice from car: Then, the man writes over the snow covering the window of a car, and a woman "
              "wearing winter clothes smiles. Then",
              " , the man continues removing the snow on his car.", 49);
    check_doc("hellaswag 2", &d, 1, 2, 4, 3, 0,
              "Baking cookies: A female chef in white uniform shows a stack of baking pans in a large kitchen "
              "presenting them. The pans",
              " contain egg yolks and baking soda.", 34);
    check_doc("hellaswag 3", &d, 2, 4, 4, 0, 0,
              "Home and Garden: How to grow a lemon tree. Pick a sunny spot.  Lemon trees need light.", " Water it daily.", 15);
    zaya_mc_docs_free(&d);
    d = read_fixture("arc_challenge.jsonl", ZAYA_MC_ARC, 3);
    check_doc("arc 2", &d, 1, 2, 3, 0, 1, "Question: Which tool is used to measure the mass of a rock?\nAnswer:", " ruler", 5);
    check_doc("arc 3", &d, 2, 3, 5, 1, 4, "Question: Which of these is a gas at room temperature?\nAnswer:", " ice", 3);
    zaya_mc_docs_free(&d);
    d = read_fixture("arc_easy_hf.json", ZAYA_MC_ARC, 2);
    check_doc("arc hf 2", &d, 1, 2, 4, 1, 1, "Question: Which part of a plant takes in water from the soil?\nAnswer:", " roots", 5);
    zaya_mc_docs_free(&d);
    d = read_fixture("piqa.jsonl", ZAYA_MC_PIQA, 3);
    check_doc("piqa 2", &d, 1, 2, 2, 1, 0, "Question: dresser\nAnswer:", " replace drawer with bobby pin ", 30);
    check_doc("piqa 3", &d, 2, 3, 2, 0, 1, "Question: To make a cup of tea,\nAnswer:", " pour hot water over a spoon in a mug.", 37);
    zaya_mc_docs_free(&d);
    d = read_fixture("piqa_hf.jsonl", ZAYA_MC_PIQA, 2);
    check_doc("piqa hf 2", &d, 1, 2, 2, 1, 1, "Question: How to keep bread fresh?\nAnswer:", " Store it in a sealed bag.", 25);
    zaya_mc_docs_free(&d);
    d = read_fixture("winogrande.jsonl", ZAYA_MC_WINOGRANDE, 3);
    check_doc("winogrande 1", &d, 0, 1, 2, 1, 0,
              "Ian volunteered to eat Dennis's menudo after already having a bowl because Ian", " despised eating intestine.", 26);
    check_doc("winogrande 2", &d, 1, 2, 2, 0, 1, "The trophy doesn't fit into the brown suitcase because the suitcase",
              " is too large.", 13);
    check_doc("winogrande 3", &d, 2, 3, 2, 0, 1, "The cat", " barked at the mailman all morning.", 34);
    zaya_mc_docs_free(&d);
    d = read_fixture("mmlu_hf.jsonl", ZAYA_MC_MMLU, 3);
    check_doc("mmlu 2", &d, 1, 2, 4, 3, 3,
              "The following are multiple choice questions (with answers) about anatomy.\n\nWhat is the embryological "
              "origin of the hyoid bone?\nA. The first pharyngeal arch\nB. The first and second pharyngeal arches\nC. The "
              "second pharyngeal arch\nD. The second and third pharyngeal arches\nAnswer:",
              " D", 1);
    check_doc("mmlu 3", &d, 2, 3, 4, 2, 0, "Which of these is a prime number?\nA. 4\nB. 6\nC. 7\nD. 9\nAnswer:", " A", 1);
    zaya_mc_docs_free(&d);
    d = read_fixture("high_school_physics_test.csv", ZAYA_MC_MMLU, 3);
    check_doc("mmlu csv 1", &d, 0, 1, 4, 2, 2,
              "The following are multiple choice questions (with answers) about high school physics.\n\nA 2 kg object "
              "moves at 3 m/s. What is its kinetic energy?\nA. 3 J\nB. 6 J\nC. 9 J\nD. 18 J\nAnswer:",
              " C", 1);
    check_doc("mmlu csv 3", &d, 2, 3, 4, 0, 1,
              "The following are multiple choice questions (with answers) about high school physics.\n\nA \"massless\" "
              "rope holds a weight,\nthen the rope is cut. The weight\nA. falls\nB. rises\nC. stays\nD. spins\nAnswer:",
              " B", 1);
    zaya_mc_docs_free(&d);
}

static void expect_read_error(const char *name, const char *text, zaya_mc_format f, const char *needle) {
    char path[256];
    write_text(name, text, path);
    zaya_mc_docs d = {(zaya_mc_doc *)1, 99, ZAYA_MC_AUTO};
    zaya_status s = zaya_mc_read(path, f, &d);
    CHECK(s != ZAYA_OK && strstr(zaya_error_message(), needle), "%s: want error with '%s', got '%s'", name, needle,
          s == ZAYA_OK ? "ok" : zaya_error_message());
    CHECK(d.docs == NULL && d.n == 0, "%s: partial items returned", name);
}

static void test_format_errors(void) {
    const char *wino = "{\"sentence\": \"a _ b\", \"option1\": \"x\", \"option2\": \"y\", \"answer\": \"1\"}\n";
    char text[1024];
    snprintf(text, sizeof text, "%s{\"sentence\": \"a _ b\", \"option1\": \"x\", \"answer\": \"1\"}\n", wino);
    expect_read_error("w1.jsonl", text, ZAYA_MC_AUTO, "w1.jsonl:2: missing field 'option2'");
    snprintf(text, sizeof text, "%s\n{\"sentence\": \"a b\", \"option1\": \"x\", \"option2\": \"y\", \"answer\": \"1\"}\n", wino);
    expect_read_error("w2.jsonl", text, ZAYA_MC_AUTO, "w2.jsonl:3: field 'sentence' has no '_' blank");
    expect_read_error("w3.jsonl", "{\"sentence\": \"a _\", \"option1\": \"x\", \"option2\": \"y\", \"answer\": \"\"}\n",
                      ZAYA_MC_AUTO, "w3.jsonl:1: field 'answer' is empty");
    expect_read_error("unknown.jsonl", "{\"foo\": 1, \"bar\": \"x\"}\n", ZAYA_MC_AUTO,
                      "unknown.jsonl:1: unknown multiple-choice layout (fields: foo, bar); known layouts: zaya {context, "
                      "choices, label}, hellaswag");
    expect_read_error("forced.jsonl", wino, ZAYA_MC_PIQA, "forced.jsonl:1: missing field 'goal'");
    expect_read_error("arc.jsonl",
                      "{\"question\": {\"stem\": \"q\", \"choices\": [{\"text\": \"a\", \"label\": \"A\"}, {\"text\": "
                      "\"b\"}]}, \"answerKey\": \"A\"}\n",
                      ZAYA_MC_AUTO, "arc.jsonl:1: missing field 'question.choices[1].label'");
    expect_read_error("arc2.jsonl",
                      "{\"question\": \"q\", \"choices\": {\"text\": [\"a\", \"b\"], \"label\": [\"A\", \"B\"]}, "
                      "\"answerKey\": \"C\"}\n",
                      ZAYA_MC_AUTO, "arc2.jsonl:1: answerKey 'C' is not one of the choice labels");
    expect_read_error("hs.jsonl", "{\"ctx_a\": \"a\", \"ctx_b\": \"b\", \"endings\": [\"x\", 2], \"label\": 0}\n",
                      ZAYA_MC_AUTO, "hs.jsonl:1: field 'endings[1]' must be a string");
    expect_read_error("hs2.jsonl", "{\"ctx_a\": \"a\", \"ctx_b\": \"b\", \"endings\": [\"x\", \"y\"], \"label\": 4}\n",
                      ZAYA_MC_AUTO, "hs2.jsonl:1: label 4 is out of range for 2 choices");
    const char *piqa = "{\"goal\": \"g\", \"sol1\": \"a\", \"sol2\": \"b\"}\n";
    expect_read_error("p1.jsonl", piqa, ZAYA_MC_AUTO, "p1.jsonl:1: missing field 'label' and no labels file");
    char lp[256];
    write_text("p2-labels.lst", "0\n1\n", lp);
    expect_read_error("p2.jsonl", piqa, ZAYA_MC_AUTO, "p2-labels.lst:2: more labels than the 1 records");
    write_text("p3-labels.lst", "2\n", lp);
    expect_read_error("p3.jsonl", piqa, ZAYA_MC_AUTO, "p3-labels.lst:1: label '2' is not 0 or 1");
    expect_read_error("m_test.csv", "q,a,b,c,d,A\nq,a,b,7x\n", ZAYA_MC_AUTO, "m_test.csv:2: answer '7x' is neither");
    expect_read_error("m2_test.csv", "q,a,b,c,d,A\n\"q,a,b,c,d,A\n", ZAYA_MC_AUTO, "m2_test.csv:2: unterminated quoted");
    expect_read_error("m3_test.csv", "q,a\n", ZAYA_MC_AUTO, "m3_test.csv:1: 2 CSV fields");
    expect_read_error("mm.jsonl", "{\"question\": \"q\", \"choices\": [\"a\", \"b\"], \"answer\": \"E\"}\n", ZAYA_MC_AUTO,
                      "mm.jsonl:1: label 4 is out of range for 2 choices");
    expect_read_error("arr.json", "[{\"goal\": \"g\", \"sol1\": \"a\", \"sol2\": \"b\", \"label\": 0}, {\"goal\": \"g\"}]",
                      ZAYA_MC_AUTO, "arr.json: item 2: missing field 'sol1'");
    zaya_mc_format f;
    CHECK(zaya_mc_format_parse("arc", &f) == ZAYA_OK && f == ZAYA_MC_ARC, "format arc");
    CHECK(zaya_mc_format_parse("squad", &f) != ZAYA_OK &&
              strstr(zaya_error_message(), "unknown task format 'squad' (known: auto, zaya, hellaswag, arc, piqa, winogrande, mmlu, lambada)"),
          "unknown format: %s", zaya_error_message());
}

int main(void) {
    setup();
    test_lm();
    test_mc();
    test_mc_errors();
    test_mc_partial();
    test_lambada();
    test_formats();
    test_format_errors();
    zaya_model_free(&model);
    zaya_tokenizer_free(tok);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return th_finish("test_eval");
}
