/* profile.h: the person's settings, from one YAML file.
 *
 * Found at --profile PATH, else $KEEL_PROFILE, else
 * $XDG_CONFIG_HOME/keel/profile.yaml (~/.config/keel/profile.yaml). A missing
 * file means defaults. A file that cannot be parsed is remembered as
 * unreadable: tools that depend on it say PROFILE_UNREADABLE (or fall back and
 * warn), never guess silently. Unknown keys and wrong types are collected as
 * problems with their line numbers for `keel profile check`. */
#ifndef KEEL_PROFILE_H
#define KEEL_PROFILE_H

#include <cjson/cJSON.h>

#define PROFILE_MAX_ZONES    8
#define PROFILE_MAX_PROBLEMS 32

enum { ZONE_MORNING_PEAK, ZONE_MIDDAY, ZONE_AFTERNOON_DIP, ZONE_EVENING_QUIET, ZONE_NIGHT_OWL, ZONE_COUNT };
extern const char *const profile_zone_names[ZONE_COUNT];

struct profile_zone {
    int defined;
    int start, end; /* minutes after midnight; [start, end), may wrap midnight */
};

struct profile_day {
    int eod_set; /* 1 when this day overrides the end of day */
    int eod; /* minutes, or -1: no end of day on this day */
    int zones_set;
    struct profile_zone zones[ZONE_COUNT];
};

struct profile {
    char path[1024];
    int found; /* the file exists */
    int unreadable; /* the file exists but is not valid YAML */
    char error[200]; /* why, when unreadable */
    /* chronometric */
    int eod; /* end of day, minutes after midnight, or -1 */
    int zones_custom; /* zones come from the profile */
    struct profile_zone zones[ZONE_COUNT];
    struct profile_day days[7]; /* 0 = Sunday */
    int overlap_error; /* session_overlap_policy: 0 auto_close, 1 error */
    int break_minutes; /* hyperfocus_break_minutes, 0 when unset */
    /* guardrails: defaults for the overlay */
    int rum_window, rum_threshold, rum_plea_threshold;
    double rum_similarity;
    int hyp_gentle, hyp_nudge, hyp_hard; /* the ladder in effect: escalation_thresholds, else one
                                            hyperfocus_break_minutes B gives (B*2/3, B, B*4/3), else 60/90/120 */
    int hyp_given; /* the rungs escalation_thresholds set (1 gentle, 2 nudge, 4 hard): they win over
                      hyperfocus_break_minutes */
    /* overlay: what keel wrap watches on live traffic */
    int ov_rumination, ov_hyperfocus, ov_sycophancy, ov_rules, ov_loop;
    /* loop: the agent-loop detector on tools/call (detectors/loop.h) */
    int loop_repeat, loop_errors, loop_reask, loop_alternation;
    int loop_window; /* minutes */
    int loop_calls; /* calls kept */
    int loop_poll; /* seconds: a call repeated after this long, nothing between, is a poll */
    int nloop_exempt;
    char loop_exempt[16][128]; /* tool name globs never counted */
    int activity_gap; /* minutes of quiet that end an activity session */
    char activity_intent[200]; /* the intent quoted for an activity session */
    /* rules: more rule directories, and the optional model evaluator */
    int nrule_dirs;
    char rule_dirs[8][512];
    char eval_url[512], eval_model[128], eval_key_env[128];
    int eval_timeout_ms;
    /* pins: what servers' tools say, pinned on first use */
    int pins_on;
    int pins_hold_suspect; /* a tool that looks poisoned on first sight is held, not listed with a warning */
    /* privacy */
    int idle_consent;
    char idle_probe[512]; /* empty: default (xprintidle when DISPLAY is set) */
    /* what `keel profile check` reports */
    int nproblems;
    char problems[PROFILE_MAX_PROBLEMS][160];
};

/* Resolves the path (explicit may be NULL) and loads it. Never fails: the
 * outcome is in found / unreadable / problems. */
void profile_load(struct profile *p, const char *explicit_path);

/* Loads from a YAML string (tests). */
void profile_load_text(struct profile *p, const char *yaml, size_t n);

/* The effective profile as JSON, for `keel profile check`. */
cJSON *profile_to_json(const struct profile *p);

/* End of day in minutes for a weekday (0 = Sunday), or -1. */
int profile_eod_for(const struct profile *p, int wday);

/* The zones for a weekday. */
const struct profile_zone *profile_zones_for(const struct profile *p, int wday);

#endif
