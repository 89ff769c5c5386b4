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

static double ref_score(const char *ctx, const char *choice) {
    int32_t *ids = NULL;
    size_t n = 0, cap = 0;
    zaya_tokenizer_encode(tok, ctx, strlen(ctx), &ids, &n, &cap);
    size_t nctx = n;
    zaya_tokenizer_encode(tok, choice, strlen(choice), &ids, &n, &cap);
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

int main(void) {
    setup();
    test_lm();
    test_mc();
    test_mc_errors();
    zaya_model_free(&model);
    zaya_tokenizer_free(tok);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return th_finish("test_eval");
}
