/* zaya study: controlled architecture comparisons through the real trainer (docs/study.md). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/ft_protocol.h"
#include "zaya/study.h"

int zaya_cmd_study(int argc, char **argv) {
    zaya_study_opts o;
    zaya_study_opts_default(&o);
    const char *study_items[16], *variant_items[64];
    zaya_flag_list studies = {study_items, 16, 0}, variants = {variant_items, 64, 0};
    zaya_flag flags[] = {
        {"study", 's', ZAYA_FLAG_LIST, &studies, "NAME[,NAME]", "built-in study to run (see --list)"},
        {"variants", 0, ZAYA_FLAG_LIST, &variants, "NAME[,NAME]", "run only these variants of the selected studies (default: all)"},
        {"list", 'l', ZAYA_FLAG_BOOL, &o.list, NULL, "list the built-in studies, their variants, run counts and expected wall time"},
        {"seeds", 0, ZAYA_INT_IN(&o.seeds, 2, 1000), "N", "seeds per variant, >= 2 (default 2)"},
        {"steps", 0, ZAYA_I64_IN(&o.steps, 1, ZAYA_FLAG_NO_MAX), "N", "steps per run (default: the study's own, see --list)"},
        ZAYA_FLAG_OUTDIR(&o.out_dir, "out/study"),
        {"data", 'd', ZAYA_FLAG_STRING, &o.data_dir, "DIR", "shards + tokenizer.json (default: the built-in corpus in OUT/data)"},
        ZAYA_FLAG_THREADS(&o.threads),
    };
    zaya_cmd_spec spec = {"study", "controlled architecture comparisons through the real trainer", "--study NAME [options]",
                          "Each variant trains once per seed through the code path of `zaya train`, at equal tokens and "
                          "seeds; the table reports mean and spread of the final validation loss over the seeds. "
                          "Rerunning with the same -o resumes interrupted runs and skips finished ones. Writes "
                          "OUT/study.{json,csv}, OUT/<study>/table.{txt,json,csv}, OUT/<study>/val_loss.png and one "
                          "directory per run.",
                          flags, (int)(sizeof flags / sizeof flags[0])};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos) return zaya_flags_usage_error(&spec, "unexpected argument '%s'", args.pos[0]);
    char slist[1024] = "", vlist[2048] = "";
    for (int i = 0; i < studies.n; i++) snprintf(slist + strlen(slist), sizeof slist - strlen(slist), "%s%s", i ? "," : "", study_items[i]);
    for (int i = 0; i < variants.n; i++) snprintf(vlist + strlen(vlist), sizeof vlist - strlen(vlist), "%s%s", i ? "," : "", variant_items[i]);
    o.studies = slist;
    o.variants = variants.n ? vlist : NULL;
    zaya_study_result r;
    if (zaya_study_run(&o, &r) != ZAYA_OK) {
        if (r.usage_error) return zaya_flags_usage_error(&spec, "%s", zaya_error_message());
        return zaya_cli_error("study", NULL);
    }
    if (o.list) return 0;
    if (r.preempted) {
        printf("interrupted: %d of %d runs finished; %s; run the same command again (same -o %s) to resume: "
               "finished runs are skipped, an interrupted one continues from its checkpoint\n",
               r.runs_done + r.runs_skipped, r.runs_total,
               r.between_runs ? "stopped before starting the next run" : "the running one saved a checkpoint", o.out_dir);
        return ZAYA_FT_EXIT_PREEMPTED;
    }
    printf("%d runs: %d trained now, %d finished earlier; %.1f s\n", r.runs_total, r.runs_done, r.runs_skipped, r.seconds);
    return 0;
}
