# The loaders of untrusted input that have a libFuzzer harness (tests/fuzz/fuzz_<name>.c).
set(ZAYA_FUZZ_HARNESSES model_config arch_config safetensors ckpt_manifest shard tokenizer_json run_file hw_profile
    eval_jsonl heartbeat foreign_header prepare_jsonl hf_dir ckpt_verify tokenizer_pipeline)
