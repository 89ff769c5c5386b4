#include "tokenizer/unicode.h"

#include <stdlib.h>
#include <string.h>

int zaya_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp) {
    uint8_t b = s[0];
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    int len;
    uint32_t c, min;
    if (b >= 0xC2 && b <= 0xDF) { len = 2; c = b & 0x1F; min = 0x80; }
    else if (b >= 0xE0 && b <= 0xEF) { len = 3; c = b & 0x0F; min = 0x800; }
    else if (b >= 0xF0 && b <= 0xF4) { len = 4; c = b & 0x07; min = 0x10000; }
    else { *cp = UINT32_MAX; return 1; }
    if ((size_t)len > n) { *cp = UINT32_MAX; return 1; }
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) { *cp = UINT32_MAX; return 1; }
        c = (c << 6) | (s[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) { *cp = UINT32_MAX; return 1; }
    *cp = c;
    return len;
}

int zaya_utf8_encode(uint32_t cp, uint8_t *out) {
    if (cp < 0x80) { out[0] = (uint8_t)cp; return 1; }
    if (cp < 0x800) { out[0] = (uint8_t)(0xC0 | (cp >> 6)); out[1] = (uint8_t)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | (cp >> 12));
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | (cp >> 18));
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

static int in_ranges(const zaya_unicode_range *r, int n, uint32_t cp) {
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < r[mid].lo) hi = mid - 1;
        else if (cp > r[mid].hi) lo = mid + 1;
        else return 1;
    }
    return 0;
}

zaya_char_class zaya_unicode_class(uint32_t cp) {
    if (cp == UINT32_MAX) return ZAYA_CHAR_OTHER;
    if (in_ranges(zaya_unicode_letters, zaya_unicode_letters_count, cp)) return ZAYA_CHAR_LETTER;
    if (in_ranges(zaya_unicode_numbers, zaya_unicode_numbers_count, cp)) return ZAYA_CHAR_NUMBER;
    if (in_ranges(zaya_unicode_spaces, zaya_unicode_spaces_count, cp)) return ZAYA_CHAR_SPACE;
    return ZAYA_CHAR_OTHER;
}

int zaya_unicode_case(uint32_t cp) {
    if (cp == UINT32_MAX) return 0;
    if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? ZAYA_CASE_UP : (cp >= 'a' && cp <= 'z') ? ZAYA_CASE_LOW : 0;
    if (in_ranges(zaya_unicode_upper, zaya_unicode_upper_count, cp)) return ZAYA_CASE_UP;
    if (in_ranges(zaya_unicode_lower, zaya_unicode_lower_count, cp)) return ZAYA_CASE_LOW;
    if (in_ranges(zaya_unicode_lmlo, zaya_unicode_lmlo_count, cp)) return ZAYA_CASE_UP | ZAYA_CASE_LOW;
    if (in_ranges(zaya_unicode_marks, zaya_unicode_marks_count, cp)) return ZAYA_CASE_UP | ZAYA_CASE_LOW | ZAYA_CASE_MARK;
    return 0;
}

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) map to
 * themselves; the other 68 bytes map, in byte order, to U+0100, U+0101, ... so that every byte has a
 * visible, non-space character. */
const uint16_t zaya_byte_to_cp[256] = {
    0x100, 0x101, 0x102, 0x103, 0x104, 0x105, 0x106, 0x107, 0x108, 0x109, 0x10A, 0x10B, 0x10C, 0x10D, 0x10E, 0x10F,
    0x110, 0x111, 0x112, 0x113, 0x114, 0x115, 0x116, 0x117, 0x118, 0x119, 0x11A, 0x11B, 0x11C, 0x11D, 0x11E, 0x11F,
    0x120, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x2D, 0x2E, 0x2F,
    0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3A, 0x3B, 0x3C, 0x3D, 0x3E, 0x3F,
    0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4A, 0x4B, 0x4C, 0x4D, 0x4E, 0x4F,
    0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5A, 0x5B, 0x5C, 0x5D, 0x5E, 0x5F,
    0x60, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6A, 0x6B, 0x6C, 0x6D, 0x6E, 0x6F,
    0x70, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7A, 0x7B, 0x7C, 0x7D, 0x7E, 0x121,
    0x122, 0x123, 0x124, 0x125, 0x126, 0x127, 0x128, 0x129, 0x12A, 0x12B, 0x12C, 0x12D, 0x12E, 0x12F, 0x130, 0x131,
    0x132, 0x133, 0x134, 0x135, 0x136, 0x137, 0x138, 0x139, 0x13A, 0x13B, 0x13C, 0x13D, 0x13E, 0x13F, 0x140, 0x141,
    0x142, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8, 0xA9, 0xAA, 0xAB, 0xAC, 0x143, 0xAE, 0xAF,
    0xB0, 0xB1, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB7, 0xB8, 0xB9, 0xBA, 0xBB, 0xBC, 0xBD, 0xBE, 0xBF,
    0xC0, 0xC1, 0xC2, 0xC3, 0xC4, 0xC5, 0xC6, 0xC7, 0xC8, 0xC9, 0xCA, 0xCB, 0xCC, 0xCD, 0xCE, 0xCF,
    0xD0, 0xD1, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8, 0xD9, 0xDA, 0xDB, 0xDC, 0xDD, 0xDE, 0xDF,
    0xE0, 0xE1, 0xE2, 0xE3, 0xE4, 0xE5, 0xE6, 0xE7, 0xE8, 0xE9, 0xEA, 0xEB, 0xEC, 0xED, 0xEE, 0xEF,
    0xF0, 0xF1, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xF8, 0xF9, 0xFA, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF,
};

int zaya_cp_to_byte(uint32_t cp) {
    if ((cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF)) return (int)cp;
    /* U+0100.. are the 68 other bytes in order: 0x00..0x20, 0x7F..0xA0, 0xAD. */
    if (cp < 0x100 || cp > 0x143) return -1;
    int k = (int)(cp - 0x100);
    if (k < 33) return k;
    if (k < 67) return 0x7F + (k - 33);
    return 0xAD;
}

/* ---- normalization (UAX #15): decompose, order marks by combining class, compose ---- */

#define INVALID_UNIT 0x80000000u /* | byte: a byte that is not valid UTF-8 */
enum { S_BASE = 0xAC00, L_BASE = 0x1100, V_BASE = 0x1161, T_BASE = 0x11A7, L_COUNT = 19, V_COUNT = 21, T_COUNT = 28,
       N_COUNT = V_COUNT * T_COUNT, S_COUNT = L_COUNT * N_COUNT };

static uint32_t ccc_of(uint32_t cp) {
    if (cp < 0x300 || cp & INVALID_UNIT) return 0;
    int lo = 0, hi = zaya_unicode_ccc_count - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < zaya_unicode_ccc_ranges[mid].lo) hi = mid - 1;
        else if (cp > zaya_unicode_ccc_ranges[mid].hi) lo = mid + 1;
        else return zaya_unicode_ccc_ranges[mid].ccc;
    }
    return 0;
}

static const zaya_unicode_decomp *find_decomp(const zaya_unicode_decomp *t, int n, uint32_t cp) {
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < t[mid].cp) hi = mid - 1;
        else if (cp > t[mid].cp) lo = mid + 1;
        else return &t[mid];
    }
    return NULL;
}

static uint32_t compose_pair(uint32_t a, uint32_t b) {
    if (a >= L_BASE && a < L_BASE + L_COUNT && b >= V_BASE && b < V_BASE + V_COUNT)
        return S_BASE + ((a - L_BASE) * V_COUNT + (b - V_BASE)) * T_COUNT;
    if (a >= S_BASE && a < S_BASE + S_COUNT && (a - S_BASE) % T_COUNT == 0 && b > T_BASE && b < T_BASE + T_COUNT)
        return a + (b - T_BASE);
    if ((a | b) & INVALID_UNIT) return 0;
    int lo = 0, hi = zaya_unicode_compose_count - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const zaya_unicode_pair *p = &zaya_unicode_compose[mid];
        if (a < p->a || (a == p->a && b < p->b)) hi = mid - 1;
        else if (a > p->a || b > p->b) lo = mid + 1;
        else return p->c;
    }
    return 0;
}

typedef struct cp_buf {
    uint32_t *v;
    size_t n, cap, bytes, limit; /* bytes: UTF-8 length of v so far, checked against limit */
    int over;
} cp_buf;

static int utf8_len_of(uint32_t cp) { return cp & INVALID_UNIT ? 1 : cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

static int cp_push(cp_buf *b, uint32_t cp) {
    b->bytes += (size_t)utf8_len_of(cp);
    if (b->bytes > b->limit) {
        b->over = 1;
        return -1;
    }
    if (b->n == b->cap) {
        size_t c = b->cap ? 2 * b->cap : 64;
        uint32_t *v = realloc(b->v, c * sizeof *v);
        if (!v) return -1;
        b->v = v;
        b->cap = c;
    }
    b->v[b->n++] = cp;
    return 0;
}

/* Stable sort of a run of marks by combining class: insertion for short runs, counting for long
 * ones (so a long run of marks stays linear). */
static int order_run(uint32_t *v, size_t n) {
    if (n <= 32) {
        for (size_t i = 1; i < n; i++) {
            uint32_t x = v[i], cx = ccc_of(x);
            size_t j = i;
            while (j > 0 && ccc_of(v[j - 1]) > cx) v[j] = v[j - 1], j--;
            v[j] = x;
        }
        return 0;
    }
    uint32_t *tmp = malloc(n * sizeof *tmp);
    if (!tmp) return -1;
    size_t count[257] = {0};
    for (size_t i = 0; i < n; i++) count[ccc_of(v[i]) + 1]++;
    for (int c = 1; c < 257; c++) count[c] += count[c - 1];
    for (size_t i = 0; i < n; i++) tmp[count[ccc_of(v[i])]++] = v[i];
    memcpy(v, tmp, n * sizeof *v);
    free(tmp);
    return 0;
}

int zaya_unicode_normalize(zaya_unicode_form form, const uint8_t *s, size_t n, size_t limit, uint8_t **out, size_t *out_len) {
    *out = NULL;
    size_t ascii = 0;
    while (ascii < n && s[ascii] < 0x80) ascii++;
    if (ascii == n) { /* ASCII is the same in every form */
        if (n > limit) return -2;
        if (!(*out = malloc(n + 1))) return -1;
        memcpy(*out, s, n);
        *out_len = n;
        return 0;
    }
    int compat = form == ZAYA_NFKC || form == ZAYA_NFKD, comp = form == ZAYA_NFC || form == ZAYA_NFKC;
    cp_buf b = {NULL, 0, 0, 0, limit, 0};
    int err = 0;
    for (size_t i = 0; !err && i < n;) {
        uint32_t cp;
        int len = zaya_utf8_decode(s + i, n - i, &cp);
        if (cp == UINT32_MAX) cp = INVALID_UNIT | s[i];
        i += (size_t)len;
        if (cp >= S_BASE && cp < S_BASE + S_COUNT) {
            uint32_t k = cp - S_BASE;
            err = cp_push(&b, L_BASE + k / N_COUNT) || cp_push(&b, V_BASE + (k % N_COUNT) / T_COUNT);
            if (!err && k % T_COUNT) err = cp_push(&b, T_BASE + k % T_COUNT);
            continue;
        }
        const zaya_unicode_decomp *d = NULL;
        if (cp >= 0xA0 && !(cp & INVALID_UNIT)) {
            if (compat) d = find_decomp(zaya_unicode_compat, zaya_unicode_compat_count, cp);
            if (!d) d = find_decomp(zaya_unicode_canon, zaya_unicode_canon_count, cp);
        }
        if (!d) {
            err = cp_push(&b, cp);
            continue;
        }
        for (uint32_t k = 0; !err && k < d->len; k++) {
            uint32_t x = zaya_unicode_decomp_pool[d->off + k];
            if (x >= S_BASE && x < S_BASE + S_COUNT) { /* compatibility forms of Hangul syllables */
                uint32_t h = x - S_BASE;
                err = cp_push(&b, L_BASE + h / N_COUNT) || cp_push(&b, V_BASE + (h % N_COUNT) / T_COUNT);
                if (!err && h % T_COUNT) err = cp_push(&b, T_BASE + h % T_COUNT);
            } else {
                err = cp_push(&b, x);
            }
        }
    }
    /* Canonical ordering of every run of non-starters. */
    for (size_t i = 0; !err && i < b.n;) {
        if (!ccc_of(b.v[i])) { i++; continue; }
        size_t j = i;
        while (j < b.n && ccc_of(b.v[j])) j++;
        err = j - i > 1 ? order_run(b.v + i, j - i) : 0;
        i = j;
    }
    size_t m = b.n;
    if (!err && comp) {
        size_t k = 0;
        ptrdiff_t starter = -1;
        int last = -1; /* combining class of the last character kept after the starter; -1: none */
        for (size_t i = 0; i < b.n; i++) {
            uint32_t ch = b.v[i];
            int cc = (int)ccc_of(ch);
            if (starter >= 0 && (last == -1 || (last != 0 && last < cc))) {
                uint32_t c = compose_pair(b.v[starter], ch);
                if (c) {
                    b.v[starter] = c;
                    continue;
                }
            }
            if (cc == 0) {
                starter = (ptrdiff_t)k;
                last = -1;
            } else {
                last = cc;
            }
            b.v[k++] = ch;
        }
        m = k;
    }
    uint8_t *o = err ? NULL : malloc(b.bytes + 1);
    if (o) {
        size_t k = 0;
        for (size_t i = 0; i < m; i++) {
            if (b.v[i] & INVALID_UNIT) o[k++] = (uint8_t)(b.v[i] & 0xFF);
            else k += (size_t)zaya_utf8_encode(b.v[i], o + k);
        }
        *out = o;
        *out_len = k;
    }
    free(b.v);
    return o ? 0 : b.over ? -2 : -1;
}
