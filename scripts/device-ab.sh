#!/usr/bin/env bash
# Two trees timed in turns on one GPU, in one device call: the working tree ("after") and
# .device/base ("before": another commit's python/hir, dialect/, passes/ and benchmarks/),
# running benchmarks/generate.py with the given options. A decode row spreads by tens of
# microseconds from one process to the next (each process's autotuners pick their tiles
# anew), more than many changes gain: so HIR_AB_ROUNDS rounds (2), each with empty caches
# of its own for each tree (HIR_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR: the
# tuning is part of what is compared), each tree run twice on them, before and after
# alternating; then every run's rows and each row's mean per tree. Runs that would pass
# HIR_AB_BUDGET seconds (540) are left out, and said so.
# Prepare here (.device/ as scripts/device-generate.sh says), e.g. against main:
#   rm -rf .device/base && mkdir -p .device/base
#   git archive main python/hir dialect passes benchmarks | tar -x -C .device/base
#   run(command="bash scripts/device-ab.sh --sections steps --cases decode1 --rows 'hir default' --option-rows ''",
#       carry=[".device"], timeout_s=600)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-env.sh
export PYTHONUNBUFFERED=1
base="$PWD/.device/base"
if [ ! -d "$base/python/hir" ]; then
  echo "device-ab: no $base/python/hir: make .device/base as this script's header says" >&2
  exit 1
fi
budget=${HIR_AB_BUDGET:-540}
site=$PYTHONPATH
run_tree() {  # TREE-NAME TREE-DIR ROUND TURN [generate.py options]
  local name=$1 dir=$2 round=$3 turn=$4 src=/tmp/hir-ab-src-$1
  shift 4
  local last=${last_run_s:-60}
  if [ $(( SECONDS + last + 10 )) -gt "$budget" ]; then
    echo "device-ab: $name round $round run $turn left out (about $last s, $(( budget - SECONDS )) s left)"
    return
  fi
  rm -rf "$src" && mkdir -p "$src" && cp -rs "$dir/python/hir" "$src/hir"
  rm -rf "$src/hir/dialect" "$src/hir/passes"  # a checkout's own links (scripts/check makes them)
  ln -s "$dir/dialect" "$src/hir/dialect" && ln -s "$dir/passes" "$src/hir/passes"
  local caches=/tmp/hir-ab-caches/$name-$round start=$SECONDS
  PYTHONPATH="$site:$src" HIR_CACHE_DIR="$caches/hir" TORCHINDUCTOR_CACHE_DIR="$caches/inductor" \
    TRITON_CACHE_DIR="$caches/triton" timeout $(( budget - SECONDS )) python3 "$dir/benchmarks/generate.py" \
    --budget $(( budget - SECONDS - 5 )) --json "$out/ab-$name-$round-$turn.json" "$@" > "$out/ab-$name-$round-$turn.txt" 2>&1
  echo "device-ab: $name round $round run $turn: rc $?, $(( SECONDS - start )) s"
  last_run_s=$(( SECONDS - start ))
}
rm -rf /tmp/hir-ab-caches
for round in $(seq "${HIR_AB_ROUNDS:-2}"); do
  for turn in 1 2; do
    run_tree before "$base" "$round" "$turn" "$@"
    run_tree after "$PWD" "$round" "$turn" "$@"
  done
done
python3 - "$out" <<'EOF'
import glob, json, os, statistics, sys

runs = {}  # (case, row) -> tree -> [ms]
for path in sorted(glob.glob(os.path.join(sys.argv[1], "ab-*.json"))):
    tree, round_, turn = os.path.basename(path)[3:-5].split("-")
    for case in json.load(open(path)).get("steps", []):
        for row in case["rows"]:
            runs.setdefault((case["case"], row["row"]), {}).setdefault(tree, []).append(row["ms"])
print("| case | row | before (ms, each run) | after (ms, each run) | mean before | mean after |")
print("|---|---|---|---|---:|---:|")
for (case, row), trees in runs.items():
    cells = [", ".join(f"{ms:.3f}" for ms in trees.get(t, [])) for t in ("before", "after")]
    means = [f"{statistics.mean(trees[t]):.3f}" if trees.get(t) else "-" for t in ("before", "after")]
    print(f"| {case} | {row} | {cells[0]} | {cells[1]} | {means[0]} | {means[1]} |")
EOF
