"""MindSpore's own generated protobuf modules, when MindSpore is installed."""

from __future__ import annotations

__all__ = ["anf_ir_model", "print_pb2"]


def anf_ir_model(data: bytes):
    """``data`` parsed as ``mindspore.irpb.ModelProto`` with MindSpore's own generated module
    (``.pb`` files of RDR and save_graphs); None when MindSpore is not installed.

    Raises
    ------
    ValueError
        When the bytes are not a ModelProto.
    """
    try:
        from mindspore.train import anf_ir_pb2
    except ImportError:
        return None
    model = anf_ir_pb2.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as error:  # noqa: BLE001 - protobuf's DecodeError and RuntimeWarning-like errors
        raise ValueError(str(error) or type(error).__name__) from None
    return model


def print_pb2():
    """MindSpore's ``mindspore.train.print_pb2`` module if MindSpore is already imported and its
    generated code loads with the installed protobuf; else None (never imports MindSpore)."""
    import sys

    if "mindspore" not in sys.modules:
        return None
    try:
        from mindspore.train import print_pb2 as module
    except Exception:  # noqa: BLE001 - a print_pb2 generated for another protobuf version: callers use their own
        return None
    return module
