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

/* GPT-2 byte-level alphabet: byte b <-> code point zaya_byte_to_cp[b]. */
extern const uint16_t zaya_byte_to_cp[256];
/* Byte for a code point of the alphabet, or -1. */
int zaya_cp_to_byte(uint32_t cp);

#endif
