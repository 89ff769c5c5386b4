/* The command tree of the `zaya` executable.
 *
 * zaya_commands is a flat table, one line per command: (group, name, summary, function). A command
 * with group NULL is top-level (`zaya train`); others are `zaya <group> <name>`. Group summaries live
 * in zaya_groups. Each function receives the arguments after its own name and returns the exit code
 * (0 ok, 1 runtime failure, 2 usage error). Tables end with a zeroed entry. */
#ifndef ZAYA_CLI_COMMANDS_H
#define ZAYA_CLI_COMMANDS_H

typedef int (*zaya_cmd_fn)(int argc, char **argv);

typedef struct zaya_command {
    const char *group; /* NULL for top-level commands */
    const char *name;
    const char *summary;
    zaya_cmd_fn run;
} zaya_command;

typedef struct zaya_group {
    const char *name;
    const char *summary;
} zaya_group;

extern const zaya_command zaya_commands[];
extern const zaya_group zaya_groups[];

int zaya_cli_main(int argc, char **argv);

/* Leaf commands (one cmd_*.c file per command or group). */
int zaya_cmd_train(int argc, char **argv);         /* cmd_train.c */
int zaya_cmd_supervise(int argc, char **argv);     /* cmd_supervise.c */
int zaya_cmd_study(int argc, char **argv);         /* cmd_study.c */
int zaya_cmd_model_info(int argc, char **argv);    /* cmd_model.c */
int zaya_cmd_data_prepare(int argc, char **argv);  /* cmd_data_prepare.c */
int zaya_cmd_data_inspect(int argc, char **argv);  /* cmd_data.c */
int zaya_cmd_data_validate(int argc, char **argv); /* cmd_data.c */
int zaya_cmd_data_bench(int argc, char **argv);    /* cmd_data.c */
int zaya_cmd_size_info(int argc, char **argv);     /* cmd_size.c */
int zaya_cmd_size_check(int argc, char **argv);    /* cmd_size.c */
int zaya_cmd_size_predict(int argc, char **argv);  /* cmd_size.c */
int zaya_cmd_size_search(int argc, char **argv);   /* cmd_size.c */
int zaya_cmd_size_validate(int argc, char **argv); /* cmd_size_validate.c */
int zaya_cmd_tokenizer_train(int argc, char **argv);  /* cmd_tokenizer.c */
int zaya_cmd_tokenizer_encode(int argc, char **argv); /* cmd_tokenizer.c */
int zaya_cmd_tokenizer_decode(int argc, char **argv); /* cmd_tokenizer.c */
int zaya_cmd_tokenizer_bench(int argc, char **argv);  /* cmd_tokenizer_bench.c */
int zaya_cmd_bench_coll(int argc, char **argv);    /* cmd_bench_coll.c */
int zaya_cmd_bench_mem(int argc, char **argv);     /* cmd_bench_mem.c */
int zaya_cmd_bench_gemm(int argc, char **argv);    /* cmd_bench_gemm.c */
int zaya_cmd_ckpt_info(int argc, char **argv);        /* cmd_ckpt.c */
int zaya_cmd_ckpt_verify(int argc, char **argv);      /* cmd_ckpt.c */
int zaya_cmd_ckpt_consolidate(int argc, char **argv); /* cmd_ckpt.c */
int zaya_cmd_ckpt_reshape(int argc, char **argv);     /* cmd_ckpt.c */
int zaya_cmd_ckpt_export_hf(int argc, char **argv);   /* cmd_ckpt.c */
int zaya_cmd_ckpt_import_hf(int argc, char **argv);   /* cmd_ckpt.c */
int zaya_cmd_ckpt_bench(int argc, char **argv);       /* cmd_ckpt_bench.c */
int zaya_cmd_generate(int argc, char **argv);      /* cmd_generate.c */
int zaya_cmd_eval(int argc, char **argv);          /* cmd_eval.c */
int zaya_cmd_bench_infer(int argc, char **argv);   /* cmd_bench_infer.c */
int zaya_cmd_bench_kernels(int argc, char **argv); /* cmd_bench_kernels.c */
int zaya_cmd_bench_train(int argc, char **argv);   /* cmd_bench_model.c */
int zaya_cmd_bench_model(int argc, char **argv);   /* cmd_bench_model.c */
int zaya_cmd_bench_all(int argc, char **argv);     /* cmd_bench_all.c */

#endif
