#!/usr/bin/env bash
# The main job, end to end, on a fresh machine:
#   1. install: a virtual environment with storygpt (compiles the C++ core)   scripts/setup_env.sh
#   2. data:    the corpus, a word-level and a byte-level BPE tokenizer, token files   data.py
#   3. train:   a word-level and a BPE model, both with rotary positions         pretrain.py
#   4. compare: bits per character of both on the same held-out text            bits.py
#   5. sample:  a story from each                                               sample.py
#   then the run summary table (scripts/run_summary.py, from each run's summary.json)
#
# Usage:  bash scripts/main_job.sh [--minutes N] [--quick] [--help]
#         MINUTES=1 bash scripts/main_job.sh          # a quick look (1 minute per model)
#
# Settings (flags win over the environment):
#   --minutes N, MINUTES   training budget per model in minutes (default 10)
#   --quick                the same as --minutes 1
#   DATA_ROOT              where data.py writes (default data; the corpus lands in DATA_ROOT/shakespeare)
#   CKPT_ROOT              where the runs go (default checkpoints)
#   PROMPT                 the sample prompt (default "Once upon a time")
#   DEVICE                 torch device for all steps (default auto: CUDA, then MPS, then CPU)
#   STORYGPT_VENV          the virtual environment (default .venv in the repository; see setup_env.sh)
#   STORYGPT_SKIP_SETUP=1  use the Python already on PATH instead of scripts/setup_env.sh
#   CORPUS, DATA_ARGS      corpus folder name and extra data.py arguments, e.g.
#                          CORPUS=mine DATA_ARGS="--train-file mine.txt" (default: the built-in shakespeare)
#   WORD, BPE              the two tokenizer SPECs (default word = word:10000, bpe = bpe:8192), e.g. BPE=bpe:2048
#   PRETRAIN_ARGS          extra pretrain.py arguments, e.g. "--n-layer 6 --n-embd 256", or "--recipe gpt2"
#                          for the old training recipe (default: modern, docs/training.md)
#   SAMPLE_TOKENS          tokens per sample (default 120)
#
# Running it again is safe and never deletes anything:
#   * data: the token files of a tokenizer are reused when they are all there (delete
#     DATA_ROOT/shakespeare, or run data.py yourself, to make them again);
#   * training: runs go to CKPT_ROOT/CORPUS/rope-SLUG (SLUG: word-10000, bpe-8192); a run folder
#     that already holds a checkpoint is continued with
#     `pretrain.py --resume`, and MINUTES is the run's total budget: a finished run stops at
#     once, an interrupted one finishes, and a larger MINUTES trains it further.
#     To train from scratch, move the run folder away (or use pretrain.py --force yourself).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

MINUTES="${MINUTES:-10}"
while [ "$#" -gt 0 ]; do
    case "$1" in
        --minutes) MINUTES="${2:?--minutes needs a number}"; shift 2 ;;
        --minutes=*) MINUTES="${1#*=}"; shift ;;
        --quick) MINUTES=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "main_job.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
if ! [[ "$MINUTES" =~ ^[0-9]+([.][0-9]+)?$ ]] || [[ "$MINUTES" =~ ^0+([.]0*)?$ ]]; then
    echo "main_job.sh: MINUTES must be a positive number, got '$MINUTES'" >&2
    exit 2
fi
DATA_ROOT="${DATA_ROOT:-data}"
CKPT_ROOT="${CKPT_ROOT:-checkpoints}"
PROMPT="${PROMPT:-Once upon a time}"
DEVICE="${DEVICE:-auto}"
CORPUS="${CORPUS:-shakespeare}"
SAMPLE_TOKENS="${SAMPLE_TOKENS:-120}"
read -r -a DATA_EXTRA <<< "${DATA_ARGS:-}"
read -r -a PRETRAIN_EXTRA <<< "${PRETRAIN_ARGS:-}"
DATA_DIR="$DATA_ROOT/$CORPUS"
T0=$SECONDS

step() { printf '\n== %s  (%ds so far)\n' "$*" "$((SECONDS - T0))"; }

if [ "${STORYGPT_SKIP_SETUP:-0}" = 1 ]; then
    step "1/5 install: skipped (STORYGPT_SKIP_SETUP=1), using $(command -v python)"
else
    step "1/5 install (scripts/setup_env.sh)"
    # shellcheck disable=SC1091
    . "$ROOT/scripts/setup_env.sh"
    set -euo pipefail
fi
python -c "import storygpt._bpe, importlib.metadata as m; print('storygpt ready; torch', m.version('torch'))"

step "2/5 data: the $CORPUS corpus, word-level and BPE tokenizers (data.py)"
SPECS=("${WORD:-word}" "${BPE:-bpe}")
slug() { python -c "import sys; from storygpt.tokenizers.spec import parse_spec; print(parse_spec(sys.argv[1]).slug)" "$1"; }
# the slug data.py named the files by: a word vocabulary smaller than asked by the size it has (word:300 -> word-26)
written() { python -c "import sys; from storygpt.data.corpora import written_slug; print(written_slug(*sys.argv[1:]))" "$1" "$2"; }
RUNS=()
for spec in "${SPECS[@]}"; do
    s="$(slug "$spec")"
    kind="${spec%%:*}"
    args=(--out "$DATA_ROOT" --name "$CORPUS")
    [ "$kind" = bpe ] && args=(--bpe "${args[@]}")
    [ "$spec" != "$kind" ] && args+=(--vocab-size "${spec#*:}")
    args+=("${DATA_EXTRA[@]}")
    have=1
    w="$(written "$DATA_DIR" "$s")"
    for f in train.txt valid.txt "tokenizer-$w.json" "train-$w.bin" "valid-$w.bin"; do
        [ -f "$DATA_DIR/$f" ] || have=0
    done
    if [ "$have" = 1 ]; then
        echo "reusing $DATA_DIR/{train,valid}-$w.bin, tokenizer-$w.json (to make them again: delete $DATA_DIR, or run data.py yourself)"
    else
        echo "+ python data.py ${args[*]}"
        python data.py "${args[@]}"
    fi
    RUNS+=("$CKPT_ROOT/$CORPUS/rope-$s")
done

step "3/5 train: word-level and BPE models with rotary positions, $MINUTES minute(s) each (pretrain.py)"
for i in 0 1; do
    # pretrain.py's own run-folder name, so `python pretrain.py --rope --tokenizer SPEC --resume` continues it
    run="${RUNS[$i]}"
    flags=(--rope --tokenizer "${SPECS[$i]}" --data "$DATA_DIR" --out-dir "$CKPT_ROOT" --minutes "$MINUTES" --device "$DEVICE")
    flags+=("${PRETRAIN_EXTRA[@]}")
    if [ -f "$run/ckpt.pt" ]; then
        echo "$run already holds a checkpoint: continuing it up to $MINUTES minute(s) in all (--resume)"
        flags+=(--resume)
    fi
    echo "+ python pretrain.py ${flags[*]}"
    python pretrain.py "${flags[@]}"
done
WORD_CK="${RUNS[0]}/best.pt"
BPE_CK="${RUNS[1]}/best.pt"

step "4/5 compare: bits per character on the same held-out text (bits.py)"
echo "+ python bits.py $WORD_CK $BPE_CK"
python bits.py "$WORD_CK" "$BPE_CK" --device "$DEVICE"

step "5/5 sample: a story from each model (sample.py)"
for ck in "$WORD_CK" "$BPE_CK"; do
    echo "+ python sample.py $ck --prompt \"$PROMPT\" --seed 1 --max-new-tokens $SAMPLE_TOKENS"
    echo "-----"
    python sample.py "$ck" --prompt "$PROMPT" --seed 1 --max-new-tokens "$SAMPLE_TOKENS" --device "$DEVICE"
    echo "-----"
done

step "done"
echo "Run summary (scripts/run_summary.py; pretrain.py's held-out figures, on its first held-out characters):"
python scripts/run_summary.py "${RUNS[@]}"
echo
ACTIVATE="${VIRTUAL_ENV:-$ROOT/.venv}/bin/activate"
cat <<EOF
Runs (each folder: ckpt.pt latest, best.pt best held-out bits/char, metrics.jsonl, summary.json, loss.png):
  ${RUNS[0]}/
  ${RUNS[1]}/
Data: $DATA_DIR/   (both tokenizers, token files, train.txt, valid.txt)

What to run next (in $ROOT, after: . $ACTIVATE)
  # a name the corpus never saw: BPE keeps it, the word-level model turns it into <unk>
  python sample.py $BPE_CK --prompt "Zorblax went" --num-samples 3
  python sample.py $WORD_CK --prompt "Zorblax went"
  # the comparison, machine-readable; docs/bits.md says what it counts
  python bits.py $WORD_CK $BPE_CK --json
  # train both runs further, to 20 minutes each in all (the runs are resumed, nothing is deleted)
  MINUTES=20 bash scripts/main_job.sh
  # other corpora, model sizes, budgets
  python data.py --help; python pretrain.py --help
EOF
