"""How this 2-rank CPU profile was made (MindSpore 2.10.0 CPU, this machine):

    PATH=$VENV/bin:$PATH msrun --worker_num=2 --local_worker_num=2 --master_port=8132 \
        --log_dir=/tmp/msrun_log --join=True make_profile.py OUTDIR

Rank 1 has a 32x wider hidden layer, so it is the straggler: its MatMul takes longer and
rank 0 waits in AllReduce.
"""

import sys

import mindspore as ms
import numpy as np
from mindspore import nn, ops
from mindspore.communication import get_rank, init
from mindspore.profiler import ProfilerActivity, profile, tensorboard_trace_handler

ms.set_context(mode=ms.GRAPH_MODE)
init()
rank = get_rank()


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        hidden = 64 if rank == 0 else 2048
        self.fc1 = nn.Dense(32, hidden)
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(hidden, 10)
        self.allreduce = ops.AllReduce()

    def construct(self, x):
        return self.allreduce(self.fc2(self.relu(self.fc1(x))))


net = Net()
x = ms.Tensor(np.ones((16, 32), np.float32))
net(x).asnumpy()  # compile outside the profile
handler = tensorboard_trace_handler(f"{sys.argv[1]}/rank_{rank}", analyse_flag=False)
with profile(activities=[ProfilerActivity.CPU], on_trace_ready=handler) as prof:
    for _ in range(3):
        net(x).asnumpy()
        prof.step()
