"""Real networks for ``tests/test_real_networks.py``, written the way MindSpore's model code is.

LeNet-5 and a ResNet BasicBlock with a downsample shortcut as MindSpore's model zoo writes them
(``nn.Conv2d``/``BatchNorm2d``/``ReLU``/``MaxPool2d``/``Flatten``/``Dense``), MindSpore's own
``nn.TransformerEncoderLayer``, a training step (``nn.TrainOneStepCell``: net, loss and
optimizer) and ``Model.train`` over a ``GeneratorDataset`` with a callback. Sizes are small, so
each run takes a fraction of a second. The tests run this whole file as one notebook cell: the
lines ``%%msnan`` and ``%%msdiff`` name are the lines of this file.

The helpers at the end put a fault where a test chose to: a NaN in one element of a Parameter,
a layer whose output goes through ``ops.log`` of a negative number, a gradient that only the
backward pass makes NaN, a learning rate that makes one layer's update infinite.
"""

import mindspore as ms
import numpy as np
from mindspore import nn, ops
from mindspore.common.initializer import Normal, TruncatedNormal
from mindspore.dataset import GeneratorDataset
from mindspore.train import Callback, Model


class LeNet5(nn.Cell):
    """LeNet-5 for 1x32x32 images, as the model zoo writes it."""

    def __init__(self, num_class=10, num_channel=1):
        super().__init__()
        self.conv1 = nn.Conv2d(num_channel, 6, 5, pad_mode="valid")
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode="valid")
        self.relu = nn.ReLU()
        self.max_pool2d = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Dense(16 * 5 * 5, 120, weight_init=Normal(0.02))
        self.fc2 = nn.Dense(120, 84, weight_init=Normal(0.02))
        self.fc3 = nn.Dense(84, num_class, weight_init=Normal(0.02))

    def construct(self, x):
        x = self.max_pool2d(self.relu(self.conv1(x)))
        x = self.max_pool2d(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)


def conv3x3(in_channel, out_channel, stride=1):
    return nn.Conv2d(
        in_channel, out_channel, 3, stride=stride, padding=1, pad_mode="pad", weight_init=TruncatedNormal(0.2)
    )


def conv1x1(in_channel, out_channel, stride=1):
    return nn.Conv2d(in_channel, out_channel, 1, stride=stride, pad_mode="valid", weight_init=TruncatedNormal(0.2))


class BasicBlock(nn.Cell):
    """ResNet's basic block: two 3x3 convolutions, and a 1x1 convolution with BatchNorm on the
    shortcut when the block changes the stride or the channels."""

    expansion = 1

    def __init__(self, in_channel, out_channel, stride=1):
        super().__init__()
        self.conv1 = conv3x3(in_channel, out_channel, stride)
        self.bn1 = nn.BatchNorm2d(out_channel)
        self.conv2 = conv3x3(out_channel, out_channel)
        self.bn2 = nn.BatchNorm2d(out_channel)
        self.relu = nn.ReLU()
        self.down_sample = stride != 1 or in_channel != out_channel
        if self.down_sample:
            self.down_sample_layer = nn.SequentialCell([conv1x1(in_channel, out_channel, stride),
                                                        nn.BatchNorm2d(out_channel)])  # fmt: skip

    def construct(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.down_sample:
            identity = self.down_sample_layer(identity)
        return self.relu(out + identity)


class Encoder(nn.Cell):
    """MindSpore's ``nn.TransformerEncoderLayer`` over embedded tokens, pooled to a score."""

    def __init__(self, d_model=16, nhead=2, dropout=0.0):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=32, dropout=dropout, batch_first=True)
        self.head = nn.Dense(d_model, 1, weight_init=Normal(0.2))

    def construct(self, x, padding=None):
        h = self.layer(x, src_key_padding_mask=padding)
        return self.head(h.mean(1))


class MLP(nn.Cell):
    """A small classifier for the training step and ``Model.train``."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(8, 16, weight_init=Normal(0.3))
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(16, 16, weight_init=Normal(0.3))
        self.fc3 = nn.Dense(16, 4, weight_init=Normal(0.3))

    def construct(self, x):
        return self.fc3(self.relu(self.fc2(self.relu(self.fc1(x)))))


def train_step_of(net, optimizer="momentum", own_rate=None):
    """``nn.TrainOneStepCell``: the net with its loss and an optimizer over its parameters;
    ``own_rate``: a layer whose parameters get a learning-rate group of their own."""
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    params = net.trainable_params()
    if own_rate is not None:
        own = [p for p in params if any(p is q for q in own_rate.trainable_params())]
        params = [{"params": [p for p in params if all(p is not q for q in own)]}, {"params": own, "lr": 0.01}]
    if optimizer == "momentum":
        opt = nn.Momentum(params, learning_rate=0.01, momentum=0.9)
    else:
        opt = nn.SGD(params, learning_rate=0.01)
    return nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)


def images(shape, seed=0, scale=1.0):
    """Inputs: normal values of ``shape``."""
    return ms.Tensor((np.random.default_rng(seed).normal(size=shape) * scale).astype(np.float32))


def labels(count, classes=4, seed=0):
    return ms.Tensor(np.random.default_rng(seed).integers(0, classes, size=count).astype(np.int32))


def samples(steps=3, batch=2, seed=0):
    """A tiny dataset for ``Model.train``: ``steps`` batches of 8 features and a label of 4."""
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(steps * batch, 8)).astype(np.float32)
    classes = rng.integers(0, 4, size=steps * batch).astype(np.int32)
    return GeneratorDataset(list(zip(features, classes, strict=True)), ["x", "y"], shuffle=False).batch(batch)


class LossLog(Callback):
    """A callback that keeps the loss of every step."""

    def __init__(self):
        super().__init__()
        self.losses = []

    def on_train_step_end(self, run_context):
        self.losses.append(float(run_context.original_args().net_outputs.asnumpy()))


def model_of(net):
    """``Model`` with a loss and Momentum, as the tutorials build it."""
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    return Model(net, loss, nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9))


# --------------------------------------------------------------------------- faults


def nan_at(parameter, index):
    """One element of ``parameter`` becomes NaN (``index``: a flat index)."""
    values = parameter.asnumpy().copy()
    values.reshape(-1)[index] = np.nan
    parameter.set_data(ms.Tensor(values))


def log_of_negative(layer):
    """The layer's output goes through ``ops.log`` of a negative number: a NaN made inside it."""
    forward = layer.construct

    def construct(*args, **kwargs):
        out = forward(*args, **kwargs)
        first = out[0] if isinstance(out, tuple) else out  # MultiheadAttention returns (output,)
        poisoned = ops.log(first - ops.abs(first) - 1.0)
        return (poisoned, *out[1:]) if isinstance(out, tuple) else poisoned

    layer.construct = construct


def nan_gradient(dense):
    """A Dense layer whose weight's gradient is NaN while everything forward stays finite:
    ``0 * sqrt(w - w)`` adds 0, and its derivative is ``0 * (1 / 0) * 0``."""

    def construct(x):
        w = dense.weight + 0 * ops.sqrt(dense.weight - dense.weight)
        return ops.bias_add(ops.matmul(x, w.T), dense.bias)

    dense.construct = construct


def infinite_rate(step):
    """The learning rate of the group ``train_step_of(own_rate=...)`` made: infinite (a schedule
    that divided by zero). The gradients stay finite; the update does not."""
    for name, parameter in step.optimizer.parameters_and_names():
        if name.endswith("learning_rate_group_1"):
            parameter.set_data(ms.Tensor(np.float32(np.inf)))
            return
    raise LookupError("no learning-rate group of its own: build the step with train_step_of(own_rate=layer)")
