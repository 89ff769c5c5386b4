/* Study tables: mean and spread of the final validation loss over seeds per variant, the difference to
 * the study's first variant and whether it exceeds the seed spread; text, JSON, CSV and a PNG of the
 * validation-loss curves of every run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "study/internal.h"
#include "zaya/fs.h"
#include "zaya/log.h"
#include "zaya/model.h"
#include "zaya/plot.h"

typedef struct variant_stats {
    int n;
    double mean, sd, min, max, seconds, tokens_per_s;
} variant_stats;

static variant_stats stats_of(const zaya_study_run_rec *r, int n) {
    variant_stats s = {n, 0, 0, INFINITY, -INFINITY, 0, 0};
    for (int i = 0; i < n; i++) {
        s.mean += r[i].final_val_loss;
        s.seconds += r[i].seconds;
        s.tokens_per_s += r[i].tokens_per_s;
        if (r[i].final_val_loss < s.min) s.min = r[i].final_val_loss;
        if (r[i].final_val_loss > s.max) s.max = r[i].final_val_loss;
    }
    s.mean /= n;
    s.seconds /= n;
    s.tokens_per_s /= n;
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (r[i].final_val_loss - s.mean) * (r[i].final_val_loss - s.mean);
    s.sd = n > 1 ? sqrt(ss / (n - 1)) : 0;
    return s;
}

/* A difference is called only when it exceeds the sum of the two seed standard deviations. */
static const char *verdict(double delta, double spread) {
    if (fabs(delta) <= spread) return "within seed spread";
    return delta < 0 ? "lower" : "higher";
}

static void print_table(FILE *f, const zaya_study_sel *s, int seeds, const variant_stats *vs) {
    const zaya_study_def *d = s->def;
    const int64_t tok = s->steps * ZAYA_STUDY_SEQ_LEN * ZAYA_STUDY_BATCH;
    fprintf(f, "study %s: %s\n", d->name, d->question);
    fprintf(f, "base %s + %s; %lld steps x %d tokens = %lld tokens per run; seeds 1..%d; final validation loss\n",
            d->base_preset, d->base_overrides, (long long)s->steps, ZAYA_STUDY_SEQ_LEN * ZAYA_STUDY_BATCH,
            (long long)tok, seeds);
    fprintf(f, "%-13s %12s %12s %9s %8s %9s %9s %10s  %-20s %8s\n", "variant", "non-emb par", "active par", "val mean",
            "sd", "min", "max", "delta", "verdict", "s/run");
    for (int v = 0; v < s->nvariants; v++) {
        zaya_param_counts pc = zaya_model_count_params(&s->cfg[v]);
        double delta = vs[v].mean - vs[0].mean, spread = vs[v].sd + vs[0].sd;
        char dl[32] = "", vd[64] = "baseline";
        if (v > 0) {
            snprintf(dl, sizeof dl, "%+.4f", delta);
            snprintf(vd, sizeof vd, "%s", verdict(delta, spread));
        }
        fprintf(f, "%-13s %12lld %12lld %9.4f %8.4f %9.4f %9.4f %10s  %-20s %8.1f\n", s->variant[v]->name,
                (long long)pc.non_embedding, (long long)pc.active_non_embedding, vs[v].mean, vs[v].sd, vs[v].min,
                vs[v].max, dl, vd, vs[v].seconds);
    }
    fprintf(f, "delta = mean - mean of '%s'; a difference is called (lower / higher) only when |delta| exceeds the "
               "sum of the two variants' seed standard deviations, else it is within the seed spread.\n",
            s->variant[0]->name);
}

static cJSON *table_json(const zaya_study_sel *s, int seeds, const variant_stats *vs) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "study", s->def->name);
    cJSON_AddStringToObject(j, "question", s->def->question);
    cJSON_AddStringToObject(j, "base_preset", s->def->base_preset);
    cJSON *bo = cJSON_Parse(s->def->base_overrides);
    if (bo) cJSON_AddItemToObject(j, "base_overrides", bo);
    cJSON_AddNumberToObject(j, "steps", (double)s->steps);
    cJSON_AddNumberToObject(j, "tokens_per_run", (double)(s->steps * ZAYA_STUDY_SEQ_LEN * ZAYA_STUDY_BATCH));
    cJSON_AddNumberToObject(j, "seeds", seeds);
    cJSON_AddStringToObject(j, "rule", "a difference is called only when |delta| > sd(variant) + sd(baseline)");
    cJSON *arr = cJSON_AddArrayToObject(j, "variants");
    for (int v = 0; v < s->nvariants; v++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, o);
        zaya_param_counts pc = zaya_model_count_params(&s->cfg[v]);
        double delta = vs[v].mean - vs[0].mean, spread = vs[v].sd + vs[0].sd;
        cJSON_AddStringToObject(o, "variant", s->variant[v]->name);
        cJSON *ov = cJSON_Parse(s->variant[v]->overrides);
        if (ov) cJSON_AddItemToObject(o, "overrides", ov);
        cJSON_AddStringToObject(o, "optimizer", s->variant[v]->optimizer_muon ? "muon" : "adamw");
        cJSON_AddNumberToObject(o, "non_embedding_params", (double)pc.non_embedding);
        cJSON_AddNumberToObject(o, "active_non_embedding_params", (double)pc.active_non_embedding);
        cJSON_AddNumberToObject(o, "mean_val_loss", vs[v].mean);
        cJSON_AddNumberToObject(o, "sd_val_loss", vs[v].sd);
        cJSON_AddNumberToObject(o, "min_val_loss", vs[v].min);
        cJSON_AddNumberToObject(o, "max_val_loss", vs[v].max);
        cJSON_AddNumberToObject(o, "delta", v ? delta : 0.0);
        cJSON_AddStringToObject(o, "verdict", v ? verdict(delta, spread) : "baseline");
        cJSON_AddNumberToObject(o, "seconds_per_run", vs[v].seconds);
        cJSON *runs = cJSON_AddArrayToObject(o, "runs");
        for (int k = 0; k < seeds; k++) {
            const zaya_study_run_rec *r = &s->runs[v][k];
            cJSON *rj = cJSON_CreateObject();
            cJSON_AddItemToArray(runs, rj);
            cJSON_AddNumberToObject(rj, "seed", r->seed);
            cJSON_AddNumberToObject(rj, "first_val_loss", r->first_val_loss);
            cJSON_AddNumberToObject(rj, "final_val_loss", r->final_val_loss);
            cJSON_AddNumberToObject(rj, "seconds", r->seconds);
            cJSON_AddNumberToObject(rj, "tokens", (double)r->tokens);
            cJSON *c = cJSON_AddArrayToObject(rj, "val_curve");
            for (int i = 0; i < r->ncurve; i++) {
                cJSON *pt = cJSON_CreateArray();
                cJSON_AddItemToArray(pt, cJSON_CreateNumber(r->curve_step[i]));
                cJSON_AddItemToArray(pt, cJSON_CreateNumber(r->curve_loss[i]));
                cJSON_AddItemToArray(c, pt);
            }
        }
    }
    return j;
}

static const char csv_header[] =
    "study,variant,optimizer,seeds,steps,tokens_per_run,non_embedding_params,active_non_embedding_params,"
    "mean_val_loss,sd_val_loss,min_val_loss,max_val_loss,delta,verdict,seconds_per_run\n";

static void csv_rows(FILE *f, const zaya_study_sel *s, int seeds, const variant_stats *vs) {
    for (int v = 0; v < s->nvariants; v++) {
        zaya_param_counts pc = zaya_model_count_params(&s->cfg[v]);
        double delta = vs[v].mean - vs[0].mean, spread = vs[v].sd + vs[0].sd;
        fprintf(f, "%s,%s,%s,%d,%lld,%lld,%lld,%lld,%.6f,%.6f,%.6f,%.6f,%.6f,%s,%.2f\n", s->def->name,
                s->variant[v]->name, s->variant[v]->optimizer_muon ? "muon" : "adamw", seeds, (long long)s->steps,
                (long long)(s->steps * ZAYA_STUDY_SEQ_LEN * ZAYA_STUDY_BATCH), (long long)pc.non_embedding,
                (long long)pc.active_non_embedding, vs[v].mean, vs[v].sd, vs[v].min, vs[v].max, v ? delta : 0.0,
                v ? verdict(delta, spread) : "baseline", vs[v].seconds);
    }
}

static zaya_status write_text_file(const char *path, void (*fill)(FILE *, const void *), const void *ctx) {
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return zaya_error_set(ZAYA_ENOMEM, "table buffer");
    fill(m, ctx);
    fclose(m);
    zaya_status s = zaya_write_file_atomic(path, buf, len);
    free(buf);
    return s;
}

typedef struct table_ctx {
    const zaya_study_sel *s;
    int seeds;
    const variant_stats *vs;
} table_ctx;

static void fill_text(FILE *f, const void *p) {
    const table_ctx *c = p;
    print_table(f, c->s, c->seeds, c->vs);
}

static void fill_csv(FILE *f, const void *p) {
    const table_ctx *c = p;
    fputs(csv_header, f);
    csv_rows(f, c->s, c->seeds, c->vs);
}

static void plot_curves(const char *dir, const zaya_study_sel *s, int seeds) {
    zaya_plot_series ser[ZAYA_STUDY_MAX_VARIANTS * ZAYA_STUDY_MAX_SEEDS];
    char titles[ZAYA_STUDY_MAX_VARIANTS * ZAYA_STUDY_MAX_SEEDS][80];
    int n = 0;
    for (int v = 0; v < s->nvariants; v++)
        for (int k = 0; k < seeds; k++) {
            const zaya_study_run_rec *r = &s->runs[v][k];
            snprintf(titles[n], sizeof titles[n], "%s seed %d", s->variant[v]->name, r->seed);
            ser[n] = (zaya_plot_series){titles[n], r->curve_step, r->curve_loss, r->ncurve};
            n++;
        }
    char title[160], path[4096];
    snprintf(title, sizeof title, "study %s: validation loss (%d seeds per variant)", s->def->name, seeds);
    zaya_plot_opts po = {title, "step", "validation loss", 0, 0, 1};
    if (zaya_path_join(path, sizeof path, dir, "val_loss.png") != ZAYA_OK) return;
    if (zaya_plot_lines(path, &po, ser, n) != ZAYA_OK) ZAYA_WARN("plot %s: %s", path, zaya_error_message());
}

zaya_status zaya_study_write_tables(const zaya_study_opts *o, const zaya_study_plan *plan, FILE *text) {
    cJSON *all = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(all, "studies");
    char *csv = NULL;
    size_t csv_len = 0;
    FILE *cf = open_memstream(&csv, &csv_len);
    if (!cf) {
        cJSON_Delete(all);
        return zaya_error_set(ZAYA_ENOMEM, "table buffer");
    }
    fputs(csv_header, cf);
    zaya_status st = ZAYA_OK;
    for (int i = 0; st == ZAYA_OK && i < plan->nstudies; i++) {
        const zaya_study_sel *s = &plan->s[i];
        variant_stats vs[ZAYA_STUDY_MAX_VARIANTS];
        for (int v = 0; v < s->nvariants; v++) vs[v] = stats_of(s->runs[v], o->seeds);
        if (text) {
            fputc('\n', text);
            print_table(text, s, o->seeds, vs);
        }
        char dir[4096], path[4096];
        snprintf(dir, sizeof dir, "%s/%s", o->out_dir, s->def->name);
        table_ctx ctx = {s, o->seeds, vs};
        st = zaya_path_join(path, sizeof path, dir, "table.txt");
        if (st == ZAYA_OK) st = write_text_file(path, fill_text, &ctx);
        if (st == ZAYA_OK) st = zaya_path_join(path, sizeof path, dir, "table.csv");
        if (st == ZAYA_OK) st = write_text_file(path, fill_csv, &ctx);
        cJSON *tj = table_json(s, o->seeds, vs);
        if (st == ZAYA_OK) st = zaya_path_join(path, sizeof path, dir, "table.json");
        if (st == ZAYA_OK) st = zaya_json_write_file(path, tj, 1);
        cJSON_AddItemToArray(arr, tj);
        csv_rows(cf, s, o->seeds, vs);
        plot_curves(dir, s, o->seeds);
    }
    fclose(cf);
    char path[4096];
    if (st == ZAYA_OK) st = zaya_path_join(path, sizeof path, o->out_dir, "study.json");
    if (st == ZAYA_OK) st = zaya_json_write_file(path, all, 1);
    if (st == ZAYA_OK) st = zaya_path_join(path, sizeof path, o->out_dir, "study.csv");
    if (st == ZAYA_OK) st = zaya_write_file_atomic(path, csv, csv_len);
    if (st == ZAYA_OK && text)
        fprintf(text, "\ntables in %s (study.json, study.csv, <study>/table.{txt,json,csv}, <study>/val_loss.png)\n",
                o->out_dir);
    free(csv);
    cJSON_Delete(all);
    return st;
}
