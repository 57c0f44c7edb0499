"""Benchmarks (DESIGN.md §5): scripts that print ratios side by side in one run."""
