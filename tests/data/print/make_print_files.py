"""Make the binary print files the tests read, with MindSpore's own ``print_pb2``.

Run with any MindSpore 2.7-2.10 environment, from the repository root:

    python tests/data/print/make_print_files.py

MindSpore writes these files itself only on Ascend (``print_file_path``): one
``mindspore.prntpb.Print`` message per Print call, serialised back to back. This script
does the same by hand, one message per simulated call, and refuses to overwrite.
``expected.json`` records what each item must decode to.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
from mindspore.train import print_pb2

HERE = pathlib.Path(__file__).parent

_KINDS = {
    "Bool": np.bool_,
    "Int8": np.int8,
    "Int16": np.int16,
    "Int32": np.int32,
    "Int64": np.int64,
    "UInt8": np.uint8,
    "UInt16": np.uint16,
    "UInt32": np.uint32,
    "UInt64": np.uint64,
    "Float16": np.float16,
    "Float32": np.float32,
    "Float64": np.float64,
}


def _tensor(value, kind: str, array: np.ndarray, dims=None) -> None:
    value.tensor.tensor_type = kind
    value.tensor.dims.extend(array.shape if dims is None else dims)
    value.tensor.tensor_content = array.astype(array.dtype.newbyteorder("<")).tobytes()


def all_dtypes() -> tuple[bytes, list]:
    """Every dtype parse_print knows, as a 2x3 tensor and as a scalar; strings between."""
    out, expected = b"", []
    for kind, dtype in _KINDS.items():
        message = print_pb2.Print()
        message.value.add().desc = f"{kind}:"
        array = (
            (np.arange(6).reshape(2, 3) % 2).astype(dtype)
            if kind == "Bool"
            else (
                np.arange(-2, 4).reshape(2, 3).astype(dtype)
                if not kind.startswith("U")
                else np.arange(6).reshape(2, 3).astype(dtype)
            )
        )
        _tensor(message.value.add(), kind, array)
        scalar = np.array([7], dtype=dtype) if kind != "Bool" else np.array([True])
        _tensor(message.value.add(), kind, scalar, dims=[])
        out += message.SerializeToString()
        expected += [
            {"text": f"{kind}:"},
            {"dtype": kind, "shape": [2, 3], "values": array.tolist()},
            {"dtype": kind, "shape": [], "values": scalar[0].item()},
        ]
    # BFloat16: the top 16 bits of float32 (1.5, -2.0, 3.25 are exact in bfloat16).
    message = print_pb2.Print()
    floats = np.array([1.5, -2.0, 3.25], dtype=np.float32)
    value = message.value.add()
    value.tensor.tensor_type = "BFloat16"
    value.tensor.dims.extend([3])
    value.tensor.tensor_content = (floats.view(np.uint32) >> 16).astype("<u2").tobytes()
    out += message.SerializeToString()
    expected.append({"dtype": "BFloat16", "shape": [3], "values": floats.tolist()})
    return out, expected


def training_log() -> bytes:
    """What a short training loop with ``ops.Print()("step", step, "loss:", loss)`` writes."""
    out = b""
    for step in range(3):
        message = print_pb2.Print()
        message.value.add().desc = "step"
        _tensor(message.value.add(), "Int32", np.array([step], dtype=np.int32), dims=[])
        message.value.add().desc = "loss:"
        _tensor(message.value.add(), "Float32", np.array([1.0 / (step + 1)], dtype=np.float32), dims=[])
        out += message.SerializeToString()
    return out


def main() -> None:
    data, expected = all_dtypes()
    for name, content in (("all_dtypes.pb", data), ("training.pb", training_log())):
        with open(HERE / name, "xb") as handle:
            handle.write(content)
    with open(HERE / "expected.json", "x") as handle:
        json.dump(expected, handle, indent=1)


if __name__ == "__main__":
    main()
