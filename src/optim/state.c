/* Named state pieces for checkpoints, and the optimizer's export/import through them. */
#include <math.h>
#include <string.h>

#include "optim/internal.h"
#include "zaya/alloc.h"
#include "zaya/json.h"

void zaya_state_set_init(zaya_state_set *s) { memset(s, 0, sizeof *s); }

void zaya_state_set_free(zaya_state_set *s) {
    for (int i = 0; i < s->n; i++)
        if (s->a[i].owned) zaya_free(s->a[i].data);
    free(s->a);
    memset(s, 0, sizeof *s);
}

zaya_status zaya_state_set_add(zaya_state_set *s, const char *name, int64_t start, int64_t numel, int64_t full_numel,
                               float *data, int copy) {
    if (strlen(name) >= sizeof s->a[0].name)
        return zaya_error_set(ZAYA_EINVAL, "state array name '%s' longer than %zu characters", name,
                              sizeof s->a[0].name - 1);
    if (start < 0 || numel < 0 || start + numel > full_numel)
        return zaya_error_set(ZAYA_ERANGE, "state array '%s': range [%lld, %lld) outside %lld elements", name,
                              (long long)start, (long long)(start + numel), (long long)full_numel);
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        zaya_state_array *a = realloc(s->a, sizeof *a * (size_t)cap);
        if (!a) return zaya_error_set(ZAYA_ENOMEM, "state set: cannot grow to %d arrays", cap);
        s->a = a;
        s->cap = cap;
    }
    zaya_state_array *e = &s->a[s->n];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    e->start = start;
    e->numel = numel;
    e->full_numel = full_numel;
    if (copy && numel > 0) {
        e->data = zaya_malloc(sizeof(float) * (size_t)numel);
        if (!e->data) return zaya_error_set(ZAYA_ENOMEM, "state array '%s': cannot copy %lld floats", name, (long long)numel);
        memcpy(e->data, data, sizeof(float) * (size_t)numel);
        e->owned = 1;
    } else {
        e->data = data;
    }
    s->n++;
    return ZAYA_OK;
}

const zaya_state_array *zaya_state_set_find(const zaya_state_set *s, const char *name, int64_t start, int64_t numel) {
    for (int i = 0; i < s->n; i++) {
        const zaya_state_array *e = &s->a[i];
        if (!strcmp(e->name, name) && e->start <= start && start + numel <= e->start + e->numel) return e;
    }
    return NULL;
}

zaya_status zaya_state_set_read(const zaya_state_set *s, const char *name, int64_t start, int64_t numel,
                                int64_t full_numel, float *dst) {
    int seen = 0;
    for (int i = 0; i < s->n; i++) {
        const zaya_state_array *e = &s->a[i];
        if (strcmp(e->name, name)) continue;
        seen = 1;
        if (e->full_numel != full_numel)
            return zaya_error_set(ZAYA_EFORMAT, "state array '%s': %lld elements stored, %lld expected", name,
                                  (long long)e->full_numel, (long long)full_numel);
    }
    if (!seen) return zaya_error_set(ZAYA_EFORMAT, "state array '%s' is missing", name);
    const zaya_state_array *e = zaya_state_set_find(s, name, start, numel);
    if (!e)
        return zaya_error_set(ZAYA_EFORMAT, "state array '%s': no stored piece covers elements [%lld, %lld)", name,
                              (long long)start, (long long)(start + numel));
    if (numel) memcpy(dst, e->data + (start - e->start), sizeof(float) * (size_t)numel);
    return ZAYA_OK;
}

/* "optim.<tensor>[.<expert>].<what>" */
static void piece_name(char *out, size_t cap, const zaya_optim_unit *u, const char *what) {
    if (u->expert >= 0) snprintf(out, cap, "optim.%s.%d.%s", u->tensor_name, u->expert, what);
    else snprintf(out, cap, "optim.%s.%s", u->tensor_name, what);
}

static cJSON *config_json(const zaya_optim_config *c) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "weight_decay", c->weight_decay);
    cJSON_AddNumberToObject(j, "adam_beta1", c->adam_beta1);
    cJSON_AddNumberToObject(j, "adam_beta2", c->adam_beta2);
    cJSON_AddNumberToObject(j, "adam_eps", c->adam_eps);
    cJSON_AddNumberToObject(j, "muon_momentum", c->muon_momentum);
    cJSON_AddBoolToObject(j, "muon_nesterov", c->muon_nesterov);
    cJSON_AddNumberToObject(j, "muon_ns_steps", c->muon_ns_steps);
    cJSON_AddNumberToObject(j, "muon_lr_scale", c->muon_lr_scale);
    cJSON_AddStringToObject(j, "muon_ns_dtype", c->muon_ns_dtype == ZAYA_DTYPE_BF16 ? "bf16" : "f32");
    return j;
}

zaya_status zaya_optim_state_export(const zaya_optim *o, zaya_state_set *set, int copy, cJSON **scalars) {
    char nm[256];
    for (int i = 0; i < o->plan.nunits; i++) {
        const zaya_optim_unit *u = &o->plan.units[i];
        if (u->owner != o->rank) continue;
        if (u->kind == ZAYA_UNIT_MUON) {
            piece_name(nm, sizeof nm, u, "momentum");
            ZAYA_TRY(zaya_state_set_add(set, nm, u->start, u->numel, u->full_numel, o->momentum[i], copy));
        } else {
            piece_name(nm, sizeof nm, u, "exp_avg");
            ZAYA_TRY(zaya_state_set_add(set, nm, u->start, u->numel, u->full_numel, o->exp_avg[i], copy));
            piece_name(nm, sizeof nm, u, "exp_avg_sq");
            ZAYA_TRY(zaya_state_set_add(set, nm, u->start, u->numel, u->full_numel, o->exp_avg_sq[i], copy));
        }
    }
    cJSON *j = cJSON_CreateObject();
    if (!j) return zaya_error_set(ZAYA_ENOMEM, "optimizer state: cannot build JSON");
    cJSON_AddNumberToObject(j, "adamw_steps", (double)o->adamw_steps);
    cJSON_AddNumberToObject(j, "muon_steps", (double)o->muon_steps);
    cJSON_AddNumberToObject(j, "world_size", o->plan.world_size);
    cJSON_AddNumberToObject(j, "units", o->plan.nunits);
    cJSON_AddItemToObject(j, "config", config_json(&o->cfg));
    *scalars = j;
    return ZAYA_OK;
}

static zaya_status import_unit(zaya_optim *o, int i, const zaya_state_set *set) {
    const zaya_optim_unit *u = &o->plan.units[i];
    char nm[256];
    if (u->kind == ZAYA_UNIT_MUON) {
        piece_name(nm, sizeof nm, u, "momentum");
        return zaya_state_set_read(set, nm, u->start, u->numel, u->full_numel, o->momentum[i]);
    }
    piece_name(nm, sizeof nm, u, "exp_avg");
    ZAYA_TRY(zaya_state_set_read(set, nm, u->start, u->numel, u->full_numel, o->exp_avg[i]));
    piece_name(nm, sizeof nm, u, "exp_avg_sq");
    return zaya_state_set_read(set, nm, u->start, u->numel, u->full_numel, o->exp_avg_sq[i]);
}

zaya_status zaya_optim_state_import(zaya_optim *o, const zaya_state_set *set, const cJSON *scalars) {
    int64_t as = 0, ms = 0;
    if (!cJSON_IsObject(scalars)) return zaya_error_set(ZAYA_EFORMAT, "optimizer state: scalars are not a JSON object");
    zaya_status s = zaya_json_get_i64(scalars, "adamw_steps", &as, 1);
    if (s == ZAYA_OK) s = zaya_json_get_i64(scalars, "muon_steps", &ms, 1);
    if (s != ZAYA_OK) return zaya_error_context(s, "optimizer state");
    if (as < 0 || ms < 0)
        return zaya_error_set(ZAYA_EFORMAT, "optimizer state: negative step counters (%lld, %lld)", (long long)as,
                              (long long)ms);
    for (int i = 0; i < o->plan.nunits; i++) {
        const zaya_optim_unit *u = &o->plan.units[i];
        if (u->owner != o->rank) continue;
        s = import_unit(o, i, set);
        if (s != ZAYA_OK) {
            if (u->expert >= 0) return zaya_error_context(s, "optimizer unit '%s' expert %d", u->tensor_name, u->expert);
            return zaya_error_context(s, "optimizer unit '%s' elements [%lld, %lld)", u->tensor_name,
                                      (long long)u->start, (long long)(u->start + u->numel));
        }
    }
    o->adamw_steps = as;
    o->muon_steps = ms;
    return ZAYA_OK;
}
