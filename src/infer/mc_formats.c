/* Multiple-choice task files in their released layouts, turned into (context, continuation) pairs
 * per choice with lm-eval-harness's prompts:
 *   zaya        {context, choices, label}: context + choice as given
 *   hellaswag   {activity_label, ctx_a, ctx_b (or ctx), endings, label}: "<label>: <ctx_a> <Ctx_b>"
 *               cleaned (strip, " [title]" -> ". ", [..] removed, double spaces), " <ending>"
 *   arc         {question{stem, choices[{text, label}]}, answerKey} (original) or {question,
 *               choices{text[], label[]}, answerKey} (HF): "Question: Q\nAnswer:", " <text>"
 *   piqa        {goal, sol1, sol2, label} or labels from X-labels.lst: "Question: G\nAnswer:", " <sol>"
 *   winogrande  {sentence, option1, option2, answer}: sentence[:_] + option, " <rest after _>"
 *   mmlu        {question, choices[], answer, subject?} (HF) or CSV question,A,B,C,D,answer: the
 *               subject line, "Q\nA. a\nB. b\n...\nAnswer:", " A" / " B" / ...
 *   lambada     {text} (lambada_openai): text up to its last space, " <last word>" (one continuation)
 * Records are validated as they are read; any error names file:line and the field. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/fs.h"
#include "zaya/infer.h"
#include "zaya/json.h"

static const char *const format_names[] = {"auto", "zaya", "hellaswag", "arc", "piqa", "winogrande", "mmlu", "lambada"};
#define NFORMATS ((int)(sizeof format_names / sizeof format_names[0]))

static const char *known_layouts =
    "zaya {context, choices, label}, hellaswag {ctx_a, ctx_b, endings, label}, arc {question, choices, answerKey}, "
    "piqa {goal, sol1, sol2}, winogrande {sentence, option1, option2, answer}, mmlu {question, choices, answer} or "
    "CSV question,A,B,C,D,answer, lambada {text}";

const char *zaya_mc_format_name(zaya_mc_format f) {
    return (int)f >= 0 && (int)f < NFORMATS ? format_names[f] : "?";
}

zaya_status zaya_mc_format_parse(const char *name, zaya_mc_format *out) {
    for (int i = 0; i < NFORMATS; i++)
        if (strcmp(name, format_names[i]) == 0) {
            *out = (zaya_mc_format)i;
            return ZAYA_OK;
        }
    return zaya_error_set(ZAYA_EINVAL, "unknown task format '%s' (known: auto, zaya, hellaswag, arc, piqa, winogrande, mmlu, lambada)",
                          name);
}

/* ---- strings ---- */

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/* Python's str.strip() (ASCII whitespace) of s[0..n). */
static char *strip_dup(const char *s, size_t n) {
    while (n && is_space(*s)) s++, n--;
    while (n && is_space(s[n - 1])) n--;
    char *r = malloc(n + 1);
    if (r) memcpy(r, s, n), r[n] = '\0';
    return r;
}

/* HellaSwag's cleaning: strip, " [title]" -> ". ", drop [..] spans (within a line, shortest),
 * then each pair of spaces -> one (left to right, non-overlapping). */
static char *hellaswag_clean(const char *s) {
    char *a = strip_dup(s, strlen(s));
    if (!a) return NULL;
    const size_t n = strlen(a);
    char *b = malloc(2 * n + 1), *c = malloc(2 * n + 1);
    if (!b || !c) {
        free(a), free(b), free(c);
        return NULL;
    }
    size_t j = 0;
    for (size_t i = 0; i < n;) {
        if (strncmp(a + i, " [title]", 8) == 0) {
            b[j++] = '.', b[j++] = ' ', i += 8;
        } else {
            b[j++] = a[i++];
        }
    }
    b[j] = '\0';
    size_t k = 0;
    for (size_t i = 0; i < j;) {
        if (b[i] == '[') {
            size_t e = i + 1;
            while (e < j && b[e] != ']' && b[e] != '\n') e++;
            if (e < j && b[e] == ']') {
                i = e + 1;
                continue;
            }
        }
        c[k++] = b[i++];
    }
    c[k] = '\0';
    j = 0;
    for (size_t i = 0; i < k;) {
        if (c[i] == ' ' && i + 1 < k && c[i + 1] == ' ') {
            b[j++] = ' ', i += 2;
        } else {
            b[j++] = c[i++];
        }
    }
    b[j] = '\0';
    free(a), free(c);
    return b;
}

/* Python's str.capitalize() for ASCII: first letter upper case, the rest lower case. */
static void capitalize(char *s) {
    for (size_t i = 0; s[i]; i++) s[i] = (char)(i == 0 ? toupper((unsigned char)s[i]) : tolower((unsigned char)s[i]));
}

/* ---- fields ---- */

static const cJSON *field(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

static zaya_status need_str(const cJSON *o, const char *key, const char *name, const char **out) {
    const cJSON *v = field(o, key);
    if (!v) return zaya_error_set(ZAYA_EFORMAT, "missing field '%s'", name);
    if (!cJSON_IsString(v)) return zaya_error_set(ZAYA_EFORMAT, "field '%s' must be a string", name);
    *out = v->valuestring;
    return ZAYA_OK;
}

/* An integer label given as a number or a string of digits ("2", as HF stores them). */
static zaya_status need_int(const cJSON *o, const char *key, int64_t *out) {
    const cJSON *v = field(o, key);
    if (!v) return zaya_error_set(ZAYA_EFORMAT, "missing field '%s'", key);
    /* range first: converting a double outside int64 is undefined */
    if (cJSON_IsNumber(v) && v->valuedouble >= -1e15 && v->valuedouble <= 1e15 &&
        v->valuedouble == (double)(int64_t)v->valuedouble) {
        *out = (int64_t)v->valuedouble;
        return ZAYA_OK;
    }
    if (cJSON_IsString(v) && v->valuestring[0]) {
        char *end = NULL;
        const long long x = strtoll(v->valuestring, &end, 10);
        if (*end == '\0') {
            *out = x;
            return ZAYA_OK;
        }
    }
    if (cJSON_IsString(v) && !v->valuestring[0])
        return zaya_error_set(ZAYA_EFORMAT, "field '%s' is empty (an unlabelled split?)", key);
    return zaya_error_set(ZAYA_EFORMAT, "field '%s' must be an integer", key);
}

/* ---- documents ---- */

static void doc_free(zaya_mc_doc *d) {
    for (int c = 0; c < d->nchoices; c++) {
        if (d->ctx) free(d->ctx[c]);
        if (d->cont) free(d->cont[c]);
    }
    free(d->ctx), free(d->cont), free(d->norm_bytes);
    memset(d, 0, sizeof *d);
}

void zaya_mc_docs_free(zaya_mc_docs *d) {
    for (int64_t i = 0; i < d->n; i++) doc_free(&d->docs[i]);
    free(d->docs);
    d->docs = NULL;
    d->n = 0;
}

static zaya_status doc_alloc(zaya_mc_doc *d, int n) {
    d->ctx = calloc((size_t)n, sizeof(char *));
    d->cont = calloc((size_t)n, sizeof(char *));
    d->norm_bytes = calloc((size_t)n, sizeof(int64_t));
    if (!d->ctx || !d->cont || !d->norm_bytes) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    d->nchoices = n;
    return ZAYA_OK;
}

/* Choice c: takes ownership of ctx and cont (either NULL: out of memory). */
static zaya_status doc_set(zaya_mc_doc *d, int c, char *ctx, char *cont, int64_t norm_bytes) {
    d->ctx[c] = ctx;
    d->cont[c] = cont;
    d->norm_bytes[c] = norm_bytes;
    return ctx && cont ? ZAYA_OK : zaya_error_set(ZAYA_ENOMEM, "out of memory");
}

static zaya_status check_label(zaya_mc_doc *d, int64_t label) {
    if (label < 0 || label >= d->nchoices)
        return zaya_error_set(ZAYA_ERANGE, "label %lld is out of range for %d choices", (long long)label, d->nchoices);
    d->label = (int)label;
    return ZAYA_OK;
}

/* Shared-context choices: ctx for every choice, cont = prefix + text[c]. */
static zaya_status doc_shared(zaya_mc_doc *d, const char *ctx, const char *prefix, const char *const *text, int n) {
    ZAYA_TRY(doc_alloc(d, n));
    for (int c = 0; c < n; c++)
        ZAYA_TRY(doc_set(d, c, xprintf("%s", ctx), xprintf("%s%s", prefix, text[c]), (int64_t)strlen(text[c])));
    return ZAYA_OK;
}

/* ---- layouts ---- */

typedef struct parse_ctx {
    const char *subject; /* MMLU subject from the file name (CSV), or NULL */
} parse_ctx;

static zaya_status parse_zaya(const cJSON *o, zaya_mc_doc *d) {
    const char *ctx = NULL;
    int64_t label = -1;
    ZAYA_TRY(need_str(o, "context", "context", &ctx));
    const cJSON *ch = field(o, "choices");
    if (!ch) return zaya_error_set(ZAYA_EFORMAT, "missing field 'choices'");
    ZAYA_TRY(need_int(o, "label", &label));
    if (!cJSON_IsArray(ch)) return zaya_error_set(ZAYA_EFORMAT, "'choices' must be an array of strings");
    const int n = cJSON_GetArraySize(ch);
    if (n < 1) return zaya_error_set(ZAYA_EFORMAT, "'choices' is empty");
    if (!ctx[0]) return zaya_error_set(ZAYA_EFORMAT, "'context' is empty");
    ZAYA_TRY(doc_alloc(d, n));
    for (int c = 0; c < n; c++) {
        const cJSON *s = cJSON_GetArrayItem(ch, c);
        if (!cJSON_IsString(s)) return zaya_error_set(ZAYA_EFORMAT, "choice %d is not a string", c);
        if (!s->valuestring[0]) return zaya_error_set(ZAYA_EFORMAT, "choice %d is empty", c);
        ZAYA_TRY(doc_set(d, c, xprintf("%s", ctx), xprintf("%s", s->valuestring), (int64_t)strlen(s->valuestring)));
    }
    return check_label(d, label);
}

/* A non-empty array of strings at o[key], reported as `name`. */
static zaya_status need_strings(const cJSON *o, const char *key, const char *name, const char ***out, int *n) {
    const cJSON *a = field(o, key);
    if (!a) return zaya_error_set(ZAYA_EFORMAT, "missing field '%s'", name);
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) < 1)
        return zaya_error_set(ZAYA_EFORMAT, "field '%s' must be a non-empty array of strings", name);
    *n = cJSON_GetArraySize(a);
    *out = calloc((size_t)*n, sizeof(char *));
    if (!*out) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    for (int i = 0; i < *n; i++) {
        const cJSON *s = cJSON_GetArrayItem(a, i);
        if (!cJSON_IsString(s)) {
            free(*out);
            *out = NULL;
            return zaya_error_set(ZAYA_EFORMAT, "field '%s[%d]' must be a string", name, i);
        }
        (*out)[i] = s->valuestring;
    }
    return ZAYA_OK;
}

static zaya_status parse_hellaswag(const cJSON *o, zaya_mc_doc *d) {
    const char *act = "", *a = NULL, *b = NULL, *whole = NULL;
    if (field(o, "activity_label")) ZAYA_TRY(need_str(o, "activity_label", "activity_label", &act));
    if (field(o, "ctx_a") || !field(o, "ctx")) {
        ZAYA_TRY(need_str(o, "ctx_a", "ctx_a", &a));
        ZAYA_TRY(need_str(o, "ctx_b", "ctx_b", &b));
    } else {
        ZAYA_TRY(need_str(o, "ctx", "ctx", &whole));
    }
    const char **end = NULL;
    int n = 0;
    int64_t label = -1;
    ZAYA_TRY(need_strings(o, "endings", "endings", &end, &n));
    zaya_status s = need_int(o, "label", &label);
    char *bcap = NULL, *raw = NULL, *query = NULL;
    if (s == ZAYA_OK && whole) {
        raw = act[0] ? xprintf("%s: %s", act, whole) : xprintf("%s", whole);
    } else if (s == ZAYA_OK) {
        bcap = xprintf("%s", b);
        if (bcap) capitalize(bcap);
        raw = bcap ? (act[0] ? xprintf("%s: %s %s", act, a, bcap) : xprintf("%s %s", a, bcap)) : NULL;
    }
    if (s == ZAYA_OK && (!raw || !(query = hellaswag_clean(raw)))) s = zaya_error_set(ZAYA_ENOMEM, "out of memory");
    if (s == ZAYA_OK) s = doc_alloc(d, n);
    for (int c = 0; c < n && s == ZAYA_OK; c++) {
        char *e = hellaswag_clean(end[c]);
        s = doc_set(d, c, xprintf("%s", query), e ? xprintf(" %s", e) : NULL, e ? (int64_t)strlen(e) : 0);
        free(e);
    }
    if (s == ZAYA_OK) s = check_label(d, label);
    free(end), free(bcap), free(raw), free(query);
    return s;
}

static zaya_status parse_arc(const cJSON *o, zaya_mc_doc *d) {
    const char *key = NULL, *stem = NULL;
    ZAYA_TRY(need_str(o, "answerKey", "answerKey", &key));
    const cJSON *q = field(o, "question");
    if (!q) return zaya_error_set(ZAYA_EFORMAT, "missing field 'question'");
    const char **text = NULL, **lab = NULL;
    int n = 0, nl = 0;
    zaya_status s = ZAYA_OK;
    if (cJSON_IsObject(q)) { /* original: question.stem, question.choices[].{text, label} */
        ZAYA_TRY(need_str(q, "stem", "question.stem", &stem));
        const cJSON *ch = field(q, "choices");
        if (!ch) return zaya_error_set(ZAYA_EFORMAT, "missing field 'question.choices'");
        if (!cJSON_IsArray(ch) || cJSON_GetArraySize(ch) < 1)
            return zaya_error_set(ZAYA_EFORMAT, "field 'question.choices' must be a non-empty array");
        n = nl = cJSON_GetArraySize(ch);
        text = calloc((size_t)n, sizeof(char *));
        lab = calloc((size_t)n, sizeof(char *));
        if (!text || !lab) s = zaya_error_set(ZAYA_ENOMEM, "out of memory");
        for (int i = 0; i < n && s == ZAYA_OK; i++) {
            const cJSON *c = cJSON_GetArrayItem(ch, i);
            char name[64];
            snprintf(name, sizeof name, "question.choices[%d].text", i);
            s = cJSON_IsObject(c) ? need_str(c, "text", name, &text[i])
                                  : zaya_error_set(ZAYA_EFORMAT, "field 'question.choices[%d]' must be an object", i);
            snprintf(name, sizeof name, "question.choices[%d].label", i);
            if (s == ZAYA_OK) s = need_str(c, "label", name, &lab[i]);
        }
    } else if (cJSON_IsString(q)) { /* HF: question, choices.{text, label} */
        stem = q->valuestring;
        const cJSON *ch = field(o, "choices");
        if (!ch) return zaya_error_set(ZAYA_EFORMAT, "missing field 'choices'");
        if (!cJSON_IsObject(ch)) return zaya_error_set(ZAYA_EFORMAT, "field 'choices' must be an object {text, label}");
        s = need_strings(ch, "text", "choices.text", &text, &n);
        if (s == ZAYA_OK) s = need_strings(ch, "label", "choices.label", &lab, &nl);
        if (s == ZAYA_OK && n != nl)
            s = zaya_error_set(ZAYA_EFORMAT, "'choices.text' has %d entries, 'choices.label' %d", n, nl);
    } else {
        return zaya_error_set(ZAYA_EFORMAT, "field 'question' must be a string or an object {stem, choices}");
    }
    int gold = -1;
    for (int i = 0; i < n && s == ZAYA_OK && gold < 0; i++)
        if (strcmp(lab[i], key) == 0) gold = i;
    if (s == ZAYA_OK && gold < 0) s = zaya_error_set(ZAYA_EFORMAT, "answerKey '%s' is not one of the choice labels", key);
    char *ctx = s == ZAYA_OK ? xprintf("Question: %s\nAnswer:", stem) : NULL;
    if (s == ZAYA_OK) s = ctx ? doc_shared(d, ctx, " ", text, n) : zaya_error_set(ZAYA_ENOMEM, "out of memory");
    if (s == ZAYA_OK) s = check_label(d, gold);
    free(ctx), free(text), free(lab);
    return s;
}

/* label -1 when absent (the caller reads the labels file). */
static zaya_status parse_piqa(const cJSON *o, zaya_mc_doc *d) {
    const char *goal = NULL, *sol[2] = {NULL, NULL};
    ZAYA_TRY(need_str(o, "goal", "goal", &goal));
    ZAYA_TRY(need_str(o, "sol1", "sol1", &sol[0]));
    ZAYA_TRY(need_str(o, "sol2", "sol2", &sol[1]));
    int64_t label = -1;
    if (field(o, "label")) ZAYA_TRY(need_int(o, "label", &label));
    char *ctx = xprintf("Question: %s\nAnswer:", goal);
    zaya_status s = ctx ? doc_shared(d, ctx, " ", sol, 2) : zaya_error_set(ZAYA_ENOMEM, "out of memory");
    free(ctx);
    if (s == ZAYA_OK && field(o, "label")) s = check_label(d, label);
    if (s == ZAYA_OK && !field(o, "label")) d->label = -1;
    return s;
}

static zaya_status parse_winogrande(const cJSON *o, zaya_mc_doc *d) {
    const char *sent = NULL, *opt[2] = {NULL, NULL};
    int64_t answer = 0;
    ZAYA_TRY(need_str(o, "sentence", "sentence", &sent));
    ZAYA_TRY(need_str(o, "option1", "option1", &opt[0]));
    ZAYA_TRY(need_str(o, "option2", "option2", &opt[1]));
    ZAYA_TRY(need_int(o, "answer", &answer));
    const char *blank = strchr(sent, '_');
    if (!blank) return zaya_error_set(ZAYA_EFORMAT, "field 'sentence' has no '_' blank");
    if (answer != 1 && answer != 2) return zaya_error_set(ZAYA_ERANGE, "field 'answer' is %lld, not 1 or 2", (long long)answer);
    char *rest = strip_dup(blank + 1, strlen(blank + 1));
    if (!rest) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    zaya_status s = doc_alloc(d, 2);
    const int pre = (int)(blank - sent);
    for (int c = 0; c < 2 && s == ZAYA_OK; c++)
        s = doc_set(d, c, xprintf("%.*s%s", pre, sent, opt[c]), xprintf(" %s", rest), (int64_t)strlen(rest));
    free(rest);
    if (s == ZAYA_OK) s = check_label(d, answer - 1);
    return s;
}

/* Builds an MMLU item from question, n choices and the answer (index, or a letter). */
static zaya_status mmlu_doc(const char *subject, const char *question, const char *const *choice, int n, int64_t answer,
                            zaya_mc_doc *d) {
    if (n > 26) return zaya_error_set(ZAYA_ERANGE, "%d choices: at most 26 (A-Z) are supported", n);
    char *q = strip_dup(question, strlen(question));
    size_t len = (q ? strlen(q) : 0) + 256 + (subject ? strlen(subject) : 0);
    for (int c = 0; c < n; c++) len += strlen(choice[c]) + 8;
    char *ctx = q ? malloc(len) : NULL;
    if (!ctx) {
        free(q);
        return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    }
    size_t at = 0;
    if (subject && subject[0]) {
        at += (size_t)snprintf(ctx + at, len - at, "The following are multiple choice questions (with answers) about ");
        for (const char *p = subject; *p; p++) ctx[at++] = *p == '_' ? ' ' : *p;
        at += (size_t)snprintf(ctx + at, len - at, ".\n\n");
    }
    at += (size_t)snprintf(ctx + at, len - at, "%s\n", q);
    for (int c = 0; c < n; c++) at += (size_t)snprintf(ctx + at, len - at, "%c. %s\n", 'A' + c, choice[c]);
    snprintf(ctx + at, len - at, "Answer:");
    free(q);
    zaya_status s = doc_alloc(d, n);
    for (int c = 0; c < n && s == ZAYA_OK; c++) s = doc_set(d, c, xprintf("%s", ctx), xprintf(" %c", 'A' + c), 1);
    free(ctx);
    if (s == ZAYA_OK) s = check_label(d, answer);
    return s;
}

/* "B" -> 1; a string of digits or a number -> itself. */
static zaya_status mmlu_answer(const char *s, int64_t *out) {
    if (s[0] >= 'A' && s[0] <= 'Z' && s[1] == '\0') {
        *out = s[0] - 'A';
        return ZAYA_OK;
    }
    char *end = NULL;
    const long long x = strtoll(s, &end, 10);
    if (!s[0] || *end) return zaya_error_set(ZAYA_EFORMAT, "answer '%s' is neither a letter A-Z nor an index", s);
    *out = x;
    return ZAYA_OK;
}

static zaya_status parse_mmlu(const cJSON *o, const parse_ctx *pc, zaya_mc_doc *d) {
    const char *q = NULL, *subject = pc->subject;
    ZAYA_TRY(need_str(o, "question", "question", &q));
    if (field(o, "subject")) ZAYA_TRY(need_str(o, "subject", "subject", &subject));
    const char **ch = NULL;
    int n = 0;
    ZAYA_TRY(need_strings(o, "choices", "choices", &ch, &n));
    int64_t answer = -1;
    const cJSON *a = field(o, "answer");
    zaya_status s = cJSON_IsString(a) ? mmlu_answer(a->valuestring, &answer) : need_int(o, "answer", &answer);
    if (s == ZAYA_OK) s = mmlu_doc(subject, q, ch, n, answer, d);
    free(ch);
    return s;
}

/* lambada_openai: context = text.rsplit(' ', 1)[0], target = " " + the last word (split at the last
 * U+0020, as lm-eval's doc_to_text / doc_to_target do; other whitespace stays in the text). */
static zaya_status parse_lambada(const cJSON *o, zaya_mc_doc *d) {
    const char *text = NULL;
    ZAYA_TRY(need_str(o, "text", "text", &text));
    const char *sp = strrchr(text, ' ');
    if (!sp) return zaya_error_set(ZAYA_EFORMAT, "field 'text' has no space: there is no last word to predict");
    ZAYA_TRY(doc_alloc(d, 1));
    d->label = 0;
    return doc_set(d, 0, xprintf("%.*s", (int)(sp - text), text), xprintf("%s", sp), (int64_t)strlen(sp + 1));
}

static zaya_mc_format detect(const cJSON *o) {
    if (field(o, "context") && field(o, "choices")) return ZAYA_MC_ZAYA;
    if (field(o, "endings") && (field(o, "ctx_a") || field(o, "ctx"))) return ZAYA_MC_HELLASWAG;
    if (field(o, "answerKey") && field(o, "question")) return ZAYA_MC_ARC;
    if (field(o, "goal") && field(o, "sol1")) return ZAYA_MC_PIQA;
    if (field(o, "sentence") && field(o, "option1")) return ZAYA_MC_WINOGRANDE;
    if (field(o, "question") && field(o, "choices") && field(o, "answer")) return ZAYA_MC_MMLU;
    if (field(o, "text") && !field(o, "choices") && !field(o, "label")) return ZAYA_MC_LAMBADA;
    return ZAYA_MC_AUTO;
}

static zaya_status unknown_layout(const cJSON *o) {
    char names[256] = "";
    size_t at = 0;
    for (const cJSON *c = o->child; c && at + 40 < sizeof names; c = c->next)
        at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", at ? ", " : "", c->string);
    return zaya_error_set(ZAYA_EFORMAT, "unknown multiple-choice layout (fields: %s); known layouts: %s", names,
                          known_layouts);
}

/* Parses one record; *fmt is fixed by the first record under ZAYA_MC_AUTO. */
static zaya_status parse_record(const cJSON *o, zaya_mc_format *fmt, const parse_ctx *pc, zaya_mc_doc *d) {
    if (!cJSON_IsObject(o)) return zaya_error_set(ZAYA_EFORMAT, "not a JSON object");
    if (*fmt == ZAYA_MC_AUTO) {
        *fmt = detect(o);
        if (*fmt == ZAYA_MC_AUTO) return unknown_layout(o);
    }
    switch (*fmt) {
    case ZAYA_MC_ZAYA: return parse_zaya(o, d);
    case ZAYA_MC_HELLASWAG: return parse_hellaswag(o, d);
    case ZAYA_MC_ARC: return parse_arc(o, d);
    case ZAYA_MC_PIQA: return parse_piqa(o, d);
    case ZAYA_MC_WINOGRANDE: return parse_winogrande(o, d);
    case ZAYA_MC_MMLU: return parse_mmlu(o, pc, d);
    case ZAYA_MC_LAMBADA: return parse_lambada(o, d);
    default: return zaya_error_set(ZAYA_EINVAL, "bad task format %d", (int)*fmt);
    }
}

/* ---- files ---- */

static zaya_status push(zaya_mc_docs *set, int64_t *cap, zaya_mc_doc **d) {
    if (set->n == *cap) {
        const int64_t nc = *cap ? 2 * *cap : 64;
        zaya_mc_doc *g = realloc(set->docs, (size_t)nc * sizeof *g);
        if (!g) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
        set->docs = g;
        *cap = nc;
    }
    *d = &set->docs[set->n];
    memset(*d, 0, sizeof **d);
    return ZAYA_OK;
}

static int ends_with(const char *s, const char *suffix) {
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* "dir/abstract_algebra_test.csv" -> "abstract_algebra" (the original MMLU file names). */
static char *subject_from_path(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char *s = xprintf("%s", base);
    if (!s) return NULL;
    char *dot = strrchr(s, '.');
    if (dot) *dot = '\0';
    static const char *const splits[] = {"_test", "_val", "_dev", "_train", "_auxiliary_train"};
    for (size_t i = 0; i < sizeof splits / sizeof splits[0]; i++)
        if (ends_with(s, splits[i])) {
            s[strlen(s) - strlen(splits[i])] = '\0';
            break;
        }
    return s;
}

/* One CSV record (RFC 4180 quoting, newlines inside quotes) from *p; fields point into buf (unescaped
 * in place). Returns the field count, -1 for an unterminated quote. *line advances past newlines. */
static int csv_record(char **p, char *end, char **fields, int max, int64_t *line) {
    int n = 0;
    char *s = *p;
    for (;;) {
        char *out = s, *start = s;
        if (s < end && *s == '"') {
            s++;
            for (;;) {
                if (s >= end) return -1;
                if (*s == '"' && s + 1 < end && s[1] == '"') {
                    *out++ = '"', s += 2;
                } else if (*s == '"') {
                    s++;
                    break;
                } else {
                    if (*s == '\n') (*line)++;
                    *out++ = *s++;
                }
            }
            while (s < end && *s != ',' && *s != '\n') s++; /* text after the closing quote: ignored */
        } else {
            while (s < end && *s != ',' && *s != '\n') s++;
            out = s;
            if (out > start && out[-1] == '\r') out--;
        }
        const char sep = s < end ? *s : '\n';
        *out = '\0';
        if (n < max) fields[n] = start;
        n++;
        s++;
        if (sep == '\n') break;
    }
    *p = s;
    return n;
}

static zaya_status read_csv(const char *path, char *data, size_t len, zaya_mc_docs *set) {
    char *subject = subject_from_path(path);
    if (!subject) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    int64_t cap = 0, line = 1;
    zaya_status s = ZAYA_OK;
    char *p = data, *end = data + len;
    while (p < end && s == ZAYA_OK) {
        const int64_t at = line;
        char *q = p;
        while (q < end && (*q == ' ' || *q == '\t' || *q == '\r')) q++;
        if (q < end && *q == '\n') { /* blank line */
            p = q + 1;
            line++;
            continue;
        }
        if (q >= end) break;
        char *fields[32];
        const int n = csv_record(&p, end, fields, 32, &line);
        line++;
        zaya_mc_doc *d = NULL;
        if (n < 0) s = zaya_error_set(ZAYA_EFORMAT, "unterminated quoted CSV field");
        else if (n < 4 || n > 32)
            s = zaya_error_set(ZAYA_EFORMAT, "%d CSV fields: want question,A,B,C,D,answer", n);
        if (s == ZAYA_OK) s = push(set, &cap, &d);
        int64_t answer = -1;
        if (s == ZAYA_OK) s = mmlu_answer(fields[n - 1], &answer);
        if (s == ZAYA_OK) s = mmlu_doc(subject, fields[0], (const char *const *)fields + 1, n - 2, answer, d);
        if (s == ZAYA_OK) {
            d->line = at;
            set->n++;
        } else {
            if (d) doc_free(d);
            s = zaya_error_context(s, "%s:%lld", path, (long long)at);
        }
    }
    free(subject);
    set->format = ZAYA_MC_MMLU;
    return s;
}

static zaya_status read_json_array(const char *path, const char *data, zaya_mc_format fmt, const parse_ctx *pc,
                                   zaya_mc_docs *set) {
    cJSON *root = NULL;
    zaya_status s = zaya_json_parse(data, path, &root);
    if (s != ZAYA_OK) return s;
    int64_t cap = 0, i = 0;
    for (const cJSON *o = root->child; o && s == ZAYA_OK; o = o->next) {
        zaya_mc_doc *d = NULL;
        i++;
        s = push(set, &cap, &d);
        if (s == ZAYA_OK) s = parse_record(o, &fmt, pc, d);
        if (s == ZAYA_OK) {
            d->line = i;
            set->n++;
        } else {
            if (d) doc_free(d);
            s = zaya_error_context(s, "%s: item %lld", path, (long long)i);
        }
    }
    cJSON_Delete(root);
    set->format = fmt;
    return s;
}

static zaya_status read_jsonl(const char *path, char *data, size_t len, zaya_mc_format fmt, const parse_ctx *pc,
                              zaya_mc_docs *set) {
    int64_t cap = 0, lineno = 0;
    zaya_status s = ZAYA_OK;
    for (char *p = data; p < data + len && s == ZAYA_OK;) {
        char *nl = memchr(p, '\n', (size_t)(data + len - p));
        char *end = nl ? nl : data + len;
        *end = '\0';
        lineno++;
        char *q = p;
        while (*q == ' ' || *q == '\t' || *q == '\r') q++;
        if (*q) {
            zaya_mc_doc *d = NULL;
            cJSON *o = NULL;
            s = push(set, &cap, &d);
            if (s == ZAYA_OK) s = zaya_json_parse(q, "record", &o);
            if (s == ZAYA_OK) s = parse_record(o, &fmt, pc, d);
            cJSON_Delete(o);
            if (s == ZAYA_OK) {
                d->line = lineno;
                set->n++;
            } else {
                if (d) doc_free(d);
                s = zaya_error_context(s, "%s:%lld", path, (long long)lineno);
            }
        }
        p = end + 1;
    }
    set->format = fmt;
    return s;
}

/* PIQA's released splits keep the labels apart: train.jsonl + train-labels.lst, one per line. */
static zaya_status piqa_labels(const char *path, zaya_mc_docs *set) {
    int64_t first = -1;
    for (int64_t i = 0; i < set->n && first < 0; i++)
        if (set->docs[i].label < 0) first = i;
    if (first < 0) return ZAYA_OK;
    char *lp = xprintf("%s", path);
    if (!lp) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    char *dot = strrchr(lp, '.'), *slash = strrchr(lp, '/');
    if (dot && (!slash || dot > slash)) *dot = '\0';
    char *full = xprintf("%s-labels.lst", lp);
    free(lp);
    if (!full) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    char *data = NULL;
    size_t len = 0;
    zaya_status s = zaya_read_file(full, &data, &len);
    if (s != ZAYA_OK) {
        s = zaya_error_set(ZAYA_EFORMAT, "%s:%lld: missing field 'label' and no labels file '%s'", path,
                           (long long)set->docs[first].line, full);
        free(full);
        return s;
    }
    int64_t k = 0, lineno = 0;
    for (char *p = data; p < data + len && s == ZAYA_OK;) {
        char *nl = memchr(p, '\n', (size_t)(data + len - p));
        char *end = nl ? nl : data + len;
        *end = '\0';
        lineno++;
        char *q = strip_dup(p, strlen(p));
        if (!q) s = zaya_error_set(ZAYA_ENOMEM, "out of memory");
        else if (q[0]) {
            if (k >= set->n) {
                s = zaya_error_set(ZAYA_EFORMAT, "%s:%lld: more labels than the %lld records of '%s'", full,
                                   (long long)lineno, (long long)set->n, path);
            } else if (strcmp(q, "0") != 0 && strcmp(q, "1") != 0) {
                s = zaya_error_set(ZAYA_EFORMAT, "%s:%lld: label '%s' is not 0 or 1", full, (long long)lineno, q);
            } else {
                if (set->docs[k].label < 0) set->docs[k].label = q[0] - '0';
                k++;
            }
        }
        free(q);
        p = end + 1;
    }
    if (s == ZAYA_OK && k != set->n)
        s = zaya_error_set(ZAYA_EFORMAT, "%s has %lld labels for the %lld records of '%s'", full, (long long)k,
                           (long long)set->n, path);
    free(data);
    free(full);
    return s;
}

zaya_status zaya_mc_read(const char *path, zaya_mc_format fmt, zaya_mc_docs *out) {
    memset(out, 0, sizeof *out);
    char *data = NULL;
    size_t len = 0;
    ZAYA_TRY(zaya_read_file(path, &data, &len));
    char *body = data;
    if (len >= 3 && memcmp(body, "\xEF\xBB\xBF", 3) == 0) body += 3; /* UTF-8 byte order mark */
    const size_t blen = len - (size_t)(body - data);
    const char *first = body;
    while (first < body + blen && is_space(*first)) first++;
    zaya_mc_docs set = {0};
    parse_ctx pc = {NULL};
    zaya_status s;
    const int csv = (fmt == ZAYA_MC_AUTO || fmt == ZAYA_MC_MMLU) && ends_with(path, ".csv");
    if (csv) {
        s = read_csv(path, body, blen, &set);
    } else if (first < body + blen && *first == '[') {
        s = read_json_array(path, body, fmt, &pc, &set);
    } else {
        s = read_jsonl(path, body, blen, fmt, &pc, &set);
    }
    free(data);
    if (s == ZAYA_OK && set.n == 0) s = zaya_error_set(ZAYA_EFORMAT, "%s: no items", path);
    if (s == ZAYA_OK && set.format == ZAYA_MC_PIQA) s = piqa_labels(path, &set);
    if (s != ZAYA_OK) {
        zaya_mc_docs_free(&set);
        return s;
    }
    *out = set;
    return ZAYA_OK;
}
