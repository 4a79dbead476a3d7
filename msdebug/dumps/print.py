"""What the Print operator printed, as data: captured text and MindSpore's binary print files.

Two sources give the same model, a :class:`PrintLog` of items in print order:

* text, as the Print operator writes it to the screen (``Tensor(shape=[2], dtype=Float32,
  value=[...])`` blocks between plain strings), parsed by :func:`parse_text`;
* binary print files, as MindSpore writes them on Ascend when ``print_file_path`` is set:
  ``mindspore.prntpb.Print`` protobuf messages written back to back, decoded by
  :func:`read_print_file` without ``mindspore.parse_print`` (gone since 2.7.1).

Pure data: no IPython, no MindSpore import. MindSpore's own ``print_pb2`` is used when
MindSpore is already imported; otherwise msdebug's copy of the schema.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import MsDebugError, echo
from ..files import INT64_MAX, MiB, ascii_number, read_regular

__all__ = [
    "PrintFileError",
    "PrintLog",
    "PrintedTensor",
    "PrintedText",
    "parse_text",
    "read_appended",
    "read_print_file",
    "write_print_file",
    "DTYPES",
]


_UNREADABLE = "cannot read {name}: {reason}."
PRINT_FILE_LIMIT = 1024 * MiB  # a larger "print file" is something else (or /dev/zero behind a name)


class PrintFileError(MsDebugError, ValueError):
    """A print file that cannot be decoded; the message names the file and the byte offset."""


# MindSpore's tensor_type strings -> numpy dtype names (train/serialization.py, 2.7.0), plus the
# two that numpy lacks: BFloat16 (decoded exactly through float32) and Int4 (two per byte).
DTYPES: dict[str, str] = {
    "Bool": "bool",
    "Int8": "int8",
    "Int16": "int16",
    "Int32": "int32",
    "Int64": "int64",
    "UInt8": "uint8",
    "UInt16": "uint16",
    "UInt32": "uint32",
    "UInt64": "uint64",
    "Float16": "float16",
    "Float32": "float32",
    "Float64": "float64",
    "Complex64": "complex64",
    "Complex128": "complex128",
    "BFloat16": "float32",
    "Int4": "int8",
}


@dataclass(frozen=True)
class PrintedText:
    """A string the program printed (a Print operator's string argument, or ``print()``)."""

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, eq=False)
class PrintedTensor:
    """One printed tensor.

    ``values`` holds every element as a numpy array, or is ``None`` when MindSpore printed the
    tensor summarised (``...``): msdebug then marks it ``partial`` and never guesses the rest.
    ``text`` is the tensor exactly as printed (empty for tensors read from binary files).
    """

    shape: tuple[int, ...]
    dtype: str
    values: Any = None
    partial: bool = False
    text: str = ""
    shown: tuple[float | int | bool | complex | str, ...] = field(default=(), repr=False)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def stats(self) -> dict[str, Any]:
        """min, max, mean and the count of NaN / Inf, over the elements msdebug has.

        For a partial tensor these cover only the printed elements (``over`` says how many).
        """
        import numpy as np

        data = self.values if self.values is not None else np.asarray(self.shown)
        out: dict[str, Any] = {"over": int(data.size)}
        if data.size == 0 or data.dtype.kind not in "biuf":
            return out
        flat = data.astype(np.float64, copy=False).ravel()
        finite = flat[np.isfinite(flat)]
        out["nan"] = int(np.isnan(flat).sum())
        out["inf"] = int(np.isinf(flat).sum())
        if finite.size:
            from .datadump import exact_sum  # the same mean on every CPU

            # + 0.0: -0.0 and 0.0 are equal, and which one min() returns follows the order
            out.update(
                min=finite.min().item() + 0.0, max=finite.max().item() + 0.0, mean=exact_sum([finite]) / finite.size
            )
        return out

    def __str__(self) -> str:
        if self.text:
            return self.text
        return f"Tensor(shape={list(self.shape)}, dtype={self.dtype}, value=\n{self.values!s})"


PrintItem = PrintedText | PrintedTensor


class PrintLog:
    """Everything printed, in order.

    Attributes
    ----------
    items : tuple
        :class:`PrintedText` and :class:`PrintedTensor` in print order (parsed on first use).
    raw : bytes-like
        The exact bytes printed (captured output), or the file's bytes. Large captures are a
        read-only ``memoryview`` of the capture's in-memory file rather than a copy.
    source : str
        ``"captured"``, ``"text file"`` or ``"binary file"``.
    path : str
        The file read or written, if any.
    note : str
        Anything that went wrong around the output (e.g. a queued kernel failed).
    """

    def __init__(
        self,
        raw: bytes = b"",
        items: tuple[PrintItem, ...] | None = None,
        source: str = "captured",
        path: str = "",
        note: str = "",
    ) -> None:
        self.raw, self.source, self.path, self.note = raw, source, path, note
        self._items = items

    @property
    def items(self) -> tuple[PrintItem, ...]:
        if self._items is None:
            self._items = parse_text(self.raw)
        return self._items

    @property
    def text(self) -> str:
        """The printed text; for captured output exactly what was printed."""
        if self.source == "binary file":
            return "".join(f"{item}\n" for item in self.items)
        return str(self.raw, "utf-8", "replace")

    @property
    def tensors(self) -> list[Any]:
        """numpy arrays of the tensors printed in full (summarised ones are only in ``items``)."""
        return [item.values for item in self.items if isinstance(item, PrintedTensor) and item.values is not None]

    def __len__(self) -> int:
        return len(self.items)

    def __bool__(self) -> bool:
        return bool(self.raw) or bool(self.note) or bool(self._items)

    def __repr__(self) -> str:
        from ..views.print import text_print_log

        return text_print_log(self)

    def _repr_html_(self) -> str:
        from ..views.print import html_print_log

        return html_print_log(self)


# --------------------------------------------------------------------------- text

_TENSOR_HEAD = re.compile(r"Tensor\(shape=\[(?P<shape>[\d,\s]*)\], dtype=(?P<dtype>\w+), value=", re.ASCII)
_TOKEN = re.compile(
    r"[-+]?(?:nan|inf|\d+\.?\d*(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?)[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?)?j?"
    r"|True|False",
    re.IGNORECASE | re.ASCII,
)
_MAX_DIMS = 64  # numpy's limit, and more than any MindSpore tensor has
_UINT64_MAX = (1 << 64) - 1


def parse_text(data: bytes | str) -> tuple[PrintItem, ...]:
    """Split printed text into strings and tensors, in order.

    A tensor block starts with ``Tensor(shape=[...], dtype=..., value=`` (GRAPH and PyNative
    forms alike) and ends where its brackets close. Everything else is text, line by line.
    A block that does not parse stays text: nothing printed is dropped.
    """
    text = data if isinstance(data, str) else str(data, "utf-8", "replace")
    lines = text.splitlines()
    items: list[PrintItem] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        head = _TENSOR_HEAD.match(line)
        if head is None:
            items.append(PrintedText(line))
            i += 1
            continue
        end = _tensor_end(lines, i, head.end())
        if end is None:
            items.append(PrintedText(line))
            i += 1
            continue
        block = "\n".join(lines[i : end + 1])
        tensor = _tensor_from_text(block, head)
        if tensor is None:  # a shape or a number no tensor has: the lines stay text
            items.extend(PrintedText(text) for text in lines[i : end + 1])
        else:
            items.append(tensor)
        i = end + 1
    return tuple(items)


def _tensor_end(lines: list[str], start: int, column: int) -> int | None:
    """Index of the line where the tensor that opens at ``lines[start][column:]`` closes."""
    depth = 0
    for j in range(start, len(lines)):
        chunk = lines[j][column:] if j == start else lines[j]
        for ch in chunk:
            if ch == "[":
                depth += 1
            elif ch == "]":
                depth -= 1
        if depth <= 0 and chunk.rstrip().endswith(")"):
            return j
        if depth < 0:
            return None
    return None


def _tensor_from_text(block: str, head: re.Match) -> PrintedTensor | None:
    """The tensor ``block`` prints; None when its shape or a number in it is beyond what a tensor
    holds (a dimension or element count past int64, more than 64 dimensions, an integer past 64 bits)."""
    import numpy as np

    shape = tuple(ascii_number(d) for d in head["shape"].replace(" ", "").split(",") if d)
    if None in shape or len(shape) > _MAX_DIMS or math.prod(shape) > INT64_MAX:
        return None
    dtype = head["dtype"]
    body = block[head.end() : block.rstrip().rfind(")")]
    tokens = _TOKEN.findall(body)
    partial = "..." in body
    try:
        shown: tuple = tuple(_scalar(token) for token in tokens)
    except ValueError:
        return None
    size = math.prod(shape)
    values = None
    if not partial and len(shown) == size and dtype in DTYPES and _fits(shown, DTYPES[dtype]):
        try:
            values = np.array(shown, dtype=DTYPES[dtype]).reshape(shape)
        except ValueError:  # numpy refuses the shape ((0, 2**63 - 1) is "too big" for it)
            partial = True
    elif not partial:
        # The element count does not match the shape, or a value does not fit the dtype (300 in
        # an Int8, NaN in an Int32): keep what was printed, say so.
        partial = True
    return PrintedTensor(shape, dtype, values, partial, block, () if values is not None else shown)


def _fits(shown: tuple, dtype: str) -> bool:
    """Whether every printed value is one of ``dtype``'s (numpy would wrap, truncate or refuse)."""
    import numpy as np

    kind = np.dtype(dtype).kind
    if kind == "b":
        return all(isinstance(v, bool) for v in shown)
    if kind in "iu":
        info = np.iinfo(dtype)
        return all(isinstance(v, int) and info.min <= v <= info.max for v in shown)
    if kind == "f":
        return not any(isinstance(v, complex) for v in shown)
    return True


def _scalar(token: str):
    low = token.lower()
    if low == "true":
        return True
    if low == "false":
        return False
    if low.endswith("j"):
        return complex(token)
    if any(c in low for c in ".en") or "inf" in low:
        return float(token)
    number = ascii_number(token.lstrip("+-"), _UINT64_MAX)
    if number is None:
        raise ValueError(f"{token[:20]!r}... is no 64-bit integer")
    return -number if token.startswith("-") else number


# --------------------------------------------------------------------------- binary


def _message_classes():
    """``(Print, Print.Value, source)``: MindSpore's own classes if MindSpore is loaded, else msdebug's."""
    from ..backend.protos import print_pb2

    module = print_pb2()
    if module is not None:
        return module.Print, module.Print.Value, "mindspore.train.print_pb2"
    return (*_own_classes(), "msdebug")


_OWN: list = []


def _own_classes():
    """``mindspore.prntpb.Print`` built from msdebug's copy of print.proto (proto2), in a private
    descriptor pool so it never clashes with MindSpore's registration of the same names."""
    if _OWN:
        return _OWN
    from google.protobuf import descriptor_pb2, descriptor_pool

    F = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="msdebug_print.proto", package="mindspore.prntpb", syntax="proto2")
    tensor = proto.message_type.add(name="TensorProto")
    tensor.field.add(name="dims", number=1, type=F.TYPE_INT64, label=F.LABEL_REPEATED)
    tensor.field.add(name="tensor_type", number=2, type=F.TYPE_STRING, label=F.LABEL_REQUIRED)
    tensor.field.add(name="tensor_content", number=3, type=F.TYPE_BYTES, label=F.LABEL_REQUIRED)
    message = proto.message_type.add(name="Print")
    value = message.nested_type.add(name="Value")
    value.oneof_decl.add(name="value")
    value.field.add(name="desc", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, oneof_index=0)
    value.field.add(
        name="tensor",
        number=2,
        type=F.TYPE_MESSAGE,
        label=F.LABEL_OPTIONAL,
        type_name=".mindspore.prntpb.TensorProto",
        oneof_index=0,
    )
    message.field.add(
        name="value", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED, type_name=".mindspore.prntpb.Print.Value"
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    descriptor = pool.FindMessageTypeByName("mindspore.prntpb.Print")
    try:
        from google.protobuf.message_factory import GetMessageClass
    except ImportError:  # protobuf < 4.22
        from google.protobuf.message_factory import MessageFactory

        GetMessageClass = MessageFactory(pool).GetPrototype  # noqa: N806
    _OWN[:] = [GetMessageClass(descriptor), GetMessageClass(descriptor.nested_types_by_name["Value"])]
    return _OWN


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise IndexError(pos)
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def _values(data: bytes, name: str):
    """Yield ``(offset, value bytes)`` for each top-level ``Print.value`` field in the file.

    Several ``Print`` messages written back to back are one ``Print`` to protobuf (repeated
    fields concatenate), so the file is a run of field-1 records; walking them here gives
    each item its byte offset for error messages.
    """
    pos = 0
    while pos < len(data):
        start = pos
        try:
            tag, pos = _varint(data, pos)
            length, pos = _varint(data, pos)
        except (IndexError, ValueError):
            raise PrintFileError(
                f"{name}: truncated or corrupt at byte {start}: the record header is cut off."
            ) from None
        if tag != (1 << 3 | 2):
            raise PrintFileError(
                f"{name}: not a MindSpore print file: byte {start} starts field {tag >> 3} "
                f"(wire type {tag & 7}), expected a Print value (field 1, length-delimited)."
            )
        if pos + length > len(data):
            raise PrintFileError(
                f"{name}: truncated at byte {start}: a value of {length} bytes needs {pos + length - len(data)} "
                f"more bytes than the file has ({len(data)} bytes)."
            )
        yield start, data[pos : pos + length]
        pos += length


def decode_print_bytes(data: bytes, name: str = "<bytes>") -> tuple[PrintItem, ...]:
    """Decode concatenated ``mindspore.prntpb.Print`` messages."""
    _, Value, _ = _message_classes()
    items: list[PrintItem] = []
    for offset, chunk in _values(data, name):
        value = Value()
        try:
            value.ParseFromString(chunk)
        except Exception as error:  # noqa: BLE001 - protobuf's DecodeError differs between backends
            raise PrintFileError(f"{name}: corrupt value at byte {offset}: {_said(error)}") from None
        which = value.WhichOneof("value")
        if which == "desc":
            desc = value.desc  # protobuf gives a proto2 string that is not UTF-8 as bytes
            items.append(PrintedText(desc if isinstance(desc, str) else desc.decode("utf-8", "replace")))
        elif which == "tensor":
            try:
                items.append(_tensor_from_proto(value.tensor, name, offset))
            except PrintFileError:
                raise
            except (ValueError, OverflowError, MemoryError) as error:  # numpy refused the dims or bytes
                raise PrintFileError(f"{name}: corrupt tensor at byte {offset}: {_said(error)}") from None
        else:
            raise PrintFileError(f"{name}: the value at byte {offset} holds neither a string nor a tensor.")
    return tuple(items)


def _said(error: Exception) -> str:
    """What a library's exception says, on one bounded line."""
    return echo(" ".join(str(error).split()) or type(error).__name__, quote=False)


def _tensor_from_proto(proto, name: str, offset: int) -> PrintedTensor:
    import numpy as np

    kind = proto.tensor_type
    dims = tuple(int(d) for d in proto.dims)
    content = bytes(proto.tensor_content)
    if any(d < 0 for d in dims):
        raise PrintFileError(f"{name}: the tensor at byte {offset} has a negative dimension in {echo(list(dims))}.")
    if len(dims) > _MAX_DIMS or math.prod(dims) > INT64_MAX:
        raise PrintFileError(
            f"{name}: the tensor at byte {offset} has shape {echo(list(dims))}: "
            + (
                f"{len(dims)} dimensions, more than {_MAX_DIMS}."
                if len(dims) > _MAX_DIMS
                else "more elements than int64 counts."
            )
        )
    if kind == "str":
        return PrintedTensor((), "str", np.array(content.decode("utf-8", "replace")))
    if kind not in DTYPES:
        raise PrintFileError(
            f"{name}: the tensor at byte {offset} has dtype {kind!r}; known: {', '.join(DTYPES)}, str."
        )
    if kind == "BFloat16":
        halves = np.frombuffer(content, dtype="<u2")
        flat = (halves.astype("<u4") << 16).view("<f4")
    elif kind == "Int4":
        # Two signed 4-bit values per byte, low nibble first (MindSpore's qint4x2).
        packed = np.frombuffer(content, dtype=np.uint8)
        nibbles = np.stack([packed & 0x0F, packed >> 4], axis=1).ravel().astype(np.int8)
        flat = np.where(nibbles > 7, nibbles - 16, nibbles).astype(np.int8)
    else:
        flat = np.frombuffer(content, dtype=np.dtype(DTYPES[kind]).newbyteorder("<"))
    scalar = not dims or dims == (0,)
    shape = () if scalar else dims
    count = math.prod(shape)
    if kind == "Int4":
        flat = flat[:count]
    if flat.size != count:
        raise PrintFileError(
            f"{name}: the tensor at byte {offset} has shape {list(shape)} ({count} elements) but "
            f"{len(content)} bytes of {kind} ({flat.size} elements)."
        )
    values = flat.reshape(shape).astype(flat.dtype.newbyteorder("="))
    return PrintedTensor(shape, kind, values)


def read_print_file(path: str | os.PathLike, format: str = "auto") -> PrintLog:  # noqa: A002 - the natural name
    """Read a print file: MindSpore's binary one (Ascend) or a text one (msdebug on CPU/GPU).

    Parameters
    ----------
    path : path-like
        The file ``print_file_path`` named.
    format : {"auto", "binary", "text"}
        ``auto`` decodes binary when the whole file is a valid run of Print values, and text
        when it is not and is valid UTF-8.

    Raises
    ------
    PrintFileError
        Empty, truncated or corrupt files, naming the byte offset.
    """
    if format not in ("auto", "binary", "text"):
        raise PrintFileError(f"format={format!r}: use 'auto', 'binary' or 'text'.")
    name = os.fspath(path)
    data = read_regular(name, PRINT_FILE_LIMIT, PrintFileError, "print file", unreadable=_UNREADABLE)
    if not data:
        raise PrintFileError(f"{name} is empty: nothing was printed to it (yet).")
    if format == "text":
        return PrintLog(data, None, "text file", name)
    try:
        return PrintLog(data, decode_print_bytes(data, name), "binary file", name)
    except PrintFileError as error:
        if format == "binary" or not _looks_like_text(data) or _first_record_ok(data):
            raise error from None
    return PrintLog(data, None, "text file", name)


def read_appended(path: str | os.PathLike, offset: int) -> PrintLog | None:
    """What a binary print file gained after byte ``offset`` (MindSpore appends one Print value
    per call on Ascend), decoded; None when nothing was appended.

    Raises
    ------
    PrintFileError
        When the file cannot be read or the new bytes are not whole Print values.
    """
    name = os.fspath(path)
    data = read_regular(name, PRINT_FILE_LIMIT, PrintFileError, "print file", offset, _UNREADABLE)
    return PrintLog(data, decode_print_bytes(data, name), "binary file", name) if data else None


def _looks_like_text(data: bytes) -> bool:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(ch.isprintable() or ch in "\n\r\t" for ch in text[:4096])


def _first_record_ok(data: bytes) -> bool:
    """Whether the file starts with at least one whole, valid Print value (then it is a
    binary file that went wrong later, not a text file)."""
    try:
        offset, chunk = next(_values(data, ""))
        _, Value, _ = _message_classes()
        value = Value()
        value.ParseFromString(chunk)
        return value.WhichOneof("value") is not None
    except Exception:  # noqa: BLE001
        return False


def write_print_file(path: str | os.PathLike, calls: list[list[Any]]) -> None:
    """Write a binary print file the way MindSpore does on Ascend: one ``Print`` message per
    Print call, back to back. ``calls`` holds each call's arguments (str or numpy array).

    Used to make test files and to convert; refuses to overwrite an existing file.
    """
    import numpy as np

    Print, _, _ = _message_classes()
    names = {np.dtype(v).name: k for k, v in DTYPES.items() if k not in ("BFloat16", "Int4")}
    with open(os.fspath(path), "xb") as handle:
        for args in calls:
            message = Print()
            for arg in args:
                value = message.value.add()
                if isinstance(arg, str):
                    value.desc = arg
                    continue
                array = np.asarray(arg)
                value.tensor.tensor_type = names[array.dtype.name]
                value.tensor.dims.extend(array.shape)
                value.tensor.tensor_content = array.astype(array.dtype.newbyteorder("<")).tobytes()
            handle.write(message.SerializeToString())
