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

/* The same for the Llama-3 / GPT-4 (cl100k) pattern
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * (Split with behavior Isolated), with invalid UTF-8 bytes as "other" characters as above. */
size_t zaya_pretok_next_llama3(const uint8_t *s, size_t n, size_t i);

/* The same for the Qwen2 pattern: the Llama-3 one with single digits (\p{N} for \p{N}{1,3}). */
size_t zaya_pretok_next_qwen2(const uint8_t *s, size_t n, size_t i);

/* HF's Digits pre-tokenizer (\p{N} characters isolated: each alone when `individual`, else runs),
 * followed by ByteLevel: the GPT-2 pattern within the other pieces when `regex`, else each piece is
 * one word. */
size_t zaya_pretok_next_digits(const uint8_t *s, size_t n, size_t i, int individual, int regex);

/* The same for the o200k (GPT-4o) pattern (ZAYA_O200K_PATTERN in tokenizer_json_pipeline.c): words
 * split at case changes with an optional trailing contraction, digits in threes, punctuation runs
 * with trailing newlines or '/', whitespace as above. */
size_t zaya_pretok_next_o200k(const uint8_t *s, size_t n, size_t i);

#endif
