/* zaya supervise: run a training job under automated fault tolerance (docs/fault-tolerance.md). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/ft.h"

int zaya_cmd_supervise(int argc, char **argv) {
    zaya_supervise_opts o;
    zaya_supervise_opts_default(&o);
    const char *policy = "record";
    int no_grow = 0;
    zaya_flag flags[] = {
        ZAYA_FLAG_OUTDIR(&o.out_dir, "out/supervise"),
        {"max-restarts", 0, ZAYA_INT_IN(&o.max_restarts, 0, ZAYA_FLAG_NO_MAX), "N", "restarts after failures before giving up (default 10)"},
        {"same-step-limit", 0, ZAYA_INT_IN(&o.same_step_limit, 1, ZAYA_FLAG_NO_MAX), "K", "stop with a diagnosis after K failures in a row at the same step (default 3)"},
        {"backoff", 0, ZAYA_FLAG_DOUBLE, &o.backoff_s, "S", "restart delay, doubled per failure without progress (default 1)"},
        {"backoff-max", 0, ZAYA_FLAG_DOUBLE, &o.backoff_max_s, "S", "largest restart delay (default 30)"},
        {"hang-factor", 0, ZAYA_FLAG_DOUBLE, &o.hang_factor, "X", "section timeout = X x median step time (default 10)"},
        {"hang-floor", 0, ZAYA_FLAG_DOUBLE, &o.hang_floor_s, "S", "smallest section timeout (default 10)"},
        {"hang-cap", 0, ZAYA_FLAG_DOUBLE, &o.hang_cap_s, "S", "largest section timeout (default 600)"},
        {"startup-timeout", 0, ZAYA_FLAG_DOUBLE, &o.startup_timeout_s, "S", "timeout of startup and of a new phase's first steps (default: --hang-cap)"},
        {"eval-timeout", 0, ZAYA_FLAG_DOUBLE, &o.eval_timeout_s, "S", "largest eval timeout, used until steps calibrate it (default 300, <= --hang-cap)"},
        {"save-timeout", 0, ZAYA_FLAG_DOUBLE, &o.save_timeout_s, "S", "timeout of a checkpoint save (default: --hang-cap)"},
        {"grace", 0, ZAYA_FLAG_DOUBLE, &o.grace_s, "S", "SIGTERM to SIGKILL when terminating a job (default 10)"},
        {"preempt-timeout", 0, ZAYA_FLAG_DOUBLE, &o.preempt_timeout_s, "S", "time a preempted job has to save and exit (default 300)"},
        {"straggler-factor", 0, ZAYA_FLAG_DOUBLE, &o.straggler_factor, "X", "report a rank whose busy step time exceeds X x the others' median (default 2)"},
        {"poll", 0, ZAYA_FLAG_DOUBLE, &o.poll_s, "S", "heartbeat polling period (default 0.05)"},
        {"numeric-policy", 0, ZAYA_FLAG_STRING, &policy, "record|rollback", "NaN/Inf and loss spikes: record the trainer's skip, or roll back to the checkpoint before the fault and skip that step (default record)"},
        {"lr-lower", 0, ZAYA_FLAG_DOUBLE, &o.lr_lower, "X", "with rollback: multiply the LR by X for --lr-lower-steps steps after the fault (default 1)"},
        {"lr-lower-steps", 0, ZAYA_I64_IN(&o.lr_lower_steps, 0, ZAYA_FLAG_NO_MAX), "N", "with rollback: steps of lowered LR (default 0)"},
        {"health-check", 0, ZAYA_FLAG_BOOL, &o.health_check, NULL, "exact-integer GEMM self-test before every (re)start"},
        {"hosts", 0, ZAYA_FLAG_STRING, &o.hosts_file, "FILE", "elastic job over the hosts of this Open MPI hostfile (HOST slots=N): each attempt on the hosts that pass the check, the supervisor choosing mpirun's -np and --host (docs/fault-tolerance.md)"},
        {"min-hosts", 0, ZAYA_FLAG_INT, &o.min_hosts, "N", "with --hosts: stop with a diagnosis when fewer than N hosts are healthy (default 1)"},
        {"host-wait", 0, ZAYA_FLAG_DOUBLE, &o.host_wait_s, "S", "with --hosts: after a host loss, wait up to S for it before restarting on the others (default 0)"},
        {"host-check", 0, ZAYA_FLAG_STRING, &o.host_check, "CMD", "with --hosts: the host check, run as CMD HOST, exit 0 = healthy (default: LAUNCHER --host HOST:1 -np 1 ZAYA supervise --help)"},
        {"host-check-timeout", 0, ZAYA_FLAG_DOUBLE, &o.host_check_timeout_s, "S", "with --hosts: a check without an answer within S fails (default 20)"},
        {"host-probe", 0, ZAYA_FLAG_DOUBLE, &o.host_probe_s, "S", "with --hosts: while on fewer hosts, check a lost one again every S (default 2)"},
        {"no-grow-back", 0, ZAYA_FLAG_BOOL, &no_grow, NULL, "with --hosts: stay on the smaller world when a lost host is healthy again (default: checkpoint and grow back)"},
        {"quiet", 'q', ZAYA_FLAG_BOOL, &o.quiet, NULL, "no progress lines or summary table (incidents.jsonl is still written)"},
    };
    zaya_cmd_spec spec = {"supervise", "run a training job under automated fault tolerance", "[options] -- CMD [ARGS...]",
                          "Launches CMD (e.g. `mpirun -np 2 zaya train ...` or `zaya train ...`) in its own process group "
                          "and restarts it from its last good checkpoint after a crash or a hang; records numeric faults, "
                          "loss spikes, stragglers and checkpoint fallbacks. Writes OUT/incidents.jsonl, OUT/summary.json, "
                          "OUT/attempt-NNN.log. Exit status: 0 completed, 75 preempted (SIGTERM/SIGINT: the job saved a "
                          "checkpoint; run again to resume), 1 gave up (diagnosis printed), 2 usage. See "
                          "docs/fault-tolerance.md.",
                          flags, (int)(sizeof flags / sizeof flags[0])};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos == 0) return zaya_flags_usage_error(&spec, "missing the command to supervise (after --)");
    /* every bad value names its flag (the integer counts are range-checked by the parser) */
    const struct { int bad; const char *what; } need[] = {
        {o.backoff_s < 0, "--backoff must be >= 0"},
        {o.backoff_max_s < 0, "--backoff-max must be >= 0"},
        {!(o.hang_factor > 0), "--hang-factor must be > 0"},
        {!(o.hang_floor_s > 0), "--hang-floor must be > 0"},
        {!(o.hang_cap_s >= o.hang_floor_s), "--hang-cap must be >= --hang-floor"},
        {o.grace_s < 0, "--grace must be >= 0"},
        {!(o.poll_s > 0 && o.poll_s <= 10), "--poll must be in (0, 10] seconds"},
        {!(o.straggler_factor > 1), "--straggler-factor must be > 1"},
        {!(o.preempt_timeout_s > 0), "--preempt-timeout must be > 0"},
        {o.startup_timeout_s < 0, "--startup-timeout must be >= 0"},
        {o.eval_timeout_s < 0, "--eval-timeout must be >= 0"},
        {o.save_timeout_s < 0, "--save-timeout must be >= 0"},
    };
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (need[i].bad) return zaya_flags_usage_error(&spec, "%s", need[i].what);
    if (o.min_hosts < 1 || o.host_wait_s < 0 || o.host_check_timeout_s <= 0 || o.host_probe_s <= 0)
        return zaya_flags_usage_error(&spec, "--min-hosts must be >= 1, --host-wait >= 0, --host-check-timeout and --host-probe > 0");
    o.grow_back = !no_grow;
    if (!strcmp(policy, "rollback")) o.rollback = 1;
    else if (strcmp(policy, "record")) return zaya_flags_usage_error(&spec, "--numeric-policy must be record or rollback, got '%s'", policy);
    if (o.lr_lower <= 0 || o.lr_lower > 1 || o.lr_lower_steps < 0)
        return zaya_flags_usage_error(&spec, "--lr-lower must be in (0, 1] and --lr-lower-steps >= 0");
    char *cmd[ZAYA_MAX_POSITIONAL + 1];
    for (int i = 0; i < args.npos; i++) cmd[i] = args.pos[i];
    cmd[args.npos] = NULL;
    o.argv = cmd;
    zaya_supervise_result r;
    if (zaya_supervise_run(&o, &r) != ZAYA_OK) {
        return zaya_cli_error("supervise", NULL);
    }
    printf("results in %s (incidents.jsonl, summary.json, attempt-NNN.log)\n", o.out_dir);
    if (r.completed) return 0;
    if (r.preempted) return ZAYA_FT_EXIT_PREEMPTED;
    return zaya_cli_error("supervise", "%s", r.diagnosis);
}
