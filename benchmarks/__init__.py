"""Benchmarks (docs/architecture.md): scripts that print ratios side by side in one run."""
