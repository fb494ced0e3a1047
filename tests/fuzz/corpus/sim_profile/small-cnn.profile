# A model profile for murmur-sim (format: docs/sim-files.md).
#
# A small CNN for 32x32 CIFAR images: three 3x3 convolutions (each followed
# by a 2x2 pool) and one fully connected layer. Use it as a template:
#
#   murmur-sim --model examples/sim/small-cnn.profile ...
#
# Each 'layer' line is one gradient tensor, in the order the forward pass
# uses them (the order of PyTorch's model.named_parameters()). The backward
# pass visits them in reverse, and a tensor's gradient is ready for
# communication once its backward time has elapsed.

model small-cnn
batch 128                 # per GPU, the batch the times are for
samples-per-s 9000        # single-GPU throughput you measured at that batch

# params= is the tensor's element count. flops= is the forward FLOPs of the
# op that computes with it: only the ratios between layers matter, so per
# sample or per batch are both fine. Backward is taken as twice the forward,
# and all times are scaled so that forward + backward of all layers takes
# batch / samples-per-s = 14.2 ms.
#
# A bias has no product of its own: give it the cost of adding it, about one
# pass over the layer's output (output elements x ~100 FLOPs).
layer conv1.weight params=864     flops=1.77e6   # 2*3*3*3*32 * 32*32
layer conv1.bias   params=32      flops=3.3e6    # 32*32*32 outputs
layer conv2.weight params=18432   flops=9.44e6   # 2*3*3*32*64 * 16*16
layer conv2.bias   params=64      flops=1.6e6
layer conv3.weight params=73728   flops=9.44e6   # 2*3*3*64*128 * 8*8
layer conv3.bias   params=128     flops=0.8e6
layer fc.weight    params=20480   flops=40960    # 2*2048*10
layer fc.bias      params=10      flops=1000

# Instead of flops=, a profile may give measured times per layer (for one
# batch, in milliseconds), e.g.
#   layer conv1.weight params=864 forward-ms=0.21 backward-ms=0.40
# All layers of one file then give forward-ms= and backward-ms=; without a
# samples-per-s line the times are used as they are.
