"""qopt's version: the installed distribution's (package metadata), else, for a
checkout imported without installing it (PYTHONPATH), the `[project]` version of
the pyproject.toml beside the package."""

from __future__ import annotations

import functools
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

_PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


@functools.cache
def qopt_version() -> str:
    """The version string, e.g. "0.1.0" ("unknown" if neither source has one)."""
    try:
        return version("qopt")
    except PackageNotFoundError:
        pass
    try:
        with _PYPROJECT.open("rb") as f:
            project = tomllib.load(f).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return "unknown"
    found = project.get("version")
    return found if project.get("name") == "qopt" and isinstance(found, str) else "unknown"


__all__ = ["qopt_version"]
