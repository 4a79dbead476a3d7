"""The keys of ``set_auto_parallel_context`` (the distributed settings), as data.

They join the ``set_context`` keys of :mod:`.context` in :mod:`.catalog`.
"""

from __future__ import annotations

from .context import ContextKey
from .kinds import (
    Choice,
    DatasetStrategy,
    Flag,
    Integer,
    IntegerList,
    Opaque,
    OptimizerConfig,
    Option,
    PipelineConfig,
    Table,
    Text,
)

_PARALLEL_MODE = Choice(
    (
        Option("stand_alone"),
        Option("data_parallel"),
        Option("hybrid_parallel"),
        Option("semi_auto_parallel"),
        Option("auto_parallel"),
    )
)
_SEARCH_MODE = Choice((Option("recursive_programming"), Option("sharding_propagation"), Option("dynamic_programming")))
_FUSION = Table(
    {"mode": Choice((Option("auto"), Option("size"), Option("index"))), "config": Opaque()},
    "{'mode': 'size', 'config': 32}",
)
_AP = "set_auto_parallel_context"
_AP_NOTE = (
    "Set it before the network is built: MindSpore reads the auto-parallel context when a Cell is "
    "created and when it compiles. set_auto_parallel_context is to be replaced by "
    "mindspore.parallel.auto_parallel.AutoParallel(net, ...)."
)


def _parallel_entries() -> list[ContextKey]:
    """The keys of ``set_auto_parallel_context`` that its docstring documents (MindSpore 2.10)."""

    def K(name, kind, default, help, **more):  # noqa: N802 - reads like the ContextKey it makes
        return ContextKey(name, kind, default, "parallel", help, api=_AP, notes=more.pop("notes", _AP_NOTE), **more)

    return [
        K(
            "parallel_mode",
            _PARALLEL_MODE,
            "stand_alone",
            "How the network is spread over the ranks: stand_alone (one device), data_parallel (each rank a "
            "slice of the batch), hybrid_parallel (sharded by hand), semi_auto_parallel (by the shard "
            "strategies set on operators) or auto_parallel (searched). PyNative runs only stand_alone and "
            "data_parallel; CPU only data parallel.",
        ),
        K(
            "device_num",
            Integer(1),
            1,
            "How many devices (ranks) the job uses.",
            notes="MindSpore's documents say 1 to 4096; it checks only that the number is positive. " + _AP_NOTE,
        ),
        K("global_rank", Integer(0, 4095), 0, "This process's rank in the job."),
        K(
            "gradients_mean",
            Flag(),
            False,
            "Divide the gradients by the number of ranks after their AllReduce (not in stand_alone).",
        ),
        K(
            "gradient_fp32_sync",
            Flag(),
            True,
            "Run the AllReduce of gradients in float32 (auto_parallel and semi_auto_parallel only).",
        ),
        K(
            "loss_repeated_mean",
            Flag(),
            True,
            "Run the mean operator backwards when the calculation is repeated across ranks.",
        ),
        K(
            "search_mode",
            _SEARCH_MODE,
            "recursive_programming",
            "How auto_parallel searches shard strategies: "
            "recursive_programming, sharding_propagation (from the operators given one) or dynamic_programming "
            "(not recommended).",
        ),
        K(
            "auto_parallel_search_mode",
            _SEARCH_MODE,
            "recursive_programming",
            "The old name of search_mode, kept for compatibility.",
            deprecated_in="≤2.7",
            replacement="search_mode",
        ),
        K(
            "parameter_broadcast",
            Flag(),
            False,
            "Broadcast rank 0's parameters to every rank before training, so all start from the same values.",
        ),
        K(
            "strategy_ckpt_load_file",
            Text(path=True, clearable=True),
            "",
            "Where to load a parallel strategy checkpoint from.",
            deprecated_in="≤2.7",
            replacement="strategy_ckpt_config={'load_file': ...}",
        ),
        K(
            "strategy_ckpt_save_file",
            Text(path=True, clearable=True),
            "",
            "Where to save the parallel strategy checkpoint.",
            deprecated_in="≤2.7",
            replacement="strategy_ckpt_config={'save_file': ...}",
        ),
        K(
            "full_batch",
            Flag(),
            False,
            "Every rank loads the whole batch (auto_parallel).",
            deprecated_in="≤2.7",
            replacement="dataset_strategy='full_batch'",
        ),
        K(
            "dataset_strategy",
            DatasetStrategy(),
            "data_parallel",
            "How the dataset is sharded over the ranks: "
            "data_parallel, full_batch, or a shard strategy per input such as ((2,1),(2,1)).",
        ),
        K(
            "enable_parallel_optimizer",
            Flag(),
            False,
            "Shard the weight update over the data-parallel ranks, to save time and memory.",
        ),
        K(
            "force_fp32_communication",
            Flag(),
            False,
            "Force reduce collectives (AllReduce, ReduceScatter) to communicate in float32.",
        ),
        K(
            "enable_alltoall",
            Flag(),
            False,
            "Let AllToAll be generated; off, AllGather, Split and Concat are used instead.",
        ),
        K(
            "all_reduce_fusion_config",
            IntegerList(),
            [],
            "Fuse the AllReduce of gradients at these parameter indices ([]: fusion off).",
        ),
        K("pipeline_stages", Integer(1), 1, "How many pipeline stages the ranks are divided into."),
        K(
            "pipeline_result_broadcast",
            Flag(),
            False,
            "Broadcast the last stage's result to every stage in pipeline-parallel inference.",
        ),
        K(
            "pipeline_config",
            PipelineConfig(
                {
                    "pipeline_interleave": Flag(),
                    "pipeline_scheduler": Choice(
                        tuple(
                            Option(name)
                            for name in ("1f1b", "gpipe", "seqpipe", "seqvpp", "seqsmartvpp", "zero_bubble_v")
                        )
                    ),
                },
                "{'pipeline_interleave': True, 'pipeline_scheduler': 'gpipe'}",
                required=("pipeline_interleave", "pipeline_scheduler"),
            ),
            {"pipeline_interleave": False, "pipeline_scheduler": "1f1b"},
            "Pipeline parallelism: interleaved execution and the scheduler (1f1b, gpipe, seqpipe, seqvpp, "
            "seqsmartvpp, zero_bubble_v).",
            write_only=True,
        ),
        K(
            "parallel_optimizer_config",
            OptimizerConfig(
                {
                    "gradient_accumulation_shard": Flag(),
                    "parallel_optimizer_threshold": Integer(0),
                    "optimizer_weight_shard_size": Integer(1, extra=(-1,)),
                    "optimizer_level": Choice((Option("level1"), Option("level2"), Option("level3"))),
                },
                "{'optimizer_level': 'level2'}",
            ),
            {},
            "How the parallel optimizer shards (with enable_parallel_optimizer): optimizer_level, "
            "parallel_optimizer_threshold (KB), optimizer_weight_shard_size.",
            write_only=True,
        ),
        K(
            "comm_fusion",
            Table(
                {"openstate": Flag(), "allreduce": _FUSION, "allgather": _FUSION, "reducescatter": _FUSION},
                "{'allreduce': {'mode': 'size', 'config': 32}}",
            ),
            {
                "openstate": True,
                "allreduce": {"mode": "auto", "config": None},
                "allgather": {"mode": "auto", "config": None},
                "reducescatter": {"mode": "auto", "config": None},
            },
            "Fusion of collectives: openstate, and a mode (auto, size in MB, index) per AllReduce, AllGather "
            "and ReduceScatter.",
        ),
        K(
            "strategy_ckpt_config",
            Table(
                {
                    "load_file": Text(path=True, clearable=True),
                    "save_file": Text(path=True, clearable=True),
                    "only_trainable_params": Flag(),
                },
                "{'save_file': './strategy.ckpt'}",
            ),
            {"load_file": "", "save_file": "", "only_trainable_params": True},
            "Where to load and save the parallel strategy checkpoint (.json for JSON, else protobuf).",
        ),
        K(
            "group_ckpt_save_file",
            Text(path=True, clearable=True),
            "",
            "Where to save the parallel group checkpoint.",
            write_only=True,
        ),
        K(
            "auto_pipeline",
            Flag(),
            False,
            "Choose the number of pipeline stages automatically, up to "
            "pipeline_stages (auto_parallel with recursive_programming).",
        ),
        K("dump_local_norm", Flag(), False, "Dump each rank's local_norm (semi_auto_parallel, auto_parallel)."),
        K("dump_local_norm_path", Text(path=True, clearable=True), "", "Where local_norm dumps go."),
        K("dump_device_local_norm", Flag(), False, "Dump the device's local_norm (semi_auto_parallel, auto_parallel)."),
    ]
