"""Command-line tools: `qopt-opt` (qopt_opt) and `qopt-run` (qopt_run)."""
