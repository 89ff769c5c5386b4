# The loaders of untrusted input that have a libFuzzer harness (tests/fuzz/fuzz_<name>.c).
set(ZAYA_FUZZ_HARNESSES model_config arch_config safetensors ckpt_manifest shard tokenizer_json run_file hw_profile
    eval_jsonl heartbeat tokenizer_pipeline)
