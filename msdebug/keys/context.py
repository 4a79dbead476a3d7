"""What a context key is (:class:`ContextKey`), and the keys of ``set_context`` msdebug describes.

Every key is data: its kind, default, group, help, platforms and history across MindSpore
versions. The auto-parallel keys are in :mod:`.parallel`; :mod:`.catalog` puts both together.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidValueError
from .kinds import (
    ALL_DEVICES,
    UNSET,
    Choice,
    Flag,
    Integer,
    Kind,
    Option,
    Size,
    Table,
    Text,
)

__all__ = ["ASCEND", "GPU", "GPU_ASCEND", "GROUPS", "ContextKey", "version_tuple"]


@functools.lru_cache(maxsize=64)
def version_tuple(text: str) -> tuple[int, ...]:
    """``"2.10.0rc1"`` -> ``(2, 10, 0)``; a leading ``<`` or ``≤`` is ignored."""
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


# --------------------------------------------------------------------------- keys


@dataclass(frozen=True)
class ContextKey:
    """One context key and everything msdebug knows about it.

    Attributes
    ----------
    name : str
        The ``set_context`` keyword.
    kind : Kind
        Its value kind.
    default : object
        The start-up value, in canonical form. ``None`` when it depends on the build or
        the machine, or MindSpore leaves it undefined; :attr:`default_note` then says which.
    group : str
        One of :data:`GROUPS`.
    help : str
        What it does, in a sentence or two.
    platforms : tuple of str
        Devices on which it has an effect.
    device_filtered : bool
        MindSpore's ``set_context`` drops the key, with a warning, on other devices.
    deprecated_in, removed_in : str or None
        MindSpore versions; ``"≤2.7"`` means "already so in 2.7.0, the oldest version
        msdebug checked", ``"<1.2"`` means "absent from the r1.2 API".
    replacement : str or None
        The modern way to get the same effect.
    ignored : bool
        Still accepted by ``set_context`` but ignored (only a warning).
    part_of : tuple of (str, str) or None
        ``(parent, entry)`` for keys that live inside a dict key (``jit_level`` is
        ``jit_config['jit_level']``); msdebug sets them through the parent.
    freezes_on_read : bool
        Reading it fixes it for the rest of the process, so msdebug never reads it.
    write_only : bool
        MindSpore can set it but not read it back (``get_auto_parallel_context`` refuses it).
    api : str
        The function that sets it: ``set_context``, or ``set_auto_parallel_context`` for the
        distributed settings ("called before the network is initialized").
    notes : str
        Anything else a person should know before changing it.
    """

    name: str
    kind: Kind
    default: Any
    group: str
    help: str
    platforms: tuple[str, ...] = ALL_DEVICES
    device_filtered: bool = False
    deprecated_in: str | None = None
    removed_in: str | None = None
    replacement: str | None = None
    ignored: bool = False
    part_of: tuple[str, str] | None = None
    freezes_on_read: bool = False
    write_only: bool = False
    api: str = "set_context"
    default_note: str = ""
    notes: str = ""
    documented_in: tuple[str, ...] = field(default=(), compare=False)

    def available_in(self, version: str | None) -> bool:
        """Whether ``set_context`` of MindSpore ``version`` accepts this key."""
        if self.removed_in is None or version is None:
            return True
        return version_tuple(version) < version_tuple(self.removed_in)

    def applies_to(self, device: str | None) -> bool:
        """Whether the key has an effect on ``device`` (unknown device: yes)."""
        return device is None or device in self.platforms

    def coerce(self, value: Any) -> Any:
        """Validate ``value``; errors name the key and say what is allowed."""
        try:
            return self.kind.coerce(value)
        except InvalidValueError as error:
            raise InvalidValueError(f"{self.name}: {error}") from None

    def status(self) -> str:
        """One phrase: current, deprecated (-> replacement), ignored or removed."""
        if self.removed_in:
            text = f"removed in MindSpore {self.removed_in.lstrip('<')}"
            if self.removed_in.startswith("<"):
                text = f"removed before MindSpore {self.removed_in[1:]}"
        elif self.ignored:
            text = "accepted but ignored"
        elif self.deprecated_in:
            when = self.deprecated_in
            text = (
                f"deprecated (already in MindSpore {when[1:]})"
                if when.startswith("≤")
                else f"deprecated since MindSpore {when}"
            )
        else:
            return "current"
        return f"{text}; use {self.replacement}" if self.replacement else text


GROUPS = (
    ("execution", "Execution"),
    ("device", "Device"),
    ("debug", "Debugging and dumps"),
    ("memory", "Memory"),
    ("threads", "Threads and timeouts"),
    ("cache", "Compile cache"),
    ("platform", "Platform configuration"),
    ("jit_config", "jit_config entries"),
    ("ascend_config", "ascend_config entries"),
    ("gpu_config", "gpu_config entries"),
    ("speedup", "Ascend parallel speed-up (from parallel_speed_up_json_path)"),
    ("parallel", "Auto-parallel (set_auto_parallel_context)"),
    ("removed", "Removed or ignored"),
    ("other", "Not described by msdebug"),
)

ASCEND = ("Ascend",)
GPU = ("GPU",)
GPU_ASCEND = ("GPU", "Ascend")

_MODE = Choice(
    (
        Option(0, "GRAPH_MODE", aliases=("graph", "graph_mode"), typed="graph"),
        Option(1, "PYNATIVE_MODE", aliases=("pynative", "pynative_mode"), typed="pynative"),
    )
)
_ON_OFF = Choice(
    (
        Option("ON", aliases=("on", "true", "yes", "1", True), typed="ON"),
        Option("OFF", aliases=("off", "false", "no", "0", False), typed="OFF"),
    )
)
_TARGET = Choice(
    (
        Option("CPU", typed="CPU"),
        Option("GPU", typed="GPU"),
        Option("Ascend", aliases=("davinci",), typed="Ascend"),
    )
)
_JIT_LEVEL = Choice(
    (
        # 2.10 refuses jit_level '' and 'auto': MindSpore chooses when the entry is absent.
        Option("", "auto", typed="auto", absent=True),
        Option("O0", typed="O0"),
        Option("O1", typed="O1"),
        Option("O2", typed="O2"),
    )
)
_INFER_BOOST = Choice((Option("on", typed="on"), Option("off", typed="off")))
_GPU_CONV = ("normal", "performance")


def _conv_algos(*algos: str) -> Choice:
    return Choice(tuple(Option(name, typed=name) for name in _GPU_CONV + algos))


_GPU_CONV_KINDS = {
    "conv_fprop_algo": _conv_algos(
        "implicit_gemm", "precomp_gemm", "gemm", "direct", "fft", "fft_tiling", "winograd", "winograd_nonfused"
    ),
    "conv_dgrad_algo": _conv_algos("algo_0", "algo_1", "fft", "fft_tiling", "winograd", "winograd_nonfused"),
    "conv_wgrad_algo": _conv_algos("algo_0", "algo_1", "fft", "algo_3", "fft_tiling", "winograd_nonfused"),
    "conv_allow_tf32": Flag(),
    "matmul_allow_tf32": Flag(),
}
_PRECISION_MODES = (
    "force_fp16", "allow_fp32_to_fp16", "allow_mix_precision", "must_keep_origin_dtype",
    "force_fp32", "allow_fp32_to_bf16", "allow_mix_precision_fp16", "allow_mix_precision_bf16",
)  # fmt: skip
_ASCEND_KINDS = {
    "precision_mode": Choice(tuple(Option(name, typed=name) for name in _PRECISION_MODES)),
    "jit_compile": Flag(),
    "atomic_clean_policy": Choice((Option(0, typed="0"), Option(1, typed="1"))),
    "matmul_allow_hf32": Flag(),
    "conv_allow_hf32": Flag(),
    "op_precision_mode": Text(path=True),
    "ge_options": Table(example="{'global': {'ge.opSelectImplmode': 'high_precision'}}"),
    "parallel_speed_up_json_path": Text(path=True),
    "host_scheduling_max_threshold": Integer(0),
    "cur_step_num": Integer(0),
    "save_checkpoint_steps": Integer(0),
    "need_ckpt": Flag(),
    "last_triggered_step": Integer(0),
    "hccl_watchdog": Flag(),
    "topo_order": Table(example="{'graph_name': 'dfs'}"),
    "op_debug_option": Text(),
}
_JIT_KINDS = {"jit_level": _JIT_LEVEL, "infer_boost": _INFER_BOOST}

_R12 = ("r1.2",)  # keys the r1.2 documents describe
_R0 = ("r0",)  # keys of the pre-1.0 API reference


def _entries() -> list[ContextKey]:
    K = ContextKey
    keys = [
        # ---------------------------------------------------------------- execution
        K(
            "mode",
            _MODE,
            1,
            "execution",
            "PYNATIVE_MODE runs operators one by one, as Python executes them; GRAPH_MODE compiles "
            "the whole network into a graph first and then runs it. Both modes can be switched at any time.",
            default_note="since MindSpore 2.0; GRAPH_MODE in 1.3 to 1.10",
            documented_in=_R12 + _R0,
        ),
        K(
            "pynative_synchronize",
            Flag(),
            False,
            "execution",
            "Run PyNative operators synchronously, so an error is raised at the line that caused it "
            "instead of at a later sync point such as .asnumpy(). Slower.",
            deprecated_in="2.5",
            replacement="mindspore.runtime.launch_blocking()",
            notes="launch_blocking() is one-way for the rest of the process; msdebug keeps using the "
            "reversible set_context(pynative_synchronize=...), and shows sync as on while either is set.",
            documented_in=_R12,
        ),
        K(
            "jit_config",
            Table(_JIT_KINDS, example="{'jit_level': 'O1'}"),
            {},
            "execution",
            "Global compile options for graphs: jit_level (O0 no fusion, O1 operator fusion, O2 "
            "whole-graph sink) and infer_boost.",
            deprecated_in="≤2.7",
            replacement="mindspore.jit(jit_level=...)",
        ),
        K(
            "jit_syntax_level",
            Choice(
                (
                    Option(0, "STRICT", aliases=("strict",), typed="strict"),
                    Option(1, "COMPATIBLE", aliases=("compatible",), typed="compatible"),
                    Option(2, "LAX", aliases=("lax",), typed="lax"),
                )
            ),
            2,
            "execution",
            "How much Python syntax graph compilation accepts: STRICT only the static-graph subset, "
            "LAX also runs unsupported Python through the interpreter (JIT Fallback).",
            deprecated_in="≤2.7",
            replacement="mindspore.jit(fullgraph=True) for STRICT",
        ),
        K(
            "exec_order",
            Choice((Option("bfs", typed="bfs"), Option("dfs", typed="dfs"))),
            "bfs",
            "execution",
            "The order in which a compiled graph's operators are scheduled: breadth-first or depth-first.",
            platforms=ASCEND,
            deprecated_in="≤2.7",
            replacement="the matching option of mindspore.jit",
        ),
        K(
            "debug_level",
            Choice(
                (
                    Option(0, "RELEASE", aliases=("release",), typed="release"),
                    Option(1, "DEBUG", aliases=("debug",), typed="debug"),
                )
            ),
            0,
            "execution",
            "DEBUG keeps more information during graph compilation for error reports.",
            deprecated_in="≤2.7",
        ),
        K(
            "max_call_depth",
            Integer(1),
            1000,
            "execution",
            "The deepest nesting of function calls a graph may have; raise it (and the system stack) for "
            "deeply recursive networks.",
            deprecated_in="2.5",
            replacement="mindspore.set_recursion_limit()",
            documented_in=_R12,
        ),
        K(
            "check_bprop",
            Flag(),
            False,
            "execution",
            "Check that custom back-propagation functions return gradients of the same shape and dtype "
            "as their inputs.",
            deprecated_in="≤2.7",
            documented_in=_R12,
        ),
        K(
            "support_binary",
            Flag(),
            False,
            "execution",
            "Allow graph mode to compile networks shipped as .pyc or .so without source.",
            deprecated_in="≤2.7",
            replacement="the environment variable MS_SUPPORT_BINARY",
        ),
        K(
            "enable_graph_kernel",
            Flag(),
            False,
            "execution",
            "Fuse operators into bigger kernels (graph kernel fusion) to speed up networks.",
            platforms=GPU_ASCEND,
            deprecated_in="≤2.7",
            replacement="jit_config={'jit_level': 'O1'}",
            documented_in=_R12 + _R0,
        ),
        K(
            "graph_kernel_flags",
            Text(),
            "",
            "execution",
            "Expert options for graph kernel fusion, such as '--opt_level=2 --dump_as_text'.",
            platforms=GPU_ASCEND,
            deprecated_in="≤2.7",
            replacement="the environment variable MS_DEV_GRAPH_KERNEL_FLAGS",
            documented_in=_R12,
        ),
        K(
            "disable_format_transform",
            Flag(),
            False,
            "execution",
            "Turn off the automatic NCHW to NHWC layout conversion.",
            platforms=GPU,
            device_filtered=True,
            deprecated_in="≤2.7",
            replacement="the matching option of mindspore.jit",
        ),
        K(
            "enable_reduce_precision",
            Flag(),
            True,
            "execution",
            "Let operators fall back to a lower precision when the requested one is not supported.",
            platforms=ASCEND,
            device_filtered=True,
            deprecated_in="≤2.7",
            documented_in=_R12 + _R0,
        ),
        # ---------------------------------------------------------------- device
        K(
            "device_target",
            _TARGET,
            None,
            "device",
            "The device that runs operators. It can change only before the first operator runs, and "
            "only to a device this MindSpore build supports.",
            deprecated_in="2.5",
            replacement="mindspore.set_device(target)",
            default_note="the device of the installed build (CPU for the CPU wheel)",
            notes="msdebug sets it with mindspore.set_device(), which MindSpore allows only once per process.",
            documented_in=_R12 + _R0,
        ),
        K(
            "device_id",
            Integer(0, 4095),
            0,
            "device",
            "Which physical device of that type to use. Has no effect on CPU.",
            deprecated_in="2.5",
            replacement="mindspore.set_device(target, device_id)",
            freezes_on_read=True,
            default_note="0, or the DEVICE_ID environment variable",
            notes="Reading it with get_context('device_id') stops it from ever changing again, so msdebug "
            "shows the value from mindspore.get_current_device() instead.",
            documented_in=_R12 + _R0,
        ),
        K(
            "deterministic",
            _ON_OFF,
            "OFF",
            "device",
            "Make operators give bit-identical results from run to run (sets HCCL_DETERMINISTIC and "
            "TE_PARALLEL_COMPILER). Slower.",
            platforms=ASCEND,
            deprecated_in="2.5",
            replacement="mindspore.set_deterministic(True)",
        ),
        # ---------------------------------------------------------------- debugging
        K(
            "save_graphs",
            Choice(
                (
                    Option(0, aliases=("false", "off", False), typed="0"),
                    Option(1, typed="1"),
                    Option(2, aliases=("true", "on", True), typed="2"),
                    Option(3, typed="3"),
                )
            ),
            0,
            "debug",
            "Save the intermediate representation of every compile stage: 1 basic .ir files, 2 adds "
            "backend passes, 3 adds .dot graphs. True means 2.",
            deprecated_in="2.5",
            replacement="the environment variable MS_DEV_SAVE_GRAPHS",
            documented_in=_R12 + _R0,
        ),
        K(
            "save_graphs_path",
            Text(path=True, empty_ok=False, example="./graphs"),
            ".",
            "debug",
            "Where save_graphs writes; created with mode 0700 if missing.",
            deprecated_in="2.5",
            replacement="the environment variable MS_DEV_SAVE_GRAPHS_PATH",
            documented_in=_R12 + _R0,
        ),
        K(
            "print_file_path",
            Text(path=True, clearable=True, example="print.txt"),
            "",
            "debug",
            "Send the Print operator's output to this file instead of the screen; an existing file "
            "gets a .<unix time> suffix. On Ascend MindSpore writes its binary format; on CPU and GPU, "
            "where MindSpore ignores the key, msdebug writes the printed text. '' prints to the screen.",
            deprecated_in="≤2.7",
            notes="Read either kind back with msdebug.read_print_file(path).",
            documented_in=_R12,
        ),
        K(
            "env_config_path",
            Text(path=True),
            "",
            "debug",
            "A JSON file with debugging options: rdr.enable / rdr.mode / rdr.path for the Running Data "
            "Recorder and sys.mem_reuse.",
            deprecated_in="≤2.7",
            notes="RDR exists only up to MindSpore 2.7.0; later versions read only sys.mem_reuse.",
            documented_in=_R12,
        ),
        K(
            "reserve_class_name_in_scope",
            Flag(),
            True,
            "debug",
            "Keep network class names in operator scopes (Default/net-Net1/net-Net2 rather than Default/net/net).",
            deprecated_in="≤2.7",
            documented_in=_R12 + _R0,
        ),
        K(
            "enable_profiling",
            Flag(),
            False,
            "debug",
            "Collect Ascend profiling data (old API).",
            platforms=ASCEND,
            deprecated_in="≤2.7",
            replacement="mindspore.profiler.profile",
            documented_in=_R12 + _R0,
        ),
        K(
            "profiling_options",
            Text(),
            "training_trace",
            "debug",
            "What the old Ascend profiler collects, e.g. training_trace or task_trace.",
            platforms=ASCEND,
            deprecated_in="≤2.7",
            replacement="mindspore.profiler.profile",
            documented_in=_R12 + _R0,
        ),
        # ---------------------------------------------------------------- memory
        K(
            "max_device_memory",
            Size(),
            "1024GB",
            "memory",
            "The most device memory MindSpore may use.",
            platforms=GPU_ASCEND,
            device_filtered=True,
            deprecated_in="2.5",
            replacement="mindspore.runtime.set_memory(max_size=...)",
            freezes_on_read=True,
        ),
        K(
            "mempool_block_size",
            Size(minimum=1),
            "1GB",
            "memory",
            "The block size of the device memory pool.",
            platforms=GPU_ASCEND,
            device_filtered=True,
            deprecated_in="2.5",
            replacement="mindspore.runtime.set_memory(increase_size=...)",
            freezes_on_read=True,
        ),
        K(
            "variable_memory_max_size",
            Size(maximum=31),
            "0GB",
            "memory",
            "The most device memory for variables (old Ascend option).",
            platforms=ASCEND,
            device_filtered=True,
            deprecated_in="2.5",
            replacement="mindspore.runtime.set_memory()",
            freezes_on_read=True,
            documented_in=_R12 + _R0,
        ),
        K(
            "memory_optimize_level",
            Choice(
                (
                    Option("O0", raw=0, typed="O0"),
                    Option("O1", raw=1, typed="O1"),
                )
            ),
            "O0",
            "memory",
            "O1 reuses memory more aggressively to fit bigger networks.",
            deprecated_in="2.5",
            replacement="mindspore.runtime.set_memory(optimize_level=...)",
        ),
        K(
            "memory_offload",
            Choice(
                (
                    Option("ON", raw=True, aliases=("on", "true", True), typed="ON"),
                    Option("OFF", raw=False, aliases=("off", "false", False), typed="OFF"),
                )
            ),
            "OFF",
            "memory",
            "Offload memory to the host when the device runs out.",
            platforms=GPU_ASCEND,
            deprecated_in="≤2.7",
            removed_in="2.8",
            replacement="the device argument of mindspore.Parameter",
        ),
        # ---------------------------------------------------------------- threads
        K(
            "runtime_num_threads",
            Integer(0),
            None,
            "threads",
            "Threads of the runtime's CPU thread pool.",
            deprecated_in="≤2.7",
            replacement="mindspore.device_context.cpu.op_tuning.threads_num()",
            default_note="the number of CPU cores, at most 30",
        ),
        K(
            "inter_op_parallel_num",
            Integer(0),
            0,
            "threads",
            "How many operators may run in parallel; 0 lets MindSpore decide.",
            deprecated_in="≤2.7",
            replacement="mindspore.runtime.dispatch_threads_num()",
        ),
        K(
            "op_timeout",
            Integer(0),
            900,
            "threads",
            "The longest an operator may run, in seconds (0: no limit).",
            platforms=ASCEND,
            deprecated_in="2.5",
            replacement="mindspore.device_context.ascend.op_debug.execute_timeout()",
        ),
        # ---------------------------------------------------------------- compile cache
        K(
            "enable_compile_cache",
            Flag(),
            UNSET,
            "cache",
            "Save the compiled front-end graph and reuse it when the script has not changed.",
            deprecated_in="≤2.7",
            replacement="the environment variable MS_COMPILER_CACHE_ENABLE",
            default_note="not set (the environment variable decides)",
            documented_in=_R12,
        ),
        K(
            "compile_cache_path",
            Text(),
            "",
            "cache",
            "Where the compile cache is stored (in rank_<id>/ below it).",
            deprecated_in="≤2.7",
            replacement="the environment variable MS_COMPILER_CACHE_PATH",
            documented_in=_R12,
        ),
        # ---------------------------------------------------------------- platform configs
        K(
            "ascend_config",
            Table(_ASCEND_KINDS, example="{'precision_mode': 'force_fp16'}"),
            {},
            "platform",
            "Ascend options: precision_mode, jit_compile, atomic_clean_policy, hf32 switches, "
            "op_precision_mode, ge_options and more.",
            platforms=ASCEND,
            device_filtered=True,
            deprecated_in="≤2.7",
            replacement="the functions of mindspore.device_context.ascend",
        ),
        K(
            "gpu_config",
            Table(_GPU_CONV_KINDS, example="{'conv_allow_tf32': True}"),
            {},
            "platform",
            "GPU options: convolution algorithms and TF32 switches.",
            platforms=GPU,
            device_filtered=True,
            deprecated_in="≤2.7",
            replacement="the functions of mindspore.device_context.gpu",
        ),
        K(
            "aoe_tune_mode",
            Choice(
                (
                    Option("", "off", typed="off"),
                    Option("online", typed="online"),
                    Option("offline", typed="offline"),
                )
            ),
            "",
            "platform",
            "Tune Ascend operators with AOE while compiling.",
            platforms=ASCEND,
            deprecated_in="≤2.7",
            replacement="mindspore.device_context.ascend.op_tuning.aoe_tune_mode()",
        ),
        K(
            "aoe_config",
            Table({"job_type": Choice((Option("1", typed="1"), Option("2", typed="2")))}, example="{'job_type': '2'}"),
            {},
            "platform",
            "AOE options: job_type 1 tunes subgraphs, 2 tunes operators.",
            platforms=ASCEND,
            deprecated_in="≤2.7",
            replacement="mindspore.device_context.ascend.op_tuning.aoe_job_type()",
        ),
        K(
            "aoe_job_type",
            Choice((Option("1", typed="1"), Option("2", typed="2"))),
            "2",
            "platform",
            "The AOE job type (aoe_config['job_type']).",
            platforms=ASCEND,
            part_of=("aoe_config", "job_type"),
            deprecated_in="≤2.7",
        ),
        # ---------------------------------------------------------------- jit_config entries
        K(
            "jit_level",
            _JIT_LEVEL,
            "",
            "jit_config",
            "Compile optimisation level of graphs: O0 no fusion, O1 operator fusion, O2 whole-graph "
            "sink (Ascend). Empty: MindSpore chooses.",
            part_of=("jit_config", "jit_level"),
            replacement="mindspore.jit(jit_level=...)",
        ),
        K(
            "infer_boost",
            _INFER_BOOST,
            "off",
            "jit_config",
            "Faster inference kernels; only with jit_level O0.",
            part_of=("jit_config", "infer_boost"),
            deprecated_in="2.10",
        ),
    ]
    # ---------------------------------------------------------------- ascend_config entries
    ascend_help = {
        "precision_mode": "Operator precision policy, e.g. force_fp16 or must_keep_origin_dtype.",
        "jit_compile": "Compile operators online (True) or use precompiled binaries.",
        "atomic_clean_policy": "How memory of atomic-add operators is cleaned: 0 together, 1 separately.",
        "matmul_allow_hf32": "Let MatMul compute FP32 in HF32.",
        "conv_allow_hf32": "Let convolutions compute FP32 in HF32.",
        "op_precision_mode": "Path of an operator precision configuration file.",
        "ge_options": "Raw CANN options, as {'global': {...}, 'session': {...}}.",
        "host_scheduling_max_threshold": "Graph size below which the host schedules operators.",
        "op_debug_option": "Operator debugging, currently only 'oom' (memory out of bounds).",
        "topo_order": "Per-graph topological sort order.",
        "hccl_watchdog": "A thread that watches collective communication for failures.",
        "cur_step_num": "Checkpoint-on-failure bookkeeping: the current step.",
        "need_ckpt": "Checkpoint-on-failure bookkeeping: whether a checkpoint is needed.",
        "save_checkpoint_steps": "Checkpoint-on-failure bookkeeping: steps between checkpoints.",
        "last_triggered_step": "Checkpoint-on-failure bookkeeping: the last step that saved.",
    }
    ascend_defaults = {
        "hccl_watchdog": True,
        "cur_step_num": 0,
        "need_ckpt": False,
        "save_checkpoint_steps": 0,
        "last_triggered_step": 0,
    }
    for name, text in ascend_help.items():
        keys.append(
            ContextKey(
                name,
                _ASCEND_KINDS[name],
                ascend_defaults.get(name, "" if isinstance(_ASCEND_KINDS[name], Text) else UNSET),
                "ascend_config",
                text,
                platforms=ASCEND,
                device_filtered=True,
                part_of=("ascend_config", name),
                replacement="the functions of mindspore.device_context.ascend",
            )
        )
    # ---------------------------------------------------------------- gpu_config entries
    gpu_help = {
        "conv_fprop_algo": "cuDNN algorithm for convolution forward passes.",
        "conv_dgrad_algo": "cuDNN algorithm for convolution data gradients.",
        "conv_wgrad_algo": "cuDNN algorithm for convolution weight gradients.",
        "conv_allow_tf32": "Let convolutions use TF32 tensor cores.",
        "matmul_allow_tf32": "Let MatMul use TF32 tensor cores.",
    }
    gpu_defaults = {"conv_allow_tf32": True, "matmul_allow_tf32": False}
    for name, text in gpu_help.items():
        keys.append(
            ContextKey(
                name,
                _GPU_CONV_KINDS[name],
                gpu_defaults.get(name, "normal"),
                "gpu_config",
                text,
                platforms=GPU,
                device_filtered=True,
                part_of=("gpu_config", name),
                replacement="the functions of mindspore.device_context.gpu.op_precision",
            )
        )
    # ---------------------------------------------------------------- parallel speed-up
    # Read from the JSON file named by ascend_config['parallel_speed_up_json_path']; set_context
    # also passes them straight to C++. They only matter for distributed Ascend training.
    speedup = {
        "recompute_comm_overlap": (Text(), "", "Overlap recomputation with communication."),
        "matmul_grad_comm_overlap": (Text(), "", "Overlap MatMul gradients with communication."),
        "pp_1f1b_overlap": (Text(), "", "Overlap in the 1F1B pipeline schedule."),
        "recompute_allgather_overlap_fagrad": (Flag(), False, "Overlap AllGather with FlashAttention gradients."),
        "enable_task_opt": (Flag(), False, "Fuse communication operators."),
        "enable_grad_comm_opt": (Flag(), False, "Overlap gradient computation with AllReduce."),
        "enable_opt_shard_comm_opt": (Flag(), False, "Overlap computation with optimizer-shard AllGather."),
        "compute_communicate_fusion_level": (Integer(0), 0, "Fuse computation and communication."),
        "dataset_broadcast_opt_level": (Integer(0), 0, "Optimise dataset broadcast."),
        "interleaved_matmul_comm": (Flag(), False, "Interleave MatMul with communication."),
        "interleaved_layernorm_comm": (Flag(), False, "Interleave LayerNorm with communication."),
        "bias_add_comm_swap": (Flag(), False, "Swap AllReduce and BiasAdd."),
        "enable_begin_end_inline_opt": (Flag(), False, "Inline the first and last pipeline stages."),
        "enable_concat_eliminate_opt": (Flag(), False, "Eliminate Concat operators."),
        "enable_fused_cast_add_opt": (Flag(), False, "Fuse Cast and Add."),
        "enable_flash_attention_load_balance": (Flag(), False, "Balance FlashAttention across devices."),
        "enable_allreduce_slice_to_reducescatter": (Flag(), False, "Turn sliced AllReduce into ReduceScatter."),
        "enable_interleave_split_concat_branch": (Flag(), False, "Interleave split/concat branches."),
        "enable_interleave_parallel_branch": (Flag(), False, "Interleave parallel branches."),
        "enable_offloading_packed_experts": (Flag(), None, "Offload packed MoE experts."),
        "enable_parallel_split": (Flag(), False, "Split operators for parallel execution."),
    }
    for name, (kind, default, text) in speedup.items():
        # MindSpore's C++ context never initialises this flag: it reads True or False depending on
        # what the process did before importing MindSpore (import pytest first, and it is False).
        note = "none: MindSpore leaves it uninitialised" if default is None else ""
        keys.append(ContextKey(name, kind, default, "speedup", text, platforms=ASCEND, default_note=note))
    # ---------------------------------------------------------------- removed or ignored
    keys += [
        ContextKey(
            "grad_for_scalar",
            Flag(),
            False,
            "removed",
            "Let grad compute derivatives with respect to Python scalar inputs.",
            deprecated_in="≤2.7",
            removed_in="2.10",
            replacement="Tensor inputs (tensor derivative)",
            documented_in=_R12,
        ),
        ContextKey(
            "precompile_only",
            Flag(),
            False,
            "removed",
            "Only compile the network, do not run it.",
            deprecated_in="2.5",
            removed_in="2.10",
            replacement="the environment variable MS_DEV_PRECOMPILE_ONLY",
            documented_in=_R12,
        ),
        ContextKey(
            "exception_dump",
            Choice((Option("0"), Option("1"), Option("2"))),
            "2",
            "removed",
            "Dump operator inputs and outputs on Ascend exceptions (an ascend_config entry).",
            platforms=ASCEND,
            removed_in="2.6",
            part_of=("ascend_config", "exception_dump"),
            replacement="mindspore.device_context.ascend.op_debug.aclinit_config()",
        ),
        ContextKey(
            "enable_dump",
            Flag(),
            False,
            "removed",
            "Dump operator data on Ascend.",
            platforms=ASCEND,
            removed_in="2.5",
            replacement="a dump configuration file named by the MINDSPORE_DUMP_CONFIG environment variable",
            documented_in=_R12 + _R0,
        ),
        ContextKey(
            "save_dump_path",
            Text(path=True),
            ".",
            "removed",
            "Where enable_dump wrote its data.",
            platforms=ASCEND,
            removed_in="2.5",
            replacement="the path field of the MINDSPORE_DUMP_CONFIG file",
            documented_in=_R12 + _R0,
        ),
        ContextKey(
            "save_ms_model",
            Flag(),
            False,
            "removed",
            "Save a MindSpore Lite model converted from the graph.",
            removed_in="<1.2",
            replacement="mindspore.export(..., file_format='MINDIR')",
            documented_in=_R0,
        ),
        ContextKey(
            "save_ms_model_path",
            Text(path=True),
            ".",
            "removed",
            "Where save_ms_model wrote the model.",
            removed_in="<1.2",
            replacement="the file_name argument of mindspore.export",
            documented_in=_R0,
        ),
        ContextKey(
            "enable_sparse",
            Flag(),
            False,
            "removed",
            "Enable sparse tensors (they no longer need a switch).",
            deprecated_in="≤2.7",
            ignored=True,
            documented_in=_R12,
        ),
        ContextKey(
            "auto_tune_mode",
            Choice((Option("NO_TUNE"), Option("RL"), Option("GA"), Option("RL,GA"))),
            "NO_TUNE",
            "removed",
            "Tune Ascend operator tiling while building (RL, GA or both).",
            platforms=ASCEND,
            deprecated_in="≤2.7",
            ignored=True,
            replacement="aoe_tune_mode, now mindspore.device_context.ascend.op_tuning.aoe_tune_mode()",
            documented_in=_R12,
        ),
        ContextKey(
            "enable_auto_mixed_precision",
            Flag(),
            True,
            "removed",
            "Switch on automatic mixed precision globally.",
            platforms=ASCEND,
            deprecated_in="≤2.7",
            ignored=True,
            replacement="mindspore.amp.auto_mixed_precision()",
            documented_in=_R12 + _R0,
        ),
    ]
    return keys
