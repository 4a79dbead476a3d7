"""MindSpore's side of ``%msrun``: the scheduler process of the job msrun starts.

msrun runs its task script once as the scheduler (``MS_ROLE=MS_SCHED``); :func:`serve_cluster` is
what that process does. The workers are IPython kernels (:func:`msdebug.ipython.ranks.serve_rank`)
whose cells call ``mindspore.communication.init()`` themselves.
"""

from __future__ import annotations

import signal

__all__ = ["serve_cluster"]


def serve_cluster() -> None:
    """Build the cluster as its scheduler, then serve it until the pool kills this process (it
    holds nothing to save)."""
    from mindspore.communication import init

    init()
    while True:
        signal.pause()
