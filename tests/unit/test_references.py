"""Nothing in the repository refers to files outside it.

The design documents live in docs/; a citation in code, tests or docs must point at a
file a person who clones qopt has. This test reads every tracked text file and fails on

- a path that leaves the repository (a sibling folder of the checkout, an absolute
  `/work/...` path), or a
  relative Markdown link that resolves outside the repository root;
- a design-document name that is not a file of the repository (the names the project's
  brief used before docs/ existed: DESIGN, PATTERNS, STYLE, ARCHITECTURE-REVIEW, LLM,
  as `.md` files or as `NAME §n` section citations);

and checks that the paths the docs name exist and that docs/interfaces.md lists every
pass `qopt-opt` registers.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SELF = Path(__file__).resolve()

_NAMES = r"(?:DESIGN|PATTERNS|STYLE|ARCHITECTURE-REVIEW|LLM)"
SIBLING = "../" + "shared"
"""The brief's folder beside the checkout (spelled in two parts: this file names it too)."""
OUTSIDE = re.compile(r"\.\./shared\b|/work/(?:shared|main|wt)\b")
NAMED_FILE = re.compile(r"[\w./-]*\b" + _NAMES + r"\.md\b")
SECTION = re.compile(r"\b" + _NAMES + r"(?:\.md)?\s*§")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def tracked_files() -> list[Path]:
    """The repository's tracked files (every file under the root when git is absent)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
        ).stdout.decode()
        return [ROOT / name for name in listed.split("\0") if name]
    except (OSError, subprocess.SubprocessError):
        skip = {".git", ".venv", "__pycache__", "build"}
        return [
            p for p in ROOT.rglob("*") if p.is_file() and not skip & set(p.relative_to(ROOT).parts)
        ]


def _inside(path: Path) -> bool:
    return path.resolve().is_relative_to(ROOT)


def bad_references(path: Path, text: str) -> list[str]:
    """`path:line: what` for every reference in `text` that leaves the repository."""
    found: list[str] = []
    where = path.relative_to(ROOT) if _inside(path) else path
    for number, line in enumerate(text.splitlines(), 1):
        for match in OUTSIDE.finditer(line):
            found.append(f"{where}:{number}: {match.group()} is outside the repository")
        for match in NAMED_FILE.finditer(line):
            name = match.group().rstrip(".")
            candidates = [path.parent / name, ROOT / name, ROOT / "docs" / name]
            if not any(c.is_file() and _inside(c) for c in candidates):
                found.append(f"{where}:{number}: {name} is not a file of the repository")
        for match in SECTION.finditer(line):
            found.append(f"{where}:{number}: {match.group()} cites a document outside docs/")
        if path.suffix == ".md":
            for match in LINK.finditer(line):
                target = match.group(1).split("#")[0]
                if not target or re.match(r"[a-z][a-z0-9+.-]*:", target):
                    continue  # an anchor or a URL
                if not _inside(path.parent / target):
                    found.append(f"{where}:{number}: link {target} leaves the repository")
    return found


def test_no_reference_leaves_the_repository() -> None:
    found: list[str] = []
    for path in tracked_files():
        if path.resolve() == SELF or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary files
        found += bad_references(path, text)
    assert not found, "references outside the repository:\n" + "\n".join(found)


def test_the_check_finds_references_outside() -> None:
    """The scanner is not vacuous: each kind of reference outside is reported."""
    here = ROOT / "docs" / "example.md"
    doc = "PATTERNS" + ".md"
    text = "\n".join(
        [
            "the notes are in " + SIBLING + "/" + "notes.md",
            f"exact semantics in {doc} and in STYLE §1.3",
            "[design](../../elsewhere/notes.md) and [ok](ir.md#quant) and https://x.org",
        ]
    )
    found = bad_references(here, text)
    assert any(SIBLING in f for f in found)
    assert any(f"{doc} is not a file" in f for f in found)
    assert any("STYLE §" in f for f in found)
    assert any("../../elsewhere/notes.md leaves" in f for f in found)
    assert not any("ir.md" in f or "x.org" in f for f in found)


CODE_PATH = re.compile(r"`((?:qopt|tests|benchmarks|scripts|docs)/[\w./-]*)`")


GENERATED = {"qopt/kernels/spirv", "build", "build/runtime"}
"""Paths the set-up writes (gitignored): named by the docs, absent from a fresh clone."""


def test_paths_in_the_docs_exist() -> None:
    """Every file or folder the docs and the README name in code format is there
    (`<family>` placeholders, globs and what the set-up generates aside): the recipes
    stay true when code moves."""
    missing = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            for match in CODE_PATH.finditer(line):
                path = match.group(1).rstrip("/.")
                if "<" in path or "*" in path or path.split("/")[0] == "build":
                    continue
                if path not in GENERATED and not (ROOT / path).exists():
                    missing.append(f"{doc.relative_to(ROOT)}:{number}: {path}")
    assert not missing, "paths named in the docs that do not exist:\n" + "\n".join(missing)


def test_interfaces_lists_every_pass() -> None:
    from qopt.lowering import get_all_passes

    text = (ROOT / "docs" / "interfaces.md").read_text()
    section = text.split("## Passes and pipelines", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `([a-z0-9-]+)` \|", section, re.MULTILINE))
    assert listed == set(get_all_passes())
