/* Pre-tokenization exactly as HF's ByteLevel pre-tokenizer with use_regex=true, i.e. the GPT-2 pattern
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * matched leftmost-first over UTF-8 text, written as a hand-made scanner.
 *
 * Invalid UTF-8: every byte that does not start a valid sequence is one character of the "other"
 * class (as if it were U+FFFD), so it joins a run of punctuation/symbols (optionally led by one space)
 * and never merges with letters, digits or whitespace. Pre-tokens always cover the input exactly, so
 * byte-level encoding round-trips any byte string. */
#ifndef ZAYA_TOKENIZER_PRETOKENIZE_H
#define ZAYA_TOKENIZER_PRETOKENIZE_H

#include <stddef.h>
#include <stdint.h>

/* Returns the end of the pre-token that starts at i (i < n); the next one starts there. */
size_t zaya_pretok_next(const uint8_t *s, size_t n, size_t i);

#endif
