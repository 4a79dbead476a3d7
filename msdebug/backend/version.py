"""Which MindSpore is installed and whether it is imported, without importing it."""

from __future__ import annotations

import functools
import sys

__all__ = ["INSTALL_HINT", "installed_version", "is_imported", "package_version"]

INSTALL_HINT = 'pip install "msdebug[mindspore]"  (MindSpore 2.7.0-2.10.x with numpy<2)'


def package_version(name: str) -> str | None:
    """An installed package's version from its metadata, without importing it."""
    import importlib.metadata  # costs milliseconds: only when asked

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def installed_version() -> str | None:
    """MindSpore's version (asked on every completion, so remembered)."""
    return package_version("mindspore")


def is_imported() -> bool:
    """Whether anything in this process has imported MindSpore yet."""
    return sys.modules.get("mindspore") is not None
