# qopt: `make demo` runs the main job on the built-in examples, `make test` runs
# every test. Both set up .venv first (scripts/setup.sh).
PY := .venv/bin/python

.PHONY: setup demo test lit unit

setup:
	bash scripts/setup.sh

demo: setup
	$(PY) -m qopt.demo

lit: setup
	.venv/bin/lit -v tests/lit

unit: setup
	$(PY) -m pytest -n 2 tests/unit

test: setup
	.venv/bin/ruff check qopt tests
	.venv/bin/basedpyright -p pyproject.toml
	.venv/bin/lit -sv tests/lit
	QOPT_VULKAN_VALIDATION=1 $(PY) -m pytest -n 2 tests/unit
