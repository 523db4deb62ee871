#!/usr/bin/env bash
# The multi-GPU sweep (issues 25, 39) on whatever GPU count the machine has, in one device call
# that cannot overrun: every section runs under `timeout`, within its own cap and what is
# left of the sweep's budget ($HIR_SWEEP_BUDGET s, default 540 counted from the start; a
# section with under 30 s left prints "skipped: budget spent"). Processes a killed section
# leaves on the GPUs are ended before the next. Logs go to $OUT, one file per section
# (sweep.txt has the sections' headers and elapsed seconds; benchmark tables are
# RESULTS-ready markdown; a benchmark row whose error is above its tolerance prints WRONG).
#
# Prepare on the CPU machine (no torch-mlir FX importer and no network on the GPU machine),
# then carry .device:   bash scripts/prepare-device39.sh
# Usage: bash scripts/device-multi.sh [SECTION ...]   (default: matrix layer e2e overlap sanitizer)
#   matrix     test/python/test_p2p_matrix_gpu.py (-m gpu) on the programs of .device/p2p_matrix.tar.xz,
#              each run with HIR_COMM_DELAY_CYCLES set; skipped when the file is absent
#   layer      benchmarks/layer.py --from ${HIR_LAYER_DIR:-.device/layer}: the LLaMA layer TP/SP, GPUs $HIR_LAYER_COUNTS
#   e2e        benchmarks/tp_overlap.py --from ${HIR_E2E_DIR:-.device/tp_overlap}: the TP/SP MLP layer, GPUs $HIR_E2E_COUNTS
#   decode     benchmarks/tp_decode.py --from ${HIR_DECODE_DIR:-.device/tp_decode}: TP decode per token of the ~1B Llama
#              (hir vs DTensor parallelize_module eager / torch.compile reduce-overhead), GPUs $HIR_DECODE_COUNTS
#   overlap    copy-engine bandwidth, benchmarks/whole_nccl.py (HIR_OVERLAP_PROBES=0: neither) + benchmarks/overlap.py
#              (AG+matmul, matmul+RS; HIR_OVERLAP_P2P: its P2P rows' options, ';'-separated), GPUs $HIR_OVERLAP_COUNTS
#   profile    benchmarks/profile_p2p.py --graph at M=${HIR_PROFILE_SIZE:-8192}: per-rank spans and rank 0's timeline of the
#              P2P rows nearest issue 39's targets (AG+matmul chunks=2, matmul+RS accumulate push; HIR_PROFILE_P2P: other
#              hir-p2p-pipeline options, ';'-separated), from one GPU moment
#   sanitizer  the single-process GPU tests (-m "gpu and not multigpu") under TORCH_CUDA_SANITIZER=1
#   tests      every GPU test but the option matrix (pytest -m gpu on $HIR_MULTI_TESTS, default test/python)
#   train      benchmarks/train_parallel.py on all N GPUs, one run per group of $HIR_TRAIN_GROUPS (default "fsdp tp",
#              and fsdp_tp with 4 or more GPUs): the ~1B Llama's FSDP / TP+SP / FSDP x TP step, hir against FSDP2,
#              DTensor, async-TP and torchtitan's layout (HIR_TRAIN_ROWS: a regex of the rows; HIR_TRAIN_LAYERS: fewer
#              layers; rows not built within a run's --budget print n/a). The tp group's global batch is
#              $HIR_TRAIN_TP_BATCH (default 1: hir's TP+SP program holds one forward and backward a sequence, so
#              the issue's 4 imports four of them; give it a call of its own: HIR_TRAIN_TP_BATCH=4 ... train)
# The train section's stage budget: while it is still to come, the sections before it leave it
# $HIR_TRAIN_STAGE s (default 300) of the sweep's budget, so one call per machine size runs both:
#   HIR_SWEEP_BUDGET=570 bash scripts/device-multi.sh SECTION... train
# GPU counts: layer, e2e and decode default to "N 2" (N = the GPUs present; only N when N <= 2),
# overlap to N (HIR_OVERLAP_HOST_START=1: overlap.py's M=8192 again, timed from each host's start).
# Caps (s, per run): HIR_CAP_MATRIX=240, HIR_CAP_LAYER=170,
# HIR_CAP_E2E=120, HIR_CAP_DECODE=150, HIR_CAP_OVERLAP=120, HIR_CAP_PROFILE=90, HIR_CAP_SANITIZER=75, HIR_CAP_TESTS=300,
# HIR_CAP_TRAIN (a group's run; default: the stage's share of what is left).
# HIR_LAYER_ROWS / HIR_DECODE_ROWS: a regex of the rows to build (the benchmarks' --rows).
# HIR_MATRIX_K: a pytest -k expression choosing the matrix's cases (e.g. 'correct and 4': the 4-GPU half).
set -uo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
source scripts/device-env.sh
export PYTHONUNBUFFERED=1
sections=${*:-matrix layer e2e overlap sanitizer}
budget=${HIR_SWEEP_BUDGET:-540}
gpus=$(python3 -c 'import torch; print(torch.cuda.device_count())')
both=$gpus
[ "$gpus" -gt 2 ] && both="$gpus 2"
P='hir-convert-to-communication{backend=cuda}'
log="$out/sweep.txt"
quiet() { grep -v "Warning\|warn(\|^\s*$\|W1\|\*\*\*\|OMP_NUM\|return func("; }
say() { echo "$*" | tee -a "$log"; }
ranks=(python3 -m torch.distributed.run --standalone)  # then --nproc_per_node=N script args

# The seconds a run may take: its cap, or what the budget has left (less 25 s for a kill:
# TERM, then KILL 20 s later, and less the train stage's reserve while it is to come),
# 0 when under 30 s are left.
reserve=0
case " $sections " in *" train "*) reserve=${HIR_TRAIN_STAGE:-300} ;; esac
allowance() {
  local left=$(( budget - reserve - (SECONDS - start) - 25 ))
  if [ "$left" -lt 30 ]; then echo 0; else echo $(( $1 < left ? $1 : left )); fi
}

# End what a killed run left on the GPUs (by pid; only this sweep's processes run there).
reap() {
  local pids
  pids=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | tr -d ' ')
  [ -z "$pids" ] && return
  say "    ending processes left on the GPUs: $(echo $pids)"
  # shellcheck disable=SC2086
  kill -9 $pids 2>/dev/null
  sleep 3
}

# bounded SECONDS LOGFILE COMMAND...: run COMMAND under timeout (TERM, KILL 20 s later),
# its output filtered into LOGFILE and the console; prints the elapsed seconds and the status.
bounded() {
  local cap=$1 file=$2 t0=$SECONDS rc
  shift 2
  if [ "$cap" -eq 0 ]; then
    say "    skipped: budget spent ($(( SECONDS - start )) s of $budget)"
    echo "skipped: budget spent" >> "$file"
    return
  fi
  timeout -k 20 "$cap" "$@" 2>&1 | quiet | tee -a "$file"
  rc=${PIPESTATUS[0]}
  [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && { say "    TIMED OUT after $cap s"; reap; }
  say "    $(( SECONDS - t0 )) s, exit $rc (sweep at $(( SECONDS - start )) s)"
}

# The --timeout of a benchmark with cap $1: when it dumps its stacks and exits, early enough
# that the dump lands before the cap's TERM (the workers start some seconds after the cap's
# clock, after their imports: run 15's overlap.py was killed before its own timeout fired).
stacks_before() { echo $(( $1 > 45 ? $1 - 25 : $1 * 2 / 3 )); }

# p2p_pipelines 'OPTIONS;OPTIONS...': one copy-engine P2P pipeline a line, each with its
# hir-p2p-pipeline options (HIR_OVERLAP_P2P, HIR_PROFILE_P2P).
p2p_pipelines() {
  local options option
  IFS=';' read -r -a options <<< "$1"
  for option in "${options[@]}"; do echo "$P,hir-p2p-pipeline{$option},hir-lower"; done
}

nvidia-smi -L | tee "$log"
say "torch $(python3 -c 'import torch; print(torch.__version__)'), $gpus GPU(s); sections: $sections; budget $budget s; set-up took $(( SECONDS - start )) s"

for section in $sections; do
  case $section in
    matrix)
      file=test/python/test_p2p_matrix_gpu.py
      if [ ! -f "$file" ]; then
        say "=== option matrix: skipped: $file is not in this tree" ; continue
      fi
      # the programs come lowered from .device/p2p_matrix.tar.xz (prepare-device39.sh); the
      # test runs each eagerly and as a graph with HIR_COMM_DELAY_CYCLES set, and rank 0
      # appends each form's line to the log as it finishes
      say "=== option matrix ($file), 2 and $gpus GPU(s)"
      bounded "$(allowance "${HIR_CAP_MATRIX:-240}")" "$out/matrix.txt" \
        env HIR_P2P_MATRIX=.device/p2p_matrix.tar.xz HIR_P2P_MATRIX_LOG="$out/matrix.txt" python3 -m pytest -q -p no:cacheprovider -m gpu -rs ${HIR_MATRIX_K:+-k "$HIR_MATRIX_K"} "$file" ;;
    layer)
      for n in ${HIR_LAYER_COUNTS:-$both}; do
        cap=$(allowance "${HIR_CAP_LAYER:-170}")
        say "=== LLaMA layer (benchmarks/layer.py), $n GPUs"
        # the script's own limits sit inside the cap: rows not built by --budget print n/a
        # (it counts from after its imports; the timed rounds take seconds)
        bounded "$cap" "$out/layer.md" "${ranks[@]}" --nproc_per_node="$n" benchmarks/layer.py --from "${HIR_LAYER_DIR:-.device/layer}" \
          --budget $(( cap > 90 ? cap - 60 : cap / 3 )) --timeout "$(stacks_before "$cap")" ${HIR_LAYER_ROWS:+--rows "$HIR_LAYER_ROWS"}
      done ;;
    e2e)
      for n in ${HIR_E2E_COUNTS:-$both}; do
        cap=$(allowance "${HIR_CAP_E2E:-120}")
        say "=== end-to-end MLP layer (benchmarks/tp_overlap.py), $n GPU(s)"
        bounded "$cap" "$out/e2e.md" "${ranks[@]}" --nproc_per_node="$n" benchmarks/tp_overlap.py --from "${HIR_E2E_DIR:-.device/tp_overlap}" --timeout "$(stacks_before "$cap")"
      done ;;
    decode)
      for n in ${HIR_DECODE_COUNTS:-$both}; do
        cap=$(allowance "${HIR_CAP_DECODE:-150}")
        say "=== TP decode per token, ~1B Llama (benchmarks/tp_decode.py), $n GPU(s)"
        # rows not built within --budget print n/a; the timing itself takes seconds
        bounded "$cap" "$out/decode.md" "${ranks[@]}" --nproc_per_node="$n" benchmarks/tp_decode.py --from "${HIR_DECODE_DIR:-.device/tp_decode}" \
          --budget $(( cap > 60 ? cap - 40 : cap / 2 )) --timeout "$(stacks_before "$cap")" ${HIR_DECODE_ROWS:+--rows "$HIR_DECODE_ROWS"}
      done ;;
    overlap)
      for n in ${HIR_OVERLAP_COUNTS:-$gpus}; do
        if [ "$n" -lt 2 ]; then say "=== AG+matmul / matmul+RS: skipped: needs 2 GPUs (have $n)"; continue; fi
        if [ "${HIR_OVERLAP_PROBES:-1}" != 0 ]; then
          say "=== copy-engine bandwidth, $n GPUs"
          bounded "$(allowance 30)" "$out/overlap.md" "${ranks[@]}" --nproc_per_node="$n" benchmarks/copy_engines.py
          say "=== can NCCL overlap a GEMM? hir's whole form by hand, process-group settings (benchmarks/whole_nccl.py), $n GPUs"
          bounded "$(allowance 60)" "$out/overlap.md" "${ranks[@]}" --nproc_per_node="$n" benchmarks/whole_nccl.py
        fi
        # the rows of runs 4 and 6 that came nearest the targets (8 parts never paid: RESULTS run 6);
        # HIR_OVERLAP_P2P: other hir-p2p-pipeline options, ';'-separated (e.g. 'transfer=push;chunks=2')
        mapfile -t p2p_rows < <(p2p_pipelines "${HIR_OVERLAP_P2P:-chunks=auto comm-stream=1;chunks=2 comm-stream=1;accumulate=1 chunks=2 transfer=push comm-stream=1;accumulate=1 chunks=4 transfer=push comm-stream=1;accumulate=1 chunks=2 copies=2 transfer=push comm-stream=1}")
        # HIR_OVERLAP_HOST_START=1 adds M=8192 timed the old way (each rank's clock from its host's start)
        for clock in gpu ${HIR_OVERLAP_HOST_START:+host}; do
          sizes=8192,16384
          [ "$clock" = host ] && sizes=8192
          cap=$(allowance "${HIR_CAP_OVERLAP:-120}")
          say "=== AG+matmul / matmul+RS (benchmarks/overlap.py), $n GPUs, clocks from the $clock start"
          bounded "$cap" "$out/overlap.md" env HIR_BENCH_START=$clock "${ranks[@]}" --nproc_per_node="$n" benchmarks/overlap.py --sizes $sizes --graph \
            --timeout "$(stacks_before "$cap")" --pipelines "$P,hir-lower" "hir-convert-to-communication{backend=nccl},hir-lower" "hir-lower-overlap" \
            --p2p "${p2p_rows[@]}"
        done
      done ;;
    profile)
      if [ "$gpus" -lt 2 ]; then say "=== P2P profile: skipped: needs 2 GPUs (have $gpus)"; continue; fi
      # HIR_PROFILE_P2P: the hir-p2p-pipeline options profiled, ';'-separated
      mapfile -t profiled < <(p2p_pipelines "${HIR_PROFILE_P2P:-chunks=2 comm-stream=1;accumulate=1 chunks=2 transfer=push comm-stream=1}")
      say "=== where the P2P rows' time goes (benchmarks/profile_p2p.py), $gpus GPUs, M=${HIR_PROFILE_SIZE:-8192}"
      bounded "$(allowance "${HIR_CAP_PROFILE:-90}")" "$out/profile.md" "${ranks[@]}" --nproc_per_node="$gpus" benchmarks/profile_p2p.py \
        --size "${HIR_PROFILE_SIZE:-8192}" --graph --pipeline "${profiled[@]}" ;;
    sanitizer)
      # only the files with GPU tests: the sanitizer sees every torch op, collection's too
      gpu_files=$(grep -l "mark\.gpu" test/python/*.py test/python/*/*.py)
      say "=== single-process GPU tests under TORCH_CUDA_SANITIZER=1 (one GPU visible): $(echo $gpu_files)"
      # shellcheck disable=SC2086
      bounded "$(allowance "${HIR_CAP_SANITIZER:-75}")" "$out/sanitizer.txt" \
        env TORCH_CUDA_SANITIZER=1 CUDA_VISIBLE_DEVICES=0 python3 -m pytest -q -p no:cacheprovider -m "gpu and not multigpu" -rfEs $gpu_files ;;
    tests)
      say "=== GPU tests, $gpus GPU(s) (${HIR_MULTI_TESTS:-test/python}; multi-GPU cases skip above the count; the option matrix is the matrix section's)"
      # one line a test (a hang names its test), and where pytest-timeout is there a hung test
      # fails after 150 s with its stacks instead of eating the cap (run 12's hang at exit)
      per_test=()
      python3 -c "import pytest_timeout" 2>/dev/null && per_test=(--timeout 150)
      # shellcheck disable=SC2086
      bounded "$(allowance "${HIR_CAP_TESTS:-300}")" "$out/tests.txt" python3 -m pytest -v -p no:cacheprovider -m gpu -rfEs "${per_test[@]}" \
        --deselect test/python/test_p2p_matrix_gpu.py::test_every_p2p_schedule_is_correct ${HIR_MULTI_TESTS:-test/python} ;;
    train)
      reserve=0  # the stage has come: the rest of the budget is its
      groups=${HIR_TRAIN_GROUPS:-fsdp tp}
      [ -z "${HIR_TRAIN_GROUPS:-}" ] && [ "$gpus" -ge 4 ] && groups="$groups fsdp_tp"
      set -- $groups
      for group in "$@"; do
        # each group an equal share of what is left (or HIR_CAP_TRAIN); rows not built within
        # --budget print n/a, and the stacks come before the cap's TERM
        share=$(( (budget - (SECONDS - start) - 25) / $# ))
        cap=$(allowance "${HIR_CAP_TRAIN:-$share}")
        say "=== ~1B Llama training step, group $group (benchmarks/train_parallel.py), $gpus GPUs"
        bounded "$cap" "$out/train_parallel.md" "${ranks[@]}" --nproc_per_node="$gpus" benchmarks/train_parallel.py --groups "$group" \
          --budget $(( cap > 120 ? cap - 90 : cap / 3 )) --timeout "$(stacks_before "$cap")" ${HIR_TRAIN_ROWS:+--rows "$HIR_TRAIN_ROWS"} \
          --tp-batch "${HIR_TRAIN_TP_BATCH:-1}" ${HIR_TRAIN_LAYERS:+--layers "$HIR_TRAIN_LAYERS"}
        shift
      done ;;
    *)
      say "device-multi: unknown section '$section' (matrix layer e2e decode overlap profile sanitizer tests train)"; exit 2 ;;
  esac
done
say "sweep done in $(( SECONDS - start )) s"
