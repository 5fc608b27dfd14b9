# Shared steps of the training report scripts (sourced, not run). The caller
# sets BIN (the ocrank binary), D (the msmarco data directory) and, for
# batched_audit, OUT, PERMS and the arrays SCORER and MODEL.

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
# an existing results.json would hide.
batched_audit() { name=$1; shift
    echo "== audit $name"; "$BIN" audit \
    --pools "$D/dl19/bm25-top100.json" --qrels "$D/dl19/qrels.txt" \
    --depth 20 "${SCORER[@]}" "${MODEL[@]}" --mode batched --permutations "$PERMS" \
    "$@" --out "$OUT/$name"; }

# compare_audits OUT DIR...: `ocrank compare` of audit directories (the first
# is the baseline) on the measures every training report tabulates, into OUT.
compare_audits() { out=$1; shift
    "$BIN" compare "$@" \
        --measures ndcg_at_10,ndcg_at_10_mean,ndcg_at_10_worst,tau_psi,retained_set_overlap \
        --out "$out"; }
