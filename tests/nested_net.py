"""A small LeNet-like net with five levels of nested cells, trained a few steps under the
profiler: its scope names are as long as real ones
(``Gradients/Default/network-WithLossCell/_backbone-LeNetish/features-Features/block-Block/
conv-Conv2d/Grad_Conv2D/Conv2DBackpropFilter-op0``), and four of them differ only in their tail
(``.../Grad_MatMul/MatMul-op0`` to ``-op3``).

The tests import it; the browser tests run this file's text as a notebook cell.
"""

import mindspore as ms
import numpy as np
from mindspore import nn

import msdebug


class Block(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, pad_mode="same")
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.relu(self.conv(x))


class Features(nn.Cell):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.flatten = nn.Flatten()

    def construct(self, x):
        return self.flatten(self.block(x))


class LeNetish(nn.Cell):
    def __init__(self):
        super().__init__()
        self.features = Features()
        self.fc1 = nn.Dense(4 * 8 * 8, 16)
        self.fc2 = nn.Dense(16, 10)

    def construct(self, x):
        return self.fc2(self.fc1(self.features(x)))


def train_nested(steps=4):
    """A TrainOneStepCell of LeNetish with its loss: run it ``steps`` times, marking each step."""
    x = ms.Tensor(np.ones((4, 1, 8, 8), np.float32))
    y = ms.Tensor(np.zeros((4,), np.int32))
    net = LeNetish()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    train = nn.TrainOneStepCell(nn.WithLossCell(net, loss), nn.SGD(net.trainable_params(), 0.1))
    for _ in range(steps):
        train(x, y)
        msdebug.step()
