# Shared steps of the training report scripts (sourced, not run). Sets BIN
# (the ocrank binary: $OCRANK, default target/release/ocrank) and D (the
# msmarco data directory: $DATA, default ../shared/data/msmarco); for
# batched_audit the caller sets OUT, PERMS and the arrays SCORER and MODEL
# (OUT and PERMS also for stage_audit and oc_sft_stage_audit).
BIN=${OCRANK:-target/release/ocrank}
D=${DATA:-../shared/data/msmarco}

# minilm_labels FILE [DEPTH [POOLS...]]: the MiniLM teacher's labels for the
# DL21 + DL22 training pools (and any further POOLS) to DEPTH (default 20),
# calibrated on the judged DL21 candidates within that depth; kept when FILE
# already exists.
minilm_labels() { labels=$1
    [ -f "$labels" ] || "$BIN" label --teacher embedding \
        --pools "$D/dl21/bm25-top100.json" "$D/dl22/bm25-top100.json" "${@:3}" --depth "${2:-20}" \
        --calibration-pools "$D/dl21/bm25-top100.json" --calibration-qrels "$D/dl21/qrels.txt" \
        --out "$labels"; }

# A batched DL19 audit into $OUT/NAME with PERMS orders. Always run, never
# skipped by the script: `ocrank audit` scores only the windows its directory
# lacks (a finished audit reruns in a fraction of a second) and refuses a
# directory made with other settings (adapter, cut, mode...), which a skip on
# an existing results.json would hide. AUDIT_QUERIES, when set, audits only
# the first that many queries (a rehearsal's short audits).
batched_audit() { local name=$1; shift
    echo "== audit $name"; "$BIN" audit \
    --pools "$D/dl19/bm25-top100.json" --qrels "$D/dl19/qrels.txt" \
    --depth 20 "${SCORER[@]}" "${MODEL[@]}" --mode batched --permutations "$PERMS" \
    ${AUDIT_QUERIES:+--queries "$AUDIT_QUERIES"} "$@" --out "$OUT/$name"; }

# heldout_select OUT PERMS ARGS...: `ocrank select` on the held-out DL21
# queries (the split every training script holds out) at depth 20 over
# PERMS orders, with the model flags of MODEL; ARGS are the runs and
# further flags (--runs DIR..., --every N, --include-base). Then
# scripts/selection_margin.py's table (each candidate minus the selected
# one, bootstrapped over the held-out queries) beside OUT, as
# OUT-without-.json-margin.{md,json}.
heldout_select() { local out=$1 perms=$2; shift 2
    "$BIN" select --pools "$D/dl21/bm25-top100.json" --qrels "$D/dl21/qrels.txt" \
        --depth 20 --permutations "$perms" "${MODEL[@]}" "$@" --out "$out"
    python3 scripts/selection_margin.py "$out" --out "${out%.json}-margin.md" > /dev/null; }
# selected FIELD FILE: FIELD (candidate or adapter) of the choice recorded in
# an `ocrank select` JSON; empty for the base model (no adapter).
selected() { python3 -c 'import json, sys
v = json.load(open(sys.argv[2]))["selected"][sys.argv[1]]
print("" if v is None else v)' "$1" "$2"; }

# compare_audits OUT DIR...: `ocrank compare` of audit directories (the first
# is the baseline) on the measures every training report tabulates, into OUT.
compare_audits() { out=$1; shift
    "$BIN" compare "$@" \
        --measures ndcg_at_10,ndcg_at_10_mean,ndcg_at_10_worst,tau_psi,retained_set_overlap \
        --out "$out"; }

# Names of the width-10 stages (scripts/width10_crossed.sh,
# scripts/width10_controls.sh). seed_sfx SEED: "-seedSEED", empty for 0.
# stage_tag START STAGE: the start's tag, width10_stage.sh's "w4" when start
# = stage seed, else "w4seedSTART". stage_name STEPS START STAGE:
# "sSTEPS-from-TAG[-seedSTAGE]", the part of every run's name (width_report.sh
# builds it from STEPS, INIT_TAG and SEED) that says which stage it is.
seed_sfx() { [ "$1" = 0 ] || echo "-seed$1"; }
stage_tag() { if [ "$1" = "$2" ]; then echo w4; else echo "w4seed$1"; fi; }
stage_name() { echo "s$1-from-$(stage_tag "$2" "$3")$(seed_sfx "$3")"; }
# oc_sft_stage: the width_report.sh settings of an OC-SFT stage (the spread-
# scaled term, lambda 0.05, floor 1e-5); OC_SFT_TAG the name suffix they give
# (width_report.sh's TAG).
OC_SFT_TAG=lambda0.05-floor1e-5
oc_sft_stage=(OBJECTIVES=oc-sft-aug-spread LAMBDA=0.05 SPREAD_FLOOR=1e-5 TAG=$OC_SFT_TAG)
# w4_start SEED OBJECTIVE: the kept width-4 student (its name under
# reports/training/width4/adapters) that a width-10 stage of that seed starts
# OBJECTIVE from: OC-SFT's own student (trained from the width-2 perm-aug
# one), the others' own.
w4_start() { if [ "$2" = oc-sft-aug-spread ]; then
        echo "$2-s80-w5-from-w2-perm-aug$(seed_sfx "$1")-$OC_SFT_TAG"
    else echo "$2-s80-w5-from-w2$(seed_sfx "$1")"; fi; }
# objective_tag OBJECTIVE: the name suffix of that objective's width-10 stages
# ("-$OC_SFT_TAG" for OC-SFT, none for single-order and perm-aug).
objective_tag() { [ "$1" != oc-sft-aug-spread ] || echo "-$OC_SFT_TAG"; }
# recipe_env OBJECTIVE: sets the array `recipe`, width_report.sh's
# environment for that recipe of a stage (OC-SFT's is oc_sft_stage).
recipe_env() { if [ "$1" = oc-sft-aug-spread ]; then recipe=("${oc_sft_stage[@]}"); else recipe=(OBJECTIVES="$1"); fi; }
# from_base_audit OBJECTIVE [CYCLE]: the audit in $OUT, with $PERMS orders,
# of OBJECTIVE trained $STEPS steps from the base model
# (scripts/width10_base.sh), or with CYCLE 2 of its second cycle of $STEPS
# more steps (scripts/width10_base_cycle2.sh: INIT_TAG base-s$STEPS, SEED 2).
from_base_audit() { local c=""; [ "${2:-1}" = 1 ] || c="-from-base-s$STEPS-seed2"
    echo "$OUT/$1-s$STEPS$c$(objective_tag "$1")-m$PERMS"; }
# stage_audit OBJECTIVE STEPS START STAGE [SUFFIX]: that stage's audit in
# $OUT with $PERMS orders (SUFFIX -sel: of the checkpoint width_report.sh's
# SELECT=1 chose); oc_sft_stage_audit STEPS START STAGE [SUFFIX]: the OC-SFT one.
stage_audit() { echo "$OUT/$1-$(stage_name "$2" "$3" "$4")$(objective_tag "$1")${5:-}-m$PERMS"; }
oc_sft_stage_audit() { stage_audit oc-sft-aug-spread "$@"; }
# cycle2_tag STEPS START STAGE: the INIT_TAG of a second cycle from that
# stage; cycle2_name OBJECTIVE STEPS START STAGE SEED: the name of that
# objective's second cycle (STEPS more steps from the STEPS-step stage, with
# --seed SEED; scripts/width10_cycle2.sh), its kept adapter's directory in
# width10/adapters; cycle2_audit (same arguments): its audit in $OUT with
# $PERMS orders.
cycle2_tag() { echo "w4seed$2$(seed_sfx "$3")-s$1"; }
cycle2_name() { echo "$1-s$2-from-$(cycle2_tag "$2" "$3" "$4")$(seed_sfx "$5")$(objective_tag "$1")"; }
cycle2_audit() { echo "$OUT/$(cycle2_name "$@")-m$PERMS"; }
# parse_spec SPEC FORMAT RECIPE...: checks a run's spec as the stage scripts
# take them (e.g. oc-sft-aug-spread:1:0:2 for FORMAT
# OBJECTIVE:START:STAGE:SEED): as many colon-separated fields as FORMAT,
# the first one of the RECIPEs, the others seeds; exits 2 naming SPEC and
# what is wrong, so that a typo stops a script before any run starts.
parse_spec() { local s=$1 format=$2 f fields parts; shift 2
    IFS=: read -r -a parts <<< "$s"
    IFS=: read -r -a fields <<< "$format"
    [ "${#parts[@]}" = "${#fields[@]}" ] && [[ "$s" != *: ]] || { echo "$s: expected $format" >&2; exit 2; }
    [[ " $* " == *" ${parts[0]} "* ]] || { echo "$s: ${fields[0]} is one of: $*" >&2; exit 2; }
    for f in "${parts[@]:1}"; do
        [[ "$f" =~ ^[0-9]+$ ]] || { echo "$s: ${format#*:} must be seeds ($format)" >&2; exit 2; }
    done; }
# cycle3_tag STEPS START STAGE SEED2: the INIT_TAG of a third cycle from the
# second cycle (seed SEED2) of that stage; cycle3_name OBJECTIVE STEPS START
# STAGE SEED2 SEED3: the name of that objective's third cycle (--seed SEED3;
# scripts/width10_cycle3.sh); cycle3_audit (same arguments): its audit in
# $OUT with $PERMS orders.
cycle3_tag() { echo "$(cycle2_tag "$1" "$2" "$3")-s$1$(seed_sfx "$4")"; }
cycle3_name() { echo "$1-s$2-from-$(cycle3_tag "$2" "$3" "$4" "$5")$(seed_sfx "$6")$(objective_tag "$1")"; }
cycle3_audit() { echo "$OUT/$(cycle3_name "$@")-m$PERMS"; }
# issue_table FILE START: issue 5's table of one start at M = PERMS with
# `ocrank compare`: off the shelf ($OUT/off-the-shelf-mPERMS) as baseline,
# then the single-order, perm-aug and OC-SFT second cycles of STEPS steps.
# Returns 3, naming the audit, when one has no results.json yet.
issue_table() { local file=$1 start=$2 obj d dirs=("$OUT/off-the-shelf-m$PERMS")
    for obj in single-order perm-aug oc-sft-aug-spread; do dirs+=("$(cycle2_audit "$obj" "$STEPS" "$start" 0 2)"); done
    for d in "${dirs[@]}"; do
        [ -f "$d/results.json" ] || { echo "issue_table: $d has no results.json" >&2; return 3; }
    done
    compare_audits "$file" "${dirs[@]}"; }

# pool_pairs SEED_OUT RETENTION_OUT --pair OC CONTROL [--pair ...]: OC-SFT
# minus a control pooled over the pairs given (each its own start or stage
# seed): ranking quality and tau-PSI with scripts/seed_pooled.py into
# SEED_OUT, the decision sets (frozen threshold, top-5/10/15) with
# scripts/retention.py into RETENTION_OUT.
pool_pairs() { local seed_out=$1 retention_out=$2; shift 2
    python3 scripts/seed_pooled.py "$@" --out "$seed_out"
    python3 scripts/retention.py "$@" --out "$retention_out"; }

# bsc_tables TAG --pair OC CONTROL [--pair ...]: OC-SFT scored once against
# each control averaged over K orders ($OUT/bsc-TAG.md) and both at equal K
# ($OUT/bsc-same-k-TAG.md), per pair and pooled over them
# (scripts/bsc_match.py; every audit needs its BSC@K curve, `--bsc`).
bsc_tables() { local tag=$1; shift
    python3 scripts/bsc_match.py "$@" --out "$OUT/bsc-$tag.md"
    python3 scripts/bsc_match.py --same-k "$@" --out "$OUT/bsc-same-k-$tag.md"; }

# seed_audit FROM TO: starts the audit directory TO from the window log of
# the audit FROM of the same scorer with fewer orders, when TO has no window
# log yet, so that `ocrank audit --permutations M --out TO` scores only the
# orders FROM lacks. Sound because permutation i of a query depends on the
# plan seed, the query and i alone, not on M (crates/plan), and because the
# copied settings.json must equal the new run's settings or `ocrank audit`
# refuses the directory (crates/audit/src/store.rs): a copy from another
# scorer fails loudly instead of mixing scores.
seed_audit() { local from=$1 to=$2
    [ ! -f "$to/windows.jsonl" ] || return 0
    [ -f "$from/windows.jsonl" ] || { echo "seed_audit: no window log in $from" >&2; return 1; }
    mkdir -p "$to"
    cp "$from/settings.json" "$from/windows.jsonl" "$to/"
    echo "== $to: started from the $(wc -l < "$from/windows.jsonl") windows of $from"; }
# seed_from_fewer NAMER ARGS...: with FROM_PERMS set, starts the audit that
# `NAMER ARGS...` names at $PERMS orders from the one it names at
# $FROM_PERMS (seed_audit), so that only the new orders are scored.
seed_from_fewer() { [ -z "${FROM_PERMS:-}" ] || seed_audit "$(PERMS=$FROM_PERMS "$@")" "$("$@")"; }
# seed_perms STEM: the same for an audit its script names itself,
# STEM-mPERMS started from STEM-mFROM_PERMS (a no-op without FROM_PERMS).
seed_perms() { [ -z "${FROM_PERMS:-}" ] || seed_audit "$1-m$FROM_PERMS" "$1-m$PERMS"; }
# perms_sfx: the suffix of a stage script's tables at $PERMS orders: none at
# M = 5, the protocol of the width-10 stages, -mPERMS otherwise, so that a
# pass over a few stages at more orders never overwrites the M = 5 tables.
perms_sfx() { [ "$PERMS" = 5 ] || echo "-m$PERMS"; }
# base_audit: the base model's audit of the width-10 windows at $PERMS
# orders, the baseline of the stage scripts' tables: width4/width10's at
# M = 5, $OUT/off-the-shelf-mPERMS (scripts/width10_m10.sh makes it) at
# other M.
base_audit() { if [ "$PERMS" = 5 ]; then echo reports/training/width4/width10/off-the-shelf
    else echo "$OUT/off-the-shelf-m$PERMS"; fi; }
# width10_setup INIT_DIR [OUT RUNS]: what the width-10 stage scripts share.
# Sets OUT (default reports/training/width10) and RUNS (runs/width10) and
# makes them, makes the MiniLM labels width_report.sh reads (once, so two
# lanes do not both spend minutes on them; two scripts started together may
# both make them, and `ocrank label` replaces the file whole), and sets the
# array `common`: the environment of each width_report.sh call of a stage
# (width 10, STEPS, PERMS, lr 1e-3, no base audit, one lane on THREADS
# threads, default 1; starting from the adapters in INIT_DIR; none from the
# base model when INIT_DIR is empty).
width10_setup() {
    OUT=${2:-reports/training/width10}; RUNS=${3:-runs/width10}
    mkdir -p "$RUNS" "$OUT" runs/train
    minilm_labels runs/train/labels-minilm.jsonl
    common=(env LANES=1 WIDTH=10 STEPS="$STEPS" PERMS="$PERMS" LR=1e-3 BASE=0 OUT="$OUT" RUNS="$RUNS"
        INIT="$1" RAYON_NUM_THREADS="${THREADS:-1}"); }
# w4_starts: the training seeds (0-9) whose width-4 OC-SFT student is kept
# in reports/training/width4/adapters (w4_start), one a line: the starts a
# width-10 stage can have. stage_seeds: every START STAGE a width-10 stage
# can have, one pair a line (those starts, each with stage seeds 0-9).
w4_starts() { local start
    for start in 0 1 2 3 4 5 6 7 8 9; do
        if [ -d "reports/training/width4/adapters/$(w4_start "$start" oc-sft-aug-spread)" ]; then echo "$start"; fi
    done; }
stage_seeds() { local start stage
    for start in $(w4_starts); do for stage in 0 1 2 3 4 5 6 7 8 9; do echo "$start $stage"; done; done; }

# The tables of the width-10 controls (scripts/width10_controls.sh) and
# their OC-SFT twins (scripts/width10_crossed.sh): a control and its twin
# finish in either order, so both scripts end with controls_report, and
# whichever finishes last writes every table from every finished pair.
# finished_stages OBJECTIVE [START]: "START STAGE", one a line, of every
# $STEPS-step stage (of START only, when given) whose OBJECTIVE control and
# OC-SFT twin both have audits at $PERMS orders in $OUT; finished_pairs
# (same arguments): those stages as `--pair OC CONTROL`, one word a line.
finished_stages() { local start stage
    while read -r start stage; do
        [ -z "${2:-}" ] || [ "$start" = "$2" ] || continue
        if [ -f "$(stage_audit "$1" "$STEPS" "$start" "$stage")/results.json" ] &&
            [ -f "$(oc_sft_stage_audit "$STEPS" "$start" "$stage")/results.json" ]; then
            echo "$start $stage"
        fi
    done < <(stage_seeds); }
finished_pairs() { local start stage
    while read -r start stage; do
        printf '%s\n' --pair "$(oc_sft_stage_audit "$STEPS" "$start" "$stage")" \
            "$(stage_audit "$1" "$STEPS" "$start" "$stage")"
    done < <(finished_stages "$@"); }
# vs_shorter OBJECTIVE SHORT START STAGE: that recipe's stage of $STEPS steps
# against its SHORT-step twin (same start, stage seed and $PERMS orders),
# where both have audits: compare-<the longer audit>-vs-sSHORT.md (what the
# longer schedule changed; crossed.md's 144- and 300-step sections).
vs_shorter() { local long short
    long=$(stage_audit "$1" "$STEPS" "$3" "$4")
    short=$(stage_audit "$1" "$2" "$3" "$4")
    if [ -f "$long/results.json" ] && [ -f "$short/results.json" ]; then
        compare_audits "$OUT/compare-$(basename "$long")-vs-s$2.md" "$short" "$long"
    fi; }
# controls_report: for the $STEPS-step controls at $PERMS orders, in $OUT
# (the names end in $(perms_sfx) after sSTEPS): each finished pair compared,
# compare-sSTEPS-from-TAG[-seedN]-vs-OBJECTIVE.md; per objective with two or
# more pairs, OC-SFT minus the control pooled over them (pool_pairs:
# seed-pooled- and retention-sSTEPS-oc-sft-spread-vs-OBJECTIVE.md) and over
# each start's pairs apart where a start has two or more and another start
# some (seed-pooled-sSTEPS-from-w4seedS-oc-sft-spread-vs-OBJECTIVE.md: the
# start decides the OC-SFT effect, crossed.md "The start decides", which the
# pooled table averages away); and the score variance of every control with
# a twin (scripts/score_variance.py: variance-controls-sSTEPS.md). Above
# 144 steps, also every stage of $STEPS steps, OC-SFT and controls, against
# its 144-step twin (vs_shorter).
# Invocations side by side take turns (flock on $RUNS/controls-sSTEPS.lock),
# so no two write these files at once.
controls_report() { local ms obj start stage ctl s pairs own controls=()
    ms=$(perms_sfx)
    exec 9> "$RUNS/controls-s$STEPS.lock"
    flock 9
    for obj in single-order perm-aug; do
        while read -r start stage; do
            ctl=$(stage_audit "$obj" "$STEPS" "$start" "$stage")
            controls+=("$ctl")
            compare_audits "$OUT/compare-$(stage_name "$STEPS" "$start" "$stage")$ms-vs-$obj.md" \
                "$ctl" "$(oc_sft_stage_audit "$STEPS" "$start" "$stage")"
        done < <(finished_stages "$obj")
        mapfile -t pairs < <(finished_pairs "$obj")
        if [ "${#pairs[@]}" -ge 6 ]; then
            pool_pairs "$OUT/seed-pooled-s$STEPS$ms-oc-sft-spread-vs-$obj.md" \
                "$OUT/retention-s$STEPS$ms-oc-sft-spread-vs-$obj.md" "${pairs[@]}"
        fi
        for s in $(w4_starts); do
            mapfile -t own < <(finished_pairs "$obj" "$s")
            if [ "${#own[@]}" -ge 6 ] && [ "${#own[@]}" -lt "${#pairs[@]}" ]; then
                python3 scripts/seed_pooled.py "${own[@]}" \
                    --out "$OUT/seed-pooled-s$STEPS$ms-from-w4seed$s-oc-sft-spread-vs-$obj.md"
            fi
        done
    done
    if [ "$STEPS" -gt 144 ]; then
        while read -r start stage; do
            for obj in oc-sft-aug-spread single-order perm-aug; do vs_shorter "$obj" 144 "$start" "$stage"; done
        done < <(stage_seeds)
    fi
    if [ "${#controls[@]}" = 0 ]; then
        echo "no control of $STEPS steps at M = $PERMS has its OC-SFT twin's audit yet"
    else
        python3 scripts/score_variance.py "${controls[@]}" --out "$OUT/variance-controls-s$STEPS$ms.md"
    fi
    exec 9>&-; }

# Background runs, at most LANES (default 2) at a time, each its own process
# (set RAYON_NUM_THREADS=1 for one thread each on 2 cores).
# run_in_lane LOG CMD...: waits until fewer than LANES background jobs of
# this shell run, then starts CMD with stdout and stderr to LOG.
# lanes_wait MESSAGE: waits for every run started so far, also those that
# ended while others ran, and exits 1 with MESSAGE if any failed.
lane_pids=()
run_in_lane() { local log=$1; shift
    while [ "$(jobs -rp | wc -l)" -ge "${LANES:-2}" ]; do sleep 5; done
    "$@" > "$log" 2>&1 &
    lane_pids+=($!); }
lanes_wait() { local p failed=0
    for p in "${lane_pids[@]}"; do wait "$p" || failed=1; done
    lane_pids=()
    [ "$failed" = 0 ] || { echo "$1" >&2; exit 1; }; }
