/* The trainer <-> supervisor protocol (docs/fault-tolerance.md), in one place: the sections a rank
 * reports, the exit code of a trainer that stopped on request, the environment the supervisor sets,
 * and the heartbeat files. The trainer writes it (src/train/heartbeat.c, faults.c, lifeline.c), the
 * supervisor reads it (src/ft/monitor.c, supervisor.c); neither links the other. */
#ifndef ZAYA_FT_PROTOCOL_H
#define ZAYA_FT_PROTOCOL_H

#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exit status of a trainer (and of `zaya supervise`) that saved a checkpoint and stopped on request. */
#define ZAYA_FT_EXIT_PREEMPTED 75

/* What a rank is doing; the record carries the name. */
typedef enum zaya_ft_section {
    ZAYA_FT_STARTUP,
    ZAYA_FT_DATA,
    ZAYA_FT_FORWARD,
    ZAYA_FT_BACKWARD,
    ZAYA_FT_COMM,
    ZAYA_FT_OPTIMIZER,
    ZAYA_FT_CHECKPOINT,
    ZAYA_FT_EVAL,
    ZAYA_FT_DONE,
    ZAYA_FT_NSECTIONS
} zaya_ft_section;

static inline const char *zaya_ft_section_name(zaya_ft_section s) {
    static const char *const names[ZAYA_FT_NSECTIONS] = {"startup",   "data",       "forward", "backward", "communication",
                                                         "optimizer", "checkpoint", "eval",    "done"};
    return (int)s >= 0 && s < ZAYA_FT_NSECTIONS ? names[s] : "?";
}

/* The section of a record's name; -1 when it names none. */
static inline int zaya_ft_section_parse(const char *name) {
    for (int s = 0; name && s < ZAYA_FT_NSECTIONS; s++)
        if (!strcmp(name, zaya_ft_section_name((zaya_ft_section)s))) return s;
    return -1;
}

/* Environment the supervisor sets for the job. */
#define ZAYA_ENV_HEARTBEAT_DIR "ZAYA_HEARTBEAT_DIR"       /* the attempt's heartbeat directory */
#define ZAYA_ENV_ATTEMPT "ZAYA_ATTEMPT"                   /* attempt number, from 1 */
#define ZAYA_ENV_SUPERVISOR_PID "ZAYA_SUPERVISOR_PID"     /* the job dies with this process ... */
#define ZAYA_ENV_SUPERVISOR_START "ZAYA_SUPERVISOR_START" /* ... identified by its start time */
#define ZAYA_ENV_SKIP_STEPS "ZAYA_SKIP_STEPS"             /* rollback: steps whose update is skipped, "a,b,c" */
#define ZAYA_ENV_LR_LOWER "ZAYA_LR_LOWER"                 /* rollback: "factor:steps" after a skipped step */
#define ZAYA_ENV_ROLLBACK_TO "ZAYA_ROLLBACK_TO"           /* rollback: resume from the checkpoint before this step */

/* Heartbeat directory layout: one fixed-size record per rank, rewritten in place, framed by
 * "seq" ... "seq_end" (equal when the record is whole); JSON keys: seq, rank, world, host, pid, attempt,
 * section, step, time, section_time, steps_done, step_time, busy_time, train_time, phase, seq_len,
 * seq_end. Events are appended one JSON line per write: kind, rank, attempt, step, time, detail. */
#define ZAYA_FT_HB_RECORD_BYTES 512
#define ZAYA_FT_HB_RANK_FILE "rank-%05d.json"
#define ZAYA_FT_HB_EVENTS_FILE "events-r%05d.jsonl"

/* Event kinds (the "kind" of an event line). */
#define ZAYA_FT_EV_NONFINITE "nonfinite"
#define ZAYA_FT_EV_SPIKE "spike"
#define ZAYA_FT_EV_ROLLBACK_SKIP "rollback_skip"
#define ZAYA_FT_EV_RESUMED "resumed"
#define ZAYA_FT_EV_CKPT_FALLBACK "ckpt_fallback"
#define ZAYA_FT_EV_LATEST_REPAIRED "latest_repaired"
#define ZAYA_FT_EV_OUTPUT_LOCKED "output_locked"
#define ZAYA_FT_EV_DONE "done"
#define ZAYA_FT_EV_PREEMPTED "preempted"
#define ZAYA_FT_EV_FAILED "failed"
#define ZAYA_FT_EV_FAULT_INJECTED "fault_injected"
#define ZAYA_FT_EV_PREEMPT "preempt"

#ifdef __cplusplus
}
#endif

#endif
