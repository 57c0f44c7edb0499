"""SHA-256 of every file of the `.mlpackage` trees qopt writes for the built-in examples,
to check that a change to the CoreML writer leaves the packages byte-identical.

Compiles each `qopt.examples` model x scheme (those `supported`), in fp16 (the default)
and fp32 compute precision, and the KV-cache decoder as a two-method stateful package
(prefill + decode: a multifunction package, float and w4g32), saves each package and
prints one line per file: `<case>/<path in the package> <sha256>`. Every byte of a
package qopt writes is a function of the program (the manifest's item identifiers are
derived from the content, the conversion date is left out), so the whole tree is
compared, Manifest.json included.

    python benchmarks/mlpackage_digests.py > before.txt    # on the old tree
    python benchmarks/mlpackage_digests.py > after.txt     # on the new one
    diff before.txt after.txt && echo identical
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def tree_digests(root: str) -> list[tuple[str, str]]:
    """(relative path, sha256) of every file under `root`, sorted."""
    out = []
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(folder, name)
            digest = hashlib.sha256()
            with open(path, "rb") as f:
                while chunk := f.read(1 << 20):
                    digest.update(chunk)
            out.append((os.path.relpath(path, root), digest.hexdigest()))
    return out


def cases() -> list[tuple[str, object, str]]:
    """(name, what `qopt.compile` takes, compute precision) for every package compiled."""
    import torch

    from qopt.examples import MODELS, SCHEMES, apply_scheme, build_kv_llama, export_model, supported

    out: list[tuple[str, object, str]] = []
    for model in MODELS:
        for scheme in SCHEMES:
            if supported(model, scheme) is not None:
                continue
            ep = export_model(model, scheme)
            out += [(f"{model}_{scheme}_{p}", ep, p) for p in ("fp16", "fp32")]
    config = {"vocab_size": 256, "dim": 64, "n_layers": 2, "n_heads": 4, "hidden_dim": 128,
              "max_seq_len": 32}  # fmt: skip
    prompt = (torch.tensor([[1, 2, 3, 4]]), torch.arange(4))
    for scheme in ("float", "w4g32"):
        model = build_kv_llama(update="index_put", **config)
        if scheme != "float":
            model = apply_scheme(model, scheme, prompt)
        with torch.no_grad():
            methods = {
                "prefill": torch.export.export(model, prompt, strict=False),
                "decode": torch.export.export(
                    model, (torch.tensor([[1]]), torch.tensor([0])), strict=False
                ),
            }
        out.append((f"kv_llama_{scheme}_fp16", methods, "fp16"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--keep", type=Path, help="save the packages here (else a temp dir)")
    args = parser.parse_args()
    import qopt
    from qopt.logs import quiet_third_party_logs

    quiet_third_party_logs()
    root = args.keep or Path(tempfile.mkdtemp(prefix="qopt-digests-"))
    for name, program, precision in cases():
        artifact = qopt.compile(program, target="coreml", compute_precision=precision)
        path = artifact.save(root / f"{name}.mlpackage")
        for rel, digest in tree_digests(path):
            print(f"{name}/{rel} {digest}", flush=True)


if __name__ == "__main__":
    main()
