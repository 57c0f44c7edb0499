#!/usr/bin/env bash
# Run every benchmark and write their output into one file (default benchmarks/results.md).
#   benchmarks/run_all.sh [--quick] [OUTPUT]
# The Vulkan device is chosen by $QOPT_VULKAN_DEVICE (an index or a substring of the
# device name, e.g. QOPT_VULKAN_DEVICE=NVIDIA); lavapipe when nothing else is there.
# Each benchmark prints its own table and ratios; a failing one is recorded with its
# exit status and the others still run.
set -uo pipefail
cd "$(dirname "$0")/.."
quick=()
if [ "${1:-}" = "--quick" ]; then quick=(--quick); shift; fi
out=${1:-benchmarks/results.md}
py=${PYTHON:-.venv/bin/python}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
  echo "# qopt benchmarks"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%MZ), $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores, device: ${QOPT_VULKAN_DEVICE:-first compute device}"
  # every benchmark that has a --quick form (the zoo, conformance and breadth tables are
  # long runs of their own: see docs/)
  for bench in vulkan_kernels decode decode_positions e2e shapes variants native_runtime native_reuse \
      llamacpp_anchor fusion compile_time compile_report compile_336m cold_compile; do
    echo
    echo "## $bench"
    echo
    echo '```'
    start=$SECONDS
    "$py" "benchmarks/$bench.py" "${quick[@]}" 2>&1
    status=$?
    echo '```'
    echo
    echo "exit status $status, $((SECONDS - start)) s"
  done
} | tee "$tmp"
mv "$tmp" "$out"
trap - EXIT
echo "written: $out"
