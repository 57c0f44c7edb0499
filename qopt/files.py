"""Files written atomically, with the permissions a plain `open(path, "w")` gives.

Every output (an `-o` file, a `.qvk`, an `.npz`) is written under a temporary name
beside its destination and renamed into place, so a failed run leaves nothing
behind. `tempfile.mkstemp` creates that file 0600 (it is meant to be private);
the renamed output would keep it. `temp_file_beside` opens the temporary file
and gives it 0666 less the process umask (0644 under the usual umask 022), as
creating the destination directly would; `default_modes` does the same for a
directory tree written by another tool.
"""

from __future__ import annotations

import os
import tempfile

_UMASK_FIELD = "Umask:"


def current_umask() -> int:
    """The process umask (read from /proc on Linux; elsewhere set and restored)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(_UMASK_FIELD):
                    return int(line[len(_UMASK_FIELD) :].strip(), 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def temp_file_beside(path: str | os.PathLike[str]) -> tuple[int, str]:
    """A new temporary file in `path`'s directory (hidden, named after it): its file
    descriptor and path, with the mode a new file at `path` would get."""
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(target)}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~current_umask())
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    return fd, tmp


def default_modes(root: str | os.PathLike[str]) -> None:
    """Give every file under the directory `root` 0666, and every directory (root
    included) 0777, less the umask: the modes a plain `open()` / `mkdir()` gives,
    whatever modes the tool that wrote the tree chose (coremltools writes an
    `.mlpackage`'s model.mlmodel 0600)."""
    mask = current_umask()
    os.chmod(root, 0o777 & ~mask)
    for directory, dirs, files in os.walk(root):
        for name in dirs:
            os.chmod(os.path.join(directory, name), 0o777 & ~mask)
        for name in files:
            os.chmod(os.path.join(directory, name), 0o666 & ~mask)


__all__ = ["current_umask", "default_modes", "temp_file_beside"]
