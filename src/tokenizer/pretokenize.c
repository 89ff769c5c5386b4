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
