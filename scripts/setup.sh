#!/usr/bin/env bash
# Create (or reuse) the virtual environment .venv with qopt and its test tools.
# torch==2.13.0 is installed first, from the CPU build on this machine's disk;
# any other torch version would be downloaded (gigabytes).
set -euo pipefail
cd "$(dirname "$0")/.."

stamp=.venv/.qopt-setup
want="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)"
if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet "torch==2.13.0"
.venv/bin/python -m pip install --quiet -e ".[test]"
.venv/bin/python -c "import qopt, torch, torchao, xdsl; print('qopt ready: torch', torch.__version__, '| xdsl', xdsl.__version__ if hasattr(xdsl, '__version__') else '')"
echo "$want" > "$stamp"
