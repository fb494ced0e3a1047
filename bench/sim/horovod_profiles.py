#!/usr/bin/env python3
"""Writes the model profiles of the Horovod paper's held-out check.

Sergeev & Del Balso, "Horovod: fast and easy distributed deep learning in
TensorFlow" (arXiv 1802.05799), trained tf_cnn_benchmarks' ResNet-101 and
VGG-16 (batch 64 per GPU, synthetic data) on servers of 4 Pascal GPUs over
25 Gbit/s RoCE. murmur-sim predicts their scaling efficiency from these
profiles and examples/sim/horovod-*.cluster without refitting anything
(docs/sim.md, "A second published set: Horovod").

The FLOP conventions are builtin_profiles.cc's (docs/sim-files.md, "Where
the times come from"): convolution 2 k^2 c_in c_out H_out W_out, dense
2 in out, a memory-bound pass 140 FLOP-equivalents per output element, an
op without a tensor charged to the tensors of the op before it. Single-GPU
throughput: TensorFlow's benchmark page, "Details for NVIDIA DGX-1 (NVIDIA
Tesla P100)", training synthetic data, batch 64: VGG16 132 images/s;
ResNet-101 is not in that table, so its time per image is interpolated by
FLOPs between ResNet-50 (238) and ResNet-152 (95.6) of the same table.

Usage: bench/sim/horovod_profiles.py [--out examples/sim]
"""
import argparse
import pathlib

PASS_FLOPS = 140


class Builder:
    def __init__(self):
        self.layers = []  # [name, params, flops]
        self.last = 0

    def op(self, tensors, flops):
        self.last = len(self.layers)
        for name, params in tensors:
            self.layers.append([name, params, flops / len(tensors)])

    def charge(self, flops):
        share = flops / (len(self.layers) - self.last)
        for layer in self.layers[self.last:]:
            layer[2] += share

    def conv(self, name, k, cin, cout, size, bias):
        self.op([(name + ".weight", k * k * cin * cout)], 2.0 * k * k * cin * cout * size * size)
        if bias:
            self.op([(name + ".bias", cout)], cout * size * size * PASS_FLOPS)

    def norm(self, name, channels, elements, passes):
        self.op([(name + ".weight", channels), (name + ".bias", channels)], elements * passes * PASS_FLOPS)

    def dense(self, name, fan_in, fan_out):
        self.op([(name + ".weight", fan_in * fan_out)], 2.0 * fan_in * fan_out)
        self.op([(name + ".bias", fan_out)], fan_out * PASS_FLOPS)

    def flops(self):
        return sum(layer[2] for layer in self.layers)


def resnet(blocks):
    """torchvision-style ResNet (v1.5) at 224x224, as builtin_profiles.cc's resnet50."""
    b = Builder()
    b.conv("conv1", 7, 3, 64, 112, bias=False)
    b.norm("bn1", 64, 64 * 112 * 112, 2)
    b.charge(64 * 112 * 112 * PASS_FLOPS)  # max pool
    cin, size = 64, 56
    for stage, count in enumerate(blocks):
        width = 64 << stage
        cout = 4 * width
        for block in range(count):
            p = f"layer{stage + 1}.{block}"
            out_size = size // 2 if block == 0 and stage > 0 else size
            b.conv(p + ".conv1", 1, cin, width, size, bias=False)
            b.norm(p + ".bn1", width, width * size * size, 2)
            b.conv(p + ".conv2", 3, width, width, out_size, bias=False)
            b.norm(p + ".bn2", width, width * out_size * out_size, 2)
            b.conv(p + ".conv3", 1, width, cout, out_size, bias=False)
            b.norm(p + ".bn3", cout, cout * out_size * out_size, 1)
            if block == 0:
                b.conv(p + ".downsample.0", 1, cin, cout, out_size, bias=False)
                b.norm(p + ".downsample.1", cout, cout * out_size * out_size, 1)
            b.charge(2.0 * cout * out_size * out_size * PASS_FLOPS)  # residual add and ReLU
            cin, size = cout, out_size
    b.charge(2048 * 7 * 7 * PASS_FLOPS)  # global average pool
    b.dense("fc", 2048, 1000)
    b.charge(3 * 1000 * PASS_FLOPS)  # softmax cross-entropy
    return b


def vgg16():
    """VGG-16 (configuration D) at 224x224: 13 3x3 convolutions with biases, 3 dense layers."""
    b = Builder()
    cin, size = 3, 224
    for stage, (width, convs) in enumerate([(64, 2), (128, 2), (256, 3), (512, 3), (512, 3)]):
        for i in range(convs):
            name = f"conv{stage + 1}_{i + 1}"
            b.conv(name, 3, cin, width, size, bias=True)
            b.charge(width * size * size * PASS_FLOPS)  # ReLU
            cin = width
        b.charge(width * size * size * PASS_FLOPS)  # max pool
        size //= 2
    b.dense("fc6", 512 * 7 * 7, 4096)
    b.charge(2 * 4096 * PASS_FLOPS)  # ReLU, dropout
    b.dense("fc7", 4096, 4096)
    b.charge(2 * 4096 * PASS_FLOPS)
    b.dense("fc8", 4096, 1000)
    b.charge(3 * 1000 * PASS_FLOPS)  # softmax cross-entropy
    return b


def write(path, name, builder, samples_per_s, note):
    params = sum(layer[1] for layer in builder.layers)
    lines = [
        "# A model profile for murmur-sim (format: docs/sim-files.md), written by",
        "# bench/sim/horovod_profiles.py for the Horovod paper's held-out check",
        "# (docs/sim.md, \"A second published set: Horovod\").",
        f"# {note}",
        f"# {len(builder.layers)} tensors, {params:,} parameters.",
        "",
        f"model {name}",
        "batch 64",
        f"samples-per-s {samples_per_s:.4g}",
    ]
    lines += [f"layer {n} params={p} flops={f:.6g}" for n, p, f in builder.layers]
    path.write_text("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="examples/sim", help="folder for the .profile files")
    out = pathlib.Path(parser.parse_args().out)
    # Time per image is taken as linear in FLOPs between the two ResNets the
    # P100 table measures (an interpolation, not a measurement).
    r50, r101, r152 = resnet([3, 4, 6, 3]).flops(), resnet([3, 4, 23, 3]).flops(), resnet([3, 8, 36, 3]).flops()
    t50, t152 = 1 / 238, 1 / 95.6
    r101_per_s = 1 / (t50 + (t152 - t50) * (r101 - r50) / (r152 - r50))
    write(out / "horovod-resnet101.profile", "resnet101", resnet([3, 4, 23, 3]), r101_per_s,
          "Single GPU (P100, batch 64): interpolated by FLOPs between ResNet-50 238 and ResNet-152 95.6 images/s.")
    write(out / "horovod-vgg16.profile", "vgg16", vgg16(), 132,
          "Single GPU (P100, batch 64): 132 images/s (TensorFlow benchmarks, DGX-1 P100, synthetic).")


if __name__ == "__main__":
    main()
