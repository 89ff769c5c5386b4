/* zaya study: selection and validation of the variants, one trainer run per (variant, seed), resume. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "study/internal.h"
#include "zaya/config.h"
#include "zaya/dist.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/log.h"
#include "zaya/progress.h"
#include "zaya/shard.h"
#include "zaya/timer.h"
#include "zaya/train.h"

void zaya_study_opts_default(zaya_study_opts *o) {
    memset(o, 0, sizeof *o);
    o->out_dir = "out/study";
    o->seeds = 2;
}

static zaya_status usage(zaya_study_result *res, const char *fmt, const char *a, const char *b) {
    res->usage_error = 1;
    return zaya_error_set(ZAYA_EINVAL, fmt, a, b);
}

/* Splits a comma list into trimmed, non-empty names (at most max). */
static int split_names(const char *list, char names[][64], int max) {
    int n = 0;
    const char *p = list;
    while (p && *p && n < max) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        while (len && (*p == ' ')) p++, len--;
        while (len && p[len - 1] == ' ') len--;
        if (len) {
            snprintf(names[n], 64, "%.*s", (int)(len < 63 ? len : 63), p);
            n++;
        }
        p = e ? e + 1 : NULL;
    }
    return n;
}

static void names_of(const zaya_study_def *d, char *buf, size_t cap) {
    buf[0] = '\0';
    for (int v = 0; v < d->nvariants; v++)
        snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", v ? ", " : "", d->variants[v].name);
}

static zaya_status select_studies(const zaya_study_opts *o, zaya_study_plan *plan, zaya_study_result *res) {
    char names[ZAYA_STUDY_MAX_SELECTED][64], keep[ZAYA_STUDY_MAX_SELECTED * ZAYA_STUDY_MAX_VARIANTS][64];
    int n = split_names(o->studies, names, ZAYA_STUDY_MAX_SELECTED), nkeep = 0;
    if (n == 0) return usage(res, "no study given (--study NAME; `zaya study --list` shows them)%s%s", "", "");
    if (o->variants) nkeep = split_names(o->variants, keep, ZAYA_STUDY_MAX_SELECTED * ZAYA_STUDY_MAX_VARIANTS);
    int nall;
    const zaya_study_def *all = zaya_study_builtin(&nall);
    char known[256] = "";
    for (int i = 0; i < nall; i++) snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", all[i].name);
    plan->nstudies = 0;
    for (int i = 0; i < n; i++) {
        const zaya_study_def *d = zaya_study_find(names[i]);
        if (!d) return usage(res, "unknown study '%s' (studies: %s)", names[i], known);
        for (int j = 0; j < plan->nstudies; j++)
            if (plan->s[j].def == d) return usage(res, "study '%s' given twice%s", names[i], "");
        zaya_study_sel *s = &plan->s[plan->nstudies++];
        memset(s, 0, sizeof *s);
        s->def = d;
        for (int v = 0; v < d->nvariants; v++) {
            int take = nkeep == 0;
            for (int k = 0; k < nkeep && !take; k++) take = !strcmp(keep[k], d->variants[v].name);
            if (take) s->variant[s->nvariants++] = &d->variants[v];
        }
    }
    for (int k = 0; k < nkeep; k++) {
        int found = 0;
        for (int j = 0; j < plan->nstudies && !found; j++)
            for (int v = 0; v < plan->s[j].nvariants; v++) found |= !strcmp(plan->s[j].variant[v]->name, keep[k]);
        if (!found) {
            char avail[512] = "";
            for (int j = 0; j < plan->nstudies; j++) {
                char vn[256];
                names_of(plan->s[j].def, vn, sizeof vn);
                snprintf(avail + strlen(avail), sizeof avail - strlen(avail), "%s%s: %s", j ? "; " : "",
                         plan->s[j].def->name, vn);
            }
            return usage(res, "unknown variant '%s' (variants of the selected studies: %s)", keep[k], avail);
        }
    }
    for (int j = 0; j < plan->nstudies; j++)
        if (plan->s[j].nvariants < 2)
            return usage(res, "study '%s' keeps %s variant after --variants; a comparison needs at least 2",
                         plan->s[j].def->name, plan->s[j].nvariants ? "one" : "no");
    return ZAYA_OK;
}

/* Applies a JSON object of overrides onto obj (replacing keys). */
static zaya_status apply_overrides(cJSON *obj, const char *overrides, const char *what) {
    cJSON *ov = NULL;
    ZAYA_TRY(zaya_json_parse(overrides, what, &ov));
    if (!cJSON_IsObject(ov)) {
        cJSON_Delete(ov);
        return zaya_error_set(ZAYA_EINVAL, "%s: overrides must be a JSON object", what);
    }
    for (cJSON *it = ov->child; it; it = it->next) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, it->string);
        cJSON_AddItemToObject(obj, it->string, cJSON_Duplicate(it, 1));
    }
    cJSON_Delete(ov);
    return ZAYA_OK;
}

/* The config of one variant: preset -> base overrides -> variant overrides, read back by the model's
 * config reader. Every override key must survive the round trip (a key the reader does not know would
 * be silently ignored, and the run would not be the variant it claims to be). */
static zaya_status variant_config(const zaya_study_def *d, const zaya_study_variant *v, cJSON **out, zaya_config *cfg) {
    zaya_config base;
    ZAYA_TRY(zaya_config_preset(d->base_preset, &base));
    cJSON *j = zaya_config_to_json(&base);
    if (!j) return zaya_error_set(ZAYA_ENOMEM, "config JSON");
    zaya_status s = apply_overrides(j, d->base_overrides, "study base");
    if (s == ZAYA_OK) s = apply_overrides(j, v->overrides, "variant overrides");
    if (s == ZAYA_OK) s = zaya_config_from_json(j, cfg);
    if (s != ZAYA_OK) {
        cJSON_Delete(j);
        return s;
    }
    cJSON *back = zaya_config_to_json(cfg);
    cJSON *ov = NULL;
    s = zaya_json_parse(v->overrides, "variant overrides", &ov);
    for (cJSON *it = ov ? ov->child : NULL; s == ZAYA_OK && it; it = it->next) {
        const cJSON *got = cJSON_GetObjectItemCaseSensitive(back, it->string);
        if (!got)
            s = zaya_error_set(ZAYA_EUNSUPPORTED,
                               "key '%s' is not read by this build's config reader (zaya_config_from_json would ignore "
                               "it, so the run would not be this variant)",
                               it->string);
        else if (!cJSON_Compare(got, it, 1)) {
            char *a = cJSON_PrintUnformatted(it), *b = cJSON_PrintUnformatted(got);
            s = zaya_error_set(ZAYA_EINVAL, "key '%s': the config reader turned %s into %s", it->string, a ? a : "?",
                               b ? b : "?");
            free(a);
            free(b);
        }
    }
    cJSON_Delete(ov);
    cJSON_Delete(back);
    if (s != ZAYA_OK) {
        cJSON_Delete(j);
        return s;
    }
    *out = j;
    return ZAYA_OK;
}

/* Source names of a data directory: the NAME of every NAME-train-*.ztok shard. */
zaya_status zaya_study_check_variant(const zaya_study_def *d, const zaya_study_variant *v) {
    cJSON *j = NULL;
    zaya_config cfg;
    zaya_status s = variant_config(d, v, &j, &cfg);
    cJSON_Delete(j);
    return s;
}

static zaya_status data_sources(const char *dir, char names[][64], int max, int *n) {
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return zaya_error_set(ZAYA_EIO, "cannot open data directory '%s'", dir);
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *m = strstr(e->d_name, "-train-");
        size_t len = strlen(e->d_name), el = strlen(ZAYA_SHARD_EXT);
        if (!m || m == e->d_name || len < el || strcmp(e->d_name + len - el, ZAYA_SHARD_EXT)) continue;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(m - e->d_name < 63 ? m - e->d_name : 63), e->d_name);
        int dup = 0;
        for (int i = 0; i < *n; i++) dup |= !strcmp(names[i], name);
        if (!dup && *n < max) snprintf(names[(*n)++], 64, "%s", name);
    }
    closedir(d);
    if (*n == 0) return zaya_error_set(ZAYA_EINVAL, "data directory '%s' holds no NAME-train-*%s shards", dir, ZAYA_SHARD_EXT);
    /* readdir order is the file system's: sort for a deterministic run file */
    for (int i = 1; i < *n; i++)
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char t[64];
            memcpy(t, names[j], 64);
            memcpy(names[j], names[j - 1], 64);
            memcpy(names[j - 1], t, 64);
        }
    return ZAYA_OK;
}

/* One phase, constant batch, linear warm-up over the first 10% then cosine to a tenth of the peak. */
static cJSON *run_file(const char *data_dir, char src[][64], int nsrc, int64_t steps, int seed) {
    const int64_t tokens = steps * ZAYA_STUDY_SEQ_LEN * ZAYA_STUDY_BATCH;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", "study");
    cJSON_AddNumberToObject(j, "seed", seed);
    cJSON_AddStringToObject(j, "data_dir", data_dir);
    cJSON_AddNumberToObject(j, "seq_multiple", 8);
    cJSON_AddNumberToObject(j, "batch_multiple", 1);
    cJSON *ph = cJSON_AddArrayToObject(j, "phases");
    cJSON *p = cJSON_CreateObject();
    cJSON_AddItemToArray(ph, p);
    cJSON_AddStringToObject(p, "name", "study");
    cJSON_AddNumberToObject(p, "tokens", (double)tokens);
    cJSON *s = cJSON_AddObjectToObject(p, "sources");
    for (int i = 0; i < nsrc; i++) cJSON_AddNumberToObject(s, src[i], 1.0);
    cJSON_AddNumberToObject(p, "seq_len", ZAYA_STUDY_SEQ_LEN);
    cJSON_AddNumberToObject(p, "batch", ZAYA_STUDY_BATCH);
    cJSON_AddNumberToObject(p, "rope_theta", 10000);
    cJSON *lr = cJSON_AddObjectToObject(p, "lr");
    cJSON_AddNumberToObject(lr, "peak", 0.004);
    cJSON_AddNumberToObject(lr, "final", 0.0004);
    cJSON_AddNumberToObject(lr, "warmup_tokens", (double)(tokens / 10));
    cJSON_AddStringToObject(lr, "decay", "cosine");
    return j;
}

/* Validation-loss curve of a run from its metrics.jsonl (the last record of each step wins: a resumed
 * run appends). */
static zaya_status read_curve(const char *run_dir, zaya_study_run_rec *r) {
    char path[4096];
    ZAYA_TRY(zaya_path_join(path, sizeof path, run_dir, "metrics.jsonl"));
    FILE *f = fopen(path, "r");
    if (!f) return zaya_error_set(ZAYA_EIO, "cannot read '%s'", path);
    char line[1 << 16];
    r->ncurve = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strstr(line, "\"val_loss\"")) continue;
        cJSON *j = cJSON_Parse(line);
        const cJSON *st = j ? cJSON_GetObjectItemCaseSensitive(j, "step") : NULL;
        const cJSON *vl = j ? cJSON_GetObjectItemCaseSensitive(j, "val_loss") : NULL;
        if (cJSON_IsNumber(st) && cJSON_IsNumber(vl)) {
            int k = 0;
            while (k < r->ncurve && r->curve_step[k] < st->valuedouble) k++;
            if (k < r->ncurve && r->curve_step[k] == st->valuedouble) {
                r->curve_loss[k] = vl->valuedouble;
            } else if (r->ncurve < ZAYA_STUDY_MAX_CURVE) {
                memmove(r->curve_step + k + 1, r->curve_step + k, sizeof(double) * (size_t)(r->ncurve - k));
                memmove(r->curve_loss + k + 1, r->curve_loss + k, sizeof(double) * (size_t)(r->ncurve - k));
                r->curve_step[k] = st->valuedouble;
                r->curve_loss[k] = vl->valuedouble;
                r->ncurve++;
            }
        }
        cJSON_Delete(j);
    }
    fclose(f);
    return ZAYA_OK;
}

static cJSON *settings_json(const zaya_study_sel *s, const zaya_study_variant *v, const cJSON *config, int seed,
                            int64_t steps, const char *data_dir) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "study", s->def->name);
    cJSON_AddStringToObject(j, "variant", v->name);
    cJSON_AddNumberToObject(j, "seed", seed);
    cJSON_AddNumberToObject(j, "steps", (double)steps);
    cJSON_AddNumberToObject(j, "seq_len", ZAYA_STUDY_SEQ_LEN);
    cJSON_AddNumberToObject(j, "batch", ZAYA_STUDY_BATCH);
    cJSON_AddStringToObject(j, "optimizer", v->optimizer_muon ? "muon" : "adamw");
    cJSON_AddStringToObject(j, "data_dir", data_dir);
    cJSON_AddItemToObject(j, "config", cJSON_Duplicate(config, 1));
    return j;
}

/* The first top-level key whose value differs (for the error message). */
static const char *first_difference(const cJSON *a, const cJSON *b) {
    for (const cJSON *it = a->child; it; it = it->next) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(b, it->string);
        if (!o || !cJSON_Compare(it, o, 1)) return it->string;
    }
    for (const cJSON *it = b->child; it; it = it->next)
        if (!cJSON_GetObjectItemCaseSensitive(a, it->string)) return it->string;
    return "?";
}

/* Saved settings of an earlier invocation in the run directory must be the requested ones. */
static zaya_status check_saved(const char *path, const cJSON *want, const char *run_dir, cJSON **saved_out) {
    *saved_out = NULL;
    if (access(path, F_OK) != 0) return ZAYA_OK;
    cJSON *saved = NULL;
    ZAYA_TRY(zaya_json_load_file(path, &saved));
    const cJSON *set = cJSON_GetObjectItemCaseSensitive(saved, "settings");
    if (!set) set = saved;
    if (!cJSON_Compare(set, want, 1)) {
        char key[128];
        snprintf(key, sizeof key, "%s", first_difference(set, want));
        cJSON_Delete(saved);
        return zaya_error_set(ZAYA_EINVAL,
                              "run directory '%s' holds a run with other settings (key '%s' differs): use another -o "
                              "or remove that directory",
                              run_dir, key);
    }
    *saved_out = saved;
    return ZAYA_OK;
}

static zaya_status load_finished(const cJSON *saved, zaya_study_run_rec *r) {
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(saved, "result");
    if (!res) return zaya_error_set(ZAYA_EFORMAT, "study_run.json has no 'result'");
    ZAYA_TRY(zaya_json_get_f64(res, "final_val_loss", &r->final_val_loss, 1));
    ZAYA_TRY(zaya_json_get_f64(res, "first_val_loss", &r->first_val_loss, 1));
    ZAYA_TRY(zaya_json_get_f64(res, "seconds", &r->seconds, 1));
    ZAYA_TRY(zaya_json_get_f64(res, "tokens_per_s", &r->tokens_per_s, 1));
    ZAYA_TRY(zaya_json_get_i64(res, "tokens", &r->tokens, 1));
    return ZAYA_OK;
}

static zaya_status write_finished(const char *path, const cJSON *want, const zaya_study_run_rec *r) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "settings", cJSON_Duplicate(want, 1));
    cJSON *res = cJSON_AddObjectToObject(j, "result");
    cJSON_AddNumberToObject(res, "final_val_loss", r->final_val_loss);
    cJSON_AddNumberToObject(res, "first_val_loss", r->first_val_loss);
    cJSON_AddNumberToObject(res, "seconds", r->seconds);
    cJSON_AddNumberToObject(res, "tokens_per_s", r->tokens_per_s);
    cJSON_AddNumberToObject(res, "tokens", (double)r->tokens);
    zaya_status s = zaya_json_write_file(path, j, 1);
    cJSON_Delete(j);
    return s;
}

/* Runs (or resumes, or skips) one (variant, seed). */
static zaya_status one_run(const zaya_study_opts *o, const zaya_study_sel *s, int vi, int seed, int64_t steps,
                           const char *data_dir, char src[][64], int nsrc, zaya_study_run_rec *r, int *skipped,
                           int *preempted) {
    const zaya_study_variant *v = s->variant[vi];
    char dir[4096], path[4096], cfg_path[4096], run_path[4096];
    snprintf(dir, sizeof dir, "%s/%s/%s/seed%d", o->out_dir, s->def->name, v->name, seed);
    ZAYA_TRY(zaya_mkdir_p(dir));
    cJSON *want = settings_json(s, v, s->config[vi], seed, steps, data_dir);
    cJSON *saved = NULL;
    zaya_status st = zaya_path_join(path, sizeof path, dir, "study_run.json");
    if (st == ZAYA_OK) st = check_saved(path, want, dir, &saved);
    if (st == ZAYA_OK && saved) { /* finished earlier with these settings */
        st = load_finished(saved, r);
        if (st == ZAYA_OK) st = read_curve(dir, r);
        cJSON_Delete(saved);
        cJSON_Delete(want);
        *skipped = 1;
        return st == ZAYA_OK ? ZAYA_OK : zaya_error_context(st, "%s", path);
    }
    /* an interrupted run: its settings must match before the trainer resumes it */
    char set_path[4096];
    if (st == ZAYA_OK) st = zaya_path_join(set_path, sizeof set_path, dir, "study_settings.json");
    if (st == ZAYA_OK) st = check_saved(set_path, want, dir, &saved);
    cJSON_Delete(saved);
    if (st == ZAYA_OK) st = zaya_json_write_file(set_path, want, 1);
    cJSON *runj = run_file(data_dir, src, nsrc, steps, seed);
    if (st == ZAYA_OK) st = zaya_path_join(cfg_path, sizeof cfg_path, dir, "config.json");
    if (st == ZAYA_OK) st = zaya_json_write_file(cfg_path, s->config[vi], 1);
    if (st == ZAYA_OK) st = zaya_path_join(run_path, sizeof run_path, dir, "study_run_file.json");
    if (st == ZAYA_OK) st = zaya_json_write_file(run_path, runj, 1);
    cJSON_Delete(runj);
    if (st != ZAYA_OK) {
        cJSON_Delete(want);
        return st;
    }
    zaya_train_opts t;
    zaya_train_opts_default(&t);
    t.config = cfg_path;
    t.run_path = run_path;
    t.data_dir = data_dir;
    t.out_dir = dir;
    t.threads = o->threads;
    t.optimizer_muon = v->optimizer_muon;
    t.eval_every = steps >= 8 ? steps / 8 : 1;
    t.eval_batches = 2;
    t.log_every = steps > 0 ? steps : 1;
    t.samples = 0;
    t.peak_gflops = 1; /* MFU is not reported by studies: skip the peak measurement */
    t.save_every = steps >= 4 ? steps / 4 : 1;
    t.keep_last = 1;
    t.async_save = 0;
    t.quiet = 1;
    zaya_train_result tr;
    double t0 = zaya_now_s();
    st = zaya_train_run(&t, &tr);
    if (st != ZAYA_OK) {
        cJSON_Delete(want);
        return zaya_error_context(st, "study '%s' variant '%s' seed %d (%s)", s->def->name, v->name, seed, dir);
    }
    if (tr.preempted) {
        *preempted = 1;
        cJSON_Delete(want);
        return ZAYA_OK;
    }
    r->final_val_loss = tr.last_val_loss;
    r->first_val_loss = tr.first_val_loss;
    r->seconds = zaya_now_s() - t0;
    r->tokens_per_s = tr.tokens_per_s;
    r->tokens = steps * ZAYA_STUDY_SEQ_LEN * ZAYA_STUDY_BATCH;
    st = read_curve(dir, r);
    if (st == ZAYA_OK && r->ncurve > 0) {
        /* a resumed run's first validation is in the curve, not in this invocation's result */
        r->first_val_loss = r->curve_loss[0];
        r->final_val_loss = r->curve_loss[r->ncurve - 1];
    }
    if (st == ZAYA_OK) st = write_finished(path, want, r);
    cJSON_Delete(want);
    return st;
}

zaya_status zaya_study_run(const zaya_study_opts *o, zaya_study_result *res) {
    memset(res, 0, sizeof *res);
    if (o->list) {
        zaya_study_print_list(stdout, o->seeds >= 2 ? o->seeds : 2);
        return ZAYA_OK;
    }
    if (o->seeds < 2 || o->seeds > ZAYA_STUDY_MAX_SEEDS) {
        res->usage_error = 1;
        return zaya_error_set(ZAYA_EINVAL, "--seeds must be in [2, %d] (a spread needs two seeds), got %d",
                              ZAYA_STUDY_MAX_SEEDS, o->seeds);
    }
    if (o->steps < 0 || o->steps > 1000000) {
        res->usage_error = 1;
        return zaya_error_set(ZAYA_EINVAL, "--steps must be in [1, 1000000] (0: each study's default), got %lld",
                              (long long)o->steps);
    }
    if (!o->out_dir || !*o->out_dir) {
        res->usage_error = 1;
        return zaya_error_set(ZAYA_EINVAL, "an output directory is required (-o DIR)");
    }
    zaya_study_plan *plan = calloc(1, sizeof *plan);
    if (!plan) return zaya_error_set(ZAYA_ENOMEM, "study plan");
    /* Ctrl-C (SIGINT) or SIGTERM from here on stops the study cleanly: the run in progress checkpoints;
     * a request during the data preparation, after a run's last step or between two runs stays
     * pending and stops the study before its next run (zaya_train_stop_requested). */
    zaya_train_stop_handler_install();
    zaya_status st = select_studies(o, plan, res);
    /* Every variant must be a real model before any run starts. */
    for (int i = 0; st == ZAYA_OK && i < plan->nstudies; i++) {
        zaya_study_sel *s = &plan->s[i];
        s->steps = o->steps > 0 ? o->steps : s->def->steps;
        for (int v = 0; st == ZAYA_OK && v < s->nvariants; v++) {
            st = variant_config(s->def, s->variant[v], &s->config[v], &s->cfg[v]);
            if (st != ZAYA_OK)
                st = zaya_error_context(st, "study '%s' variant '%s' (overrides %s)", s->def->name, s->variant[v]->name,
                                        s->variant[v]->overrides);
        }
    }
    char data_dir[4096], src[ZAYA_STUDY_MAX_SOURCES][64];
    int nsrc = 0;
    if (st == ZAYA_OK) st = zaya_mkdir_p(o->out_dir);
    if (st == ZAYA_OK) {
        if (o->data_dir) {
            snprintf(data_dir, sizeof data_dir, "%s", o->data_dir);
        } else {
            st = zaya_path_join(data_dir, sizeof data_dir, o->out_dir, "data");
            if (st == ZAYA_OK) st = zaya_train_prepare_builtin_data(data_dir, 4096);
        }
    }
    if (st == ZAYA_OK) st = data_sources(data_dir, src, ZAYA_STUDY_MAX_SOURCES, &nsrc);
    /* One MPI reference for the whole study: the trainer's init/finalize pairs nest inside it, so MPI
     * stays initialised across the runs of this process. Studies run single-process. */
    zaya_comm *world = NULL;
    if (st == ZAYA_OK) st = zaya_dist_init(NULL, NULL, &world);
    if (st == ZAYA_OK && zaya_comm_size(world) != 1)
        st = zaya_error_set(ZAYA_EUNSUPPORTED, "zaya study runs in one process (started under mpirun with %d ranks)",
                            zaya_comm_size(world));
    for (int i = 0; i < plan->nstudies; i++) res->runs_total += plan->s[i].nvariants * o->seeds;
    zaya_progress pg;
    zaya_progress_init(&pg, "study", "run", res->runs_total);
    pg.min_interval_s = 0;
    const double t0 = zaya_now_s();
    int done = 0;
    for (int i = 0; st == ZAYA_OK && !res->preempted && i < plan->nstudies; i++) {
        zaya_study_sel *s = &plan->s[i];
        for (int v = 0; st == ZAYA_OK && !res->preempted && v < s->nvariants; v++)
            for (int k = 0; st == ZAYA_OK && !res->preempted && k < o->seeds; k++) {
                zaya_study_run_rec *r = &s->runs[v][k];
                memset(r, 0, sizeof *r);
                r->seed = k + 1;
                if (zaya_train_stop_requested()) { /* arrived between two runs: start no further one */
                    res->preempted = res->between_runs = 1;
                    break;
                }
                int skipped = 0;
                char note[256];
                snprintf(note, sizeof note, "%s/%s seed %d running", s->def->name, s->variant[v]->name, k + 1);
                zaya_progress_update(&pg, done, note);
                st = one_run(o, s, v, k + 1, s->steps, data_dir, src, nsrc, r, &skipped, &res->preempted);
                if (st != ZAYA_OK || res->preempted) break;
                r->done = 1;
                done++;
                if (skipped) res->runs_skipped++;
                else res->runs_done++;
                snprintf(note, sizeof note, "%s/%s seed %d: val loss %.4f%s", s->def->name, s->variant[v]->name, k + 1,
                         r->final_val_loss, skipped ? " (finished earlier)" : "");
                zaya_progress_update(&pg, done, note);
            }
    }
    if (st == ZAYA_OK && res->preempted) zaya_progress_update(&pg, done, "interrupted: rerun to resume");
    else if (st == ZAYA_OK) zaya_progress_finish(&pg, "done");
    res->seconds = zaya_now_s() - t0;
    if (world) zaya_dist_finalize(world);
    if (st == ZAYA_OK && !res->preempted) st = zaya_study_write_tables(o, plan, stdout);
    for (int i = 0; i < plan->nstudies; i++)
        for (int v = 0; v < plan->s[i].nvariants; v++) cJSON_Delete(plan->s[i].config[v]);
    free(plan);
    return st;
}
