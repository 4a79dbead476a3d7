"""Ranks: ``%msrun``'s pool, the hang analysis, and attaching to a job started without msdebug."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def program(name: str) -> str | None:
    """The program ``name`` of this environment (beside its python), else the one on PATH, else None."""
    here = Path(sys.executable).with_name(name)
    return str(here) if here.exists() else shutil.which(name)
