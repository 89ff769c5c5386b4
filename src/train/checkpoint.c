/* Trainer state <-> checkpoints (src/ckpt): model weights, this rank's optimizer state shards, the
 * balancer, data-loader position, spike guards and counters. Resume is bit-exact: the state after
 * loading is the state that was saved, so the continued run computes what the uninterrupted run
 * would have computed. Optimizer state is read by element range, so a run saved on N ranks resumes
 * on M ranks (ZeRO-1 ownership is recomputed; the loader state is global-batch indexed). */
#include <stdlib.h>
#include <string.h>

#include "train/internal.h"
#include "zaya/ckpt.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/log.h"
#include "zaya/timer.h"

static zaya_status gather_cb(void *ctx, const void *buf, size_t len, char **all, size_t *lens) {
    return zaya_gather_bytes((const zaya_comm *)ctx, buf, len, all, lens);
}

static zaya_status bcast_cb(void *ctx, void *buf, size_t len) { return zaya_bcast_bytes((const zaya_comm *)ctx, buf, len); }

/* Adds every piece of a state set: per-rank pieces (optimizer) or, for replicated state, rank 0's. */
static zaya_status add_state(zaya_ckpt_writer *w, const zaya_state_set *set, int rank, int replicated) {
    if (replicated && rank != 0) return ZAYA_OK;
    for (int i = 0; i < set->n; i++) {
        const zaya_state_array *a = &set->a[i];
        int64_t shape[1] = {a->full_numel};
        ZAYA_TRY(zaya_ckpt_writer_add_shard(w, a->name, ZAYA_ST_F32, 1, shape, a->start, a->numel, a->data));
    }
    return ZAYA_OK;
}

static zaya_status read_state(const zaya_ckpt *c, const zaya_state_set *set) {
    for (int i = 0; i < set->n; i++) {
        const zaya_state_array *a = &set->a[i];
        const zaya_ckpt_entry *e = zaya_ckpt_find(c, a->name);
        if (!e) return zaya_error_set(ZAYA_EFORMAT, "checkpoint %s lacks optimizer state '%s'", c->dir, a->name);
        if (e->numel != a->full_numel)
            return zaya_error_set(ZAYA_EFORMAT, "checkpoint %s: state '%s' has %lld elements, this run needs %lld", c->dir,
                                  a->name, (long long)e->numel, (long long)a->full_numel);
        ZAYA_TRY(zaya_ckpt_read_f32(c, a->name, a->start, a->numel, a->data));
    }
    return ZAYA_OK;
}

zaya_status zaya_train_checkpoint_save(zaya_trainer *t, int64_t step, int64_t tokens) {
    const zaya_train_opts *o = t->opts;
    double t0 = zaya_now_s();
    if (t->ckpt_pending) { /* the previous async save must land before the next starts */
        zaya_ckpt_save_stats st;
        zaya_status s = zaya_ckpt_writer_wait(t->ckpt_pending, &st);
        t->ckpt_pending = NULL;
        /* the failure is the earlier step's, not the one being saved now */
        if (s != ZAYA_OK)
            return zaya_error_context(s, "the background save of step %lld failed (seen before saving step %lld)",
                                      (long long)t->ckpt_pending_step, (long long)step);
    }
    ZAYA_TRY(zaya_engine_pull(t->eng)); /* the engine's weights and optimizer state to the host copies */
    zaya_ckpt_comm comm = {t->rank, t->world, t->comm, gather_cb, bcast_cb};
    zaya_ckpt_options copt = zaya_ckpt_default_options();
    copt.keep_last = o->keep_last;
    copt.keep_every = o->keep_every;
    zaya_ckpt_writer *w = NULL;
    ZAYA_TRY(zaya_ckpt_writer_init(&w, t->ckpt_dir, step, tokens, &copt, t->world > 1 ? &comm : NULL));
    zaya_state_set opt_set, bal_set;
    zaya_state_set_init(&opt_set);
    zaya_state_set_init(&bal_set);
    cJSON *opt_scalars = NULL, *bal_scalars = NULL, *run = NULL;
    zaya_status s = zaya_ckpt_writer_add_model_params(w, &t->model);
    if (s == ZAYA_OK) s = zaya_optim_state_export(&t->opt, &opt_set, 0, &opt_scalars);
    const int balanced = t->balancer.layers > 0; /* none in a dense-MLP model */
    if (s == ZAYA_OK && balanced) s = zaya_balancer_state_export(&t->balancer, &bal_set, 0, &bal_scalars);
    if (s == ZAYA_OK) s = add_state(w, &opt_set, t->rank, t->dp.mode == ZAYA_DP_ALLREDUCE);
    if (s == ZAYA_OK && balanced) s = add_state(w, &bal_set, t->rank, 1);
    if (s == ZAYA_OK) s = zaya_ckpt_writer_add_section(w, "optimizer", opt_scalars);
    if (s == ZAYA_OK && balanced) s = zaya_ckpt_writer_add_section(w, "balancer", bal_scalars);
    if (s == ZAYA_OK) s = zaya_run_to_json(&t->run, &run);
    if (s == ZAYA_OK) s = zaya_ckpt_writer_add_section(w, "run_config", run);
    cJSON *loader = NULL;
    if (s == ZAYA_OK) s = zaya_loader_state_to_json(&t->loader.st, &loader);
    if (s == ZAYA_OK) s = zaya_ckpt_writer_add_section(w, "data_loader", loader);
    cJSON *trainer = cJSON_CreateObject();
    cJSON_AddNumberToObject(trainer, "step", (double)step);
    cJSON_AddNumberToObject(trainer, "tokens", (double)tokens);
    cJSON_AddNumberToObject(trainer, "skipped_updates", (double)t->skipped);
    cJSON_AddNumberToObject(trainer, "world_size", t->world);
    cJSON_AddStringToObject(trainer, "dtype", o->dtype == ZAYA_DTYPE_BF16 ? "bf16" : "f32");
    cJSON_AddItemToObject(trainer, "spike_guard_loss", zaya_spike_guard_to_json(&t->guard_loss));
    cJSON_AddItemToObject(trainer, "spike_guard_grad_norm", zaya_spike_guard_to_json(&t->guard_gnorm));
    if (s == ZAYA_OK) s = zaya_ckpt_writer_add_section(w, "trainer", trainer);
    cJSON *sched = cJSON_CreateObject();
    cJSON_AddNumberToObject(sched, "step", (double)step);
    if (s == ZAYA_OK) s = zaya_ckpt_writer_add_section(w, "schedule", sched);
    cJSON *rng = cJSON_CreateObject();
    cJSON_AddNumberToObject(rng, "seed", (double)t->run.seed);
    cJSON_AddStringToObject(rng, "note", "every random draw is addressed by (seed, stream, counter): no generator state");
    if (s == ZAYA_OK) s = zaya_ckpt_writer_add_section(w, "rng", rng);
    cJSON_Delete(opt_scalars);
    cJSON_Delete(bal_scalars);
    cJSON_Delete(run);
    cJSON_Delete(loader);
    cJSON_Delete(trainer);
    cJSON_Delete(sched);
    cJSON_Delete(rng);
    if (s != ZAYA_OK) zaya_ckpt_writer_set_error(w, s, zaya_error_message());
    zaya_ckpt_save_stats st;
    memset(&st, 0, sizeof st);
    double stall = 0;
    /* Async commits call the coordination callbacks from the writer thread; MPI here runs with
     * funneled threading, so multi-rank saves commit synchronously. */
    if (s == ZAYA_OK && t->world == 1 && o->async_save) {
        s = zaya_ckpt_writer_commit_async(w, &t->snapshot, &stall);
        if (s == ZAYA_OK) t->ckpt_pending = w, t->ckpt_pending_step = step;
    } else {
        s = zaya_ckpt_writer_commit(w, &st);
        stall = zaya_now_s() - t0;
    }
    zaya_state_set_free(&opt_set);
    zaya_state_set_free(&bal_set);
    t->ckpt_stall_s += stall;
    t->ckpt_saves++;
    if (s == ZAYA_OK && !o->quiet)
        printf("checkpoint step %lld: training stalled %.1f ms%s\n", (long long)step, stall * 1e3,
               t->ckpt_pending ? " (written in the background)" : "");
    return s;
}

zaya_status zaya_train_checkpoint_poll(zaya_trainer *t) {
    if (!t->ckpt_pending || !zaya_ckpt_writer_done(t->ckpt_pending)) return ZAYA_OK;
    return zaya_train_checkpoint_wait(t); /* finished: its failure stops the run now, naming the step */
}

zaya_status zaya_train_checkpoint_wait(zaya_trainer *t) {
    if (!t->ckpt_pending) return ZAYA_OK;
    zaya_ckpt_save_stats st;
    zaya_status s = zaya_ckpt_writer_wait(t->ckpt_pending, &st);
    t->ckpt_pending = NULL;
    if (s != ZAYA_OK) return zaya_error_context(s, "the background save of step %lld failed", (long long)t->ckpt_pending_step);
    return s;
}

/* Loads the newest good checkpoint under t->ckpt_dir, if any. *found = 0 for a fresh start. */
zaya_status zaya_train_checkpoint_resume(zaya_trainer *t, int64_t *tokens, int *found) {
    *found = 0;
    memset(&t->ckpt_res, 0, sizeof t->ckpt_res);
    /* Anything committed (a latest file or a step directory) is resumed from: a missing latest with
     * step directories is a commit cut short, not a fresh start. */
    if (!zaya_ckpt_root_has_checkpoints(t->ckpt_dir)) return ZAYA_OK;
    zaya_ckpt *c = NULL;
    ZAYA_TRY(zaya_ckpt_open_newest(&c, t->ckpt_dir, 1, &t->ckpt_res));
    zaya_status s = ZAYA_OK;
    /* The model must be the one that was saved. */
    const cJSON *mc = zaya_ckpt_section(c, ZAYA_CKPT_SECTION_MODEL);
    zaya_config saved;
    if (!mc || zaya_config_from_json(mc, &saved) != ZAYA_OK) {
        s = zaya_error_set(ZAYA_EFORMAT, "checkpoint %s: missing or invalid model_config", c->dir);
        goto done;
    }
    if (!zaya_config_same_architecture(&saved, &t->model.cfg)) {
        s = zaya_error_set(ZAYA_EINVAL, "checkpoint %s was saved for a different model configuration than --config", c->dir);
        goto done;
    }
    for (int i = 0; i < t->model.ntensors && s == ZAYA_OK; i++) {
        const zaya_tensor_info *ti = &t->model.tensors[i];
        s = zaya_ckpt_read_f32(c, ti->name, 0, ti->numel, t->model.params + ti->offset);
    }
    zaya_state_set set;
    cJSON *scalars = NULL;
    zaya_state_set_init(&set);
    if (s == ZAYA_OK) s = zaya_optim_state_export(&t->opt, &set, 0, &scalars);
    cJSON_Delete(scalars);
    if (s == ZAYA_OK) s = read_state(c, &set);
    if (s == ZAYA_OK) s = zaya_optim_state_import(&t->opt, &set, zaya_ckpt_section(c, "optimizer"));
    zaya_state_set_free(&set);
    zaya_state_set_init(&set);
    scalars = NULL;
    if (t->balancer.layers > 0) { /* none in a dense-MLP model */
        if (s == ZAYA_OK) s = zaya_balancer_state_export(&t->balancer, &set, 0, &scalars);
        cJSON_Delete(scalars);
        if (s == ZAYA_OK) s = read_state(c, &set);
        if (s == ZAYA_OK) s = zaya_balancer_state_import(&t->balancer, &set, zaya_ckpt_section(c, "balancer"));
    }
    zaya_state_set_free(&set);
    if (s != ZAYA_OK) goto done;
    zaya_loader_state ls;
    s = zaya_loader_state_from_json(zaya_ckpt_section(c, "data_loader"), &ls);
    if (s == ZAYA_OK) s = zaya_loader_restore(&t->loader, &ls);
    if (s != ZAYA_OK) goto done;
    const cJSON *tr = zaya_ckpt_section(c, "trainer");
    double skipped = 0;
    if (!tr) {
        s = zaya_error_set(ZAYA_EFORMAT, "checkpoint %s: missing trainer section", c->dir);
        goto done;
    }
    zaya_json_get_f64(tr, "skipped_updates", &skipped, 0);
    s = zaya_spike_guard_from_json(&t->guard_loss, cJSON_GetObjectItemCaseSensitive(tr, "spike_guard_loss"));
    if (s == ZAYA_OK) s = zaya_spike_guard_from_json(&t->guard_gnorm, cJSON_GetObjectItemCaseSensitive(tr, "spike_guard_grad_norm"));
    if (s != ZAYA_OK) goto done;
    t->step = c->step;
    t->skipped = (int64_t)skipped;
    *tokens = c->tokens;
    *found = 1;
    zaya_model_sync_weights(&t->model);
    if (t->rank == 0)
        ZAYA_INFO("resumed from %s: step %lld, %lld tokens (saved by %d rank%s)", c->dir, (long long)c->step,
                  (long long)c->tokens, c->world, c->world > 1 ? "s" : "");
done:
    if (s != ZAYA_OK) zaya_error_context(s, "resuming from %s", t->ckpt_dir);
    zaya_ckpt_close(c);
    return s;
}
