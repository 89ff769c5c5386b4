/* UTF-8 decoding and the character classes of the GPT-2 pre-tokenizer pattern, plus the GPT-2
 * byte <-> unicode mapping used by byte-level BPE vocabularies. */
#ifndef ZAYA_TOKENIZER_UNICODE_H
#define ZAYA_TOKENIZER_UNICODE_H

#include <stddef.h>
#include <stdint.h>

typedef struct zaya_unicode_range {
    uint32_t lo, hi; /* inclusive */
} zaya_unicode_range;

extern const zaya_unicode_range zaya_unicode_letters[], zaya_unicode_numbers[], zaya_unicode_spaces[];
extern const int zaya_unicode_letters_count, zaya_unicode_numbers_count, zaya_unicode_spaces_count;

/* Classes for \p{L}, \p{N}, \s and everything else. Bytes that are not part of a valid UTF-8 sequence
 * are ZAYA_CHAR_OTHER (like U+FFFD, a symbol), so they join punctuation runs. */
typedef enum zaya_char_class { ZAYA_CHAR_OTHER = 0, ZAYA_CHAR_LETTER, ZAYA_CHAR_NUMBER, ZAYA_CHAR_SPACE } zaya_char_class;

/* Decodes one code point at s[0..n) (n >= 1). Returns its length in bytes (1..4) and stores the code
 * point, or returns 1 with *cp = UINT32_MAX for an invalid byte (bad lead or continuation, overlong
 * form, surrogate, > U+10FFFF, truncated sequence). */
int zaya_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp);
/* Appends the UTF-8 encoding of cp to out (>= 4 bytes free); returns the length. */
int zaya_utf8_encode(uint32_t cp, uint8_t *out);
zaya_char_class zaya_unicode_class(uint32_t cp);

/* Letter case classes of the o200k pattern: UP for [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], LOW for
 * [\p{Ll}\p{Lm}\p{Lo}\p{M}] (Lm, Lo and marks are both), MARK for \p{M}; 0 for anything else. */
enum { ZAYA_CASE_UP = 1, ZAYA_CASE_LOW = 2, ZAYA_CASE_MARK = 4 };
extern const zaya_unicode_range zaya_unicode_upper[], zaya_unicode_lower[], zaya_unicode_lmlo[], zaya_unicode_marks[];
extern const int zaya_unicode_upper_count, zaya_unicode_lower_count, zaya_unicode_lmlo_count, zaya_unicode_marks_count;
int zaya_unicode_case(uint32_t cp);

/* Unicode versions of the tables: the character classes (HF's regex engine) and the normalization
 * data (HF's normalizers). */
extern const char zaya_unicode_version[], zaya_unicode_norm_version[];

/* Normalization data (scripts/gen_unicode_tables.py): combining classes by range, full canonical and
 * compatibility decompositions (sorted by code point; `len` code points at `off` in the pool) and the
 * primary composites (sorted by (a, b)). */
typedef struct zaya_unicode_ccc { uint32_t lo, hi, ccc; } zaya_unicode_ccc;
typedef struct zaya_unicode_decomp { uint32_t cp, off, len; } zaya_unicode_decomp;
typedef struct zaya_unicode_pair { uint32_t a, b, c; } zaya_unicode_pair;
extern const zaya_unicode_ccc zaya_unicode_ccc_ranges[];
extern const zaya_unicode_decomp zaya_unicode_canon[], zaya_unicode_compat[];
extern const uint32_t zaya_unicode_decomp_pool[];
extern const zaya_unicode_pair zaya_unicode_compose[];
extern const int zaya_unicode_ccc_count, zaya_unicode_canon_count, zaya_unicode_compat_count, zaya_unicode_decomp_pool_count,
    zaya_unicode_compose_count;

/* The four normalization forms (HF's NFC / NFD / NFKC / NFKD normalizers). */
typedef enum zaya_unicode_form { ZAYA_NFC = 1, ZAYA_NFD, ZAYA_NFKC, ZAYA_NFKD } zaya_unicode_form;
/* Normalizes s[0..n) into a malloc'd *out / *out_len. Bytes that are not valid UTF-8 pass through
 * unchanged and block composition. Returns 0; -2 when the result would exceed `limit` bytes, -1 when
 * memory runs out (*out is then NULL). */
int zaya_unicode_normalize(zaya_unicode_form form, const uint8_t *s, size_t n, size_t limit, uint8_t **out, size_t *out_len);

/* GPT-2 byte-level alphabet: byte b <-> code point zaya_byte_to_cp[b]. */
extern const uint16_t zaya_byte_to_cp[256];
/* Byte for a code point of the alphabet, or -1. */
int zaya_cp_to_byte(uint32_t cp);

#endif
