/* Shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.c) and the seed-corpus writer (seeds.c):
 * a private scratch directory, file writes into it, an always-on assertion, and the fixtures whose
 * bytes both sides must agree on (the checkpoint the manifest harness opens, the tokenizer the eval
 * harness tokenizes with). See docs/fuzzing.md. */
#ifndef ZAYA_FUZZ_COMMON_H
#define ZAYA_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "zaya/status.h"
#include "zaya/tokenizer.h"

/* Invariant of a loader's result: abort (libFuzzer reports a crash with the input) when it fails. */
#define FUZZ_ASSERT(cond)                                                                           \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            fprintf(stderr, "fuzz invariant failed at %s:%d: %s\n", __FILE__, __LINE__, #cond);     \
            abort();                                                                                \
        }                                                                                           \
    } while (0)

/* A scratch directory of this process (under /dev/shm when it exists), removed at exit. */
const char *fuzz_dir(void);
/* Writes data to fuzz_dir()/name; returns the path (static buffer) or aborts. */
const char *fuzz_write(const char *name, const void *data, size_t size);
/* Parses the input as zaya_json_load_file parses a file (a NUL byte is rejected); NULL when it is
 * not JSON. */
struct cJSON *fuzz_parse_json(const uint8_t *data, size_t size);
/* A NUL-terminated copy (malloc'd). */
char *fuzz_cstr(const uint8_t *data, size_t size);
/* Called by a harness when the loader accepted its input; the replay driver checks that every seed
 * written by zaya itself is accepted. */
extern int fuzz_accepted;
static inline void fuzz_accept(void) { fuzz_accepted++; }
/* Quiet logging and no leftover error state between inputs. */
void fuzz_quiet(void);

/* The checkpoint the manifest harness loads: step 1 of root with two model tensors and one sharded
 * array (deterministic contents, so the manifest written by seeds.c matches the harness's files). */
zaya_status fuzz_make_checkpoint(const char *root);
/* A valid, very small ZAYA1 config (a few thousand parameters) for the model-level harnesses. */
struct zaya_config;
void fuzz_tiny_config(struct zaya_config *c);
/* Step 1 of root: every tensor of fuzz_tiny_config's model (deterministic values) plus its
 * model_config section: the checkpoint the verify harness checks. */
zaya_status fuzz_make_model_checkpoint(const char *root);
/* A small byte-level BPE tokenizer trained on a fixed text, with bos/eos/pad tokens. */
zaya_status fuzz_make_tokenizer(zaya_tokenizer **out);

#endif
