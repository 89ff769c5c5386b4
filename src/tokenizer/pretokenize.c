#include "tokenizer/pretokenize.h"

#include "tokenizer/unicode.h"

/* ASCII classes, so the common case needs no decoding or table search. */
static const uint8_t ascii_class[128] = {
    ['\t'] = ZAYA_CHAR_SPACE, ['\n'] = ZAYA_CHAR_SPACE, ['\v'] = ZAYA_CHAR_SPACE, ['\f'] = ZAYA_CHAR_SPACE,
    ['\r'] = ZAYA_CHAR_SPACE, [' '] = ZAYA_CHAR_SPACE,
    ['0'] = ZAYA_CHAR_NUMBER, ['1'] = ZAYA_CHAR_NUMBER, ['2'] = ZAYA_CHAR_NUMBER, ['3'] = ZAYA_CHAR_NUMBER,
    ['4'] = ZAYA_CHAR_NUMBER, ['5'] = ZAYA_CHAR_NUMBER, ['6'] = ZAYA_CHAR_NUMBER, ['7'] = ZAYA_CHAR_NUMBER,
    ['8'] = ZAYA_CHAR_NUMBER, ['9'] = ZAYA_CHAR_NUMBER,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1,
    ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1,
    ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1,
    ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1,
    ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

/* Class of the character at s[i] (i < n); *len receives its byte length. */
static inline int char_at(const uint8_t *s, size_t n, size_t i, int *len) {
    if (s[i] < 0x80) {
        *len = 1;
        return ascii_class[s[i]];
    }
    uint32_t cp;
    *len = zaya_utf8_decode(s + i, n - i, &cp);
    return (int)zaya_unicode_class(cp);
}

/* End of the run of characters of class c starting at i. */
static size_t run_of(const uint8_t *s, size_t n, size_t i, int c) {
    int len;
    while (i < n && char_at(s, n, i, &len) == c) i += (size_t)len;
    return i;
}

/* End of the run of "other" characters (not letter, number or space) starting at i. */
static size_t run_of_other(const uint8_t *s, size_t n, size_t i) {
    int len;
    while (i < n && char_at(s, n, i, &len) == ZAYA_CHAR_OTHER) i += (size_t)len;
    return i;
}

static size_t contraction(const uint8_t *s, size_t n, size_t i) {
    if (s[i] != '\'' || i + 1 >= n) return 0;
    uint8_t a = s[i + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (i + 2 < n) {
        uint8_t b = s[i + 2];
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    }
    return 0;
}

size_t zaya_pretok_next(const uint8_t *s, size_t n, size_t i) {
    size_t k = contraction(s, n, i);
    if (k) return i + k;

    /* ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional single U+0020 then a run. */
    size_t j = (s[i] == ' ' && i + 1 < n) ? i + 1 : i;
    int len;
    int c = char_at(s, n, j, &len);
    if (c != ZAYA_CHAR_SPACE) {
        if (c == ZAYA_CHAR_OTHER) return run_of_other(s, n, j);
        return run_of(s, n, j, c);
    }

    /* Whitespace at i: `\s+(?!\S)` takes the run but leaves its last character when a non-space
     * follows (that character then prefixes the next word); `\s+` takes a lone one. */
    size_t end = i, last = i;
    while (end < n && char_at(s, n, end, &len) == ZAYA_CHAR_SPACE) {
        last = end;
        end += (size_t)len;
    }
    if (end == n || last == i) return end;
    return last;
}

/* ---- Llama-3 / cl100k: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *      ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ ---- */

static inline int is_nl(uint8_t c) { return c == '\r' || c == '\n'; }

/* Case-insensitive contraction after an apostrophe at i; 0 when none. Unicode case folding makes
 * U+017F (long s) match 's' as well. */
static size_t contraction_ci(const uint8_t *s, size_t n, size_t i) {
    if (s[i] != '\'' || i + 1 >= n) return 0;
    uint8_t a = s[i + 1];
    if (a == 0xC5 && i + 2 < n && s[i + 2] == 0xBF) return 3; /* 'ſ */
    a = (a >= 'A' && a <= 'Z') ? (uint8_t)(a | 0x20) : a;
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (i + 2 < n) {
        uint8_t b = s[i + 2];
        b = (b >= 'A' && b <= 'Z') ? (uint8_t)(b | 0x20) : b;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    }
    return 0;
}

/* The alternatives both regex families end with, at i whose class is c: \p{N}{1,digits} |
 *  ?[^\s\p{L}\p{N}]+[\r\n]* (o200k: [\r\n/]*, `slash`) | \s*[\r\n]+ | \s+(?!\S) | \s+. */
static size_t regex_tail(const uint8_t *s, size_t n, size_t i, int c, int slash, int digits) {
    int len2;
    if (c == ZAYA_CHAR_NUMBER) {
        size_t j = i;
        for (int d = 0; d < digits && j < n && char_at(s, n, j, &len2) == ZAYA_CHAR_NUMBER; d++) j += (size_t)len2;
        return j;
    }
    size_t j = (s[i] == ' ' && i + 1 < n) ? i + 1 : i;
    if (char_at(s, n, j, &len2) == ZAYA_CHAR_OTHER) {
        j = run_of_other(s, n, j);
        while (j < n && (is_nl(s[j]) || (slash && s[j] == '/'))) j++;
        return j;
    }
    /* Whitespace at i. \s*[\r\n]+: up to the last newline of the run; \s+(?!\S): all of it at the end of
     * the text, else all but its last character; \s+: a lone one. */
    size_t end = i, last = i, nl_end = 0;
    while (end < n && char_at(s, n, end, &len2) == ZAYA_CHAR_SPACE) {
        last = end;
        if (is_nl(s[end])) nl_end = end + 1;
        end += (size_t)len2;
    }
    if (nl_end) return nl_end;
    if (end == n || last == i) return end;
    return last;
}

static size_t cl100k_like(const uint8_t *s, size_t n, size_t i, int digits) {
    size_t k = contraction_ci(s, n, i);
    if (k) return i + k;
    int len, len2;
    int c = char_at(s, n, i, &len);
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (c == ZAYA_CHAR_LETTER) return run_of(s, n, i, ZAYA_CHAR_LETTER);
    if (c != ZAYA_CHAR_NUMBER && !is_nl(s[i]) && i + (size_t)len < n &&
        char_at(s, n, i + (size_t)len, &len2) == ZAYA_CHAR_LETTER)
        return run_of(s, n, i + (size_t)len, ZAYA_CHAR_LETTER);
    return regex_tail(s, n, i, c, 0, digits);
}

size_t zaya_pretok_next_llama3(const uint8_t *s, size_t n, size_t i) { return cl100k_like(s, n, i, 3); }

size_t zaya_pretok_next_qwen2(const uint8_t *s, size_t n, size_t i) { return cl100k_like(s, n, i, 1); }

/* ---- o200k (GPT-4o):
 *   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
 *   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
 *   \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * with the backtracking of the first two alternatives written out. ---- */

static inline int case_at(const uint8_t *s, size_t n, size_t i, int *len) {
    if (s[i] < 0x80) {
        *len = 1;
        return zaya_unicode_case(s[i]);
    }
    uint32_t cp;
    *len = zaya_utf8_decode(s + i, n - i, &cp);
    return zaya_unicode_case(cp);
}

static size_t run_case(const uint8_t *s, size_t n, size_t j, int mask) {
    int len;
    while (j < n && (case_at(s, n, j, &len) & mask)) j += (size_t)len;
    return j;
}

#define NO_MATCH SIZE_MAX

/* Alternative 1 (UP* LOW+) or 2 (UP+ LOW*) from j, then the optional contraction. */
static size_t o200k_word(const uint8_t *s, size_t n, size_t j, int alt) {
    int len;
    size_t u_end = run_case(s, n, j, ZAYA_CASE_UP), e;
    if (alt == 1) {
        if (u_end < n && (case_at(s, n, u_end, &len) & ZAYA_CASE_LOW)) {
            e = run_case(s, n, u_end, ZAYA_CASE_LOW);
        } else { /* UP* gives back characters until one of them can be the LOW+ */
            size_t k = NO_MATCH, kl = 0;
            for (size_t p = j; p < u_end; p += (size_t)len)
                if (case_at(s, n, p, &len) & ZAYA_CASE_LOW) k = p, kl = (size_t)len;
            if (k == NO_MATCH) return NO_MATCH;
            e = k + kl;
        }
    } else {
        if (u_end == j) return NO_MATCH;
        e = run_case(s, n, u_end, ZAYA_CASE_LOW);
    }
    return e < n ? e + contraction_ci(s, n, e) : e;
}

size_t zaya_pretok_next_o200k(const uint8_t *s, size_t n, size_t i) {
    int len;
    int c = char_at(s, n, i, &len);
    int prefix = !is_nl(s[i]) && c != ZAYA_CHAR_LETTER && c != ZAYA_CHAR_NUMBER;
    for (int alt = 1; alt <= 2; alt++) {
        size_t r;
        if (prefix && i + (size_t)len < n && (r = o200k_word(s, n, i + (size_t)len, alt)) != NO_MATCH) return r;
        if ((r = o200k_word(s, n, i, alt)) != NO_MATCH) return r;
    }
    return regex_tail(s, n, i, c, 1, 3);
}

/* ---- Digits(individual_digits) + ByteLevel ---- */

size_t zaya_pretok_next_digits(const uint8_t *s, size_t n, size_t i, int individual, int regex) {
    int len;
    if (char_at(s, n, i, &len) == ZAYA_CHAR_NUMBER) return individual ? i + (size_t)len : run_of(s, n, i, ZAYA_CHAR_NUMBER);
    /* The piece up to the next number; ByteLevel's regex runs inside it. */
    size_t end = i;
    while (end < n && char_at(s, n, end, &len) != ZAYA_CHAR_NUMBER) end += (size_t)len;
    return regex ? zaya_pretok_next(s, end, i) : end;
}
