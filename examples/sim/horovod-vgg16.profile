# A model profile for murmur-sim (format: docs/sim-files.md), written by
# bench/sim/horovod_profiles.py for the Horovod paper's held-out check
# (docs/sim.md, "A second published set: Horovod").
# Single GPU (P100, batch 64): 132 images/s (TensorFlow benchmarks, DGX-1 P100, synthetic).
# 32 tensors, 138,357,544 parameters.

model vgg16
batch 64
samples-per-s 132
layer conv1_1.weight params=1728 flops=1.73408e+08
layer conv1_1.bias params=64 flops=8.99154e+08
layer conv1_2.weight params=36864 flops=3.69938e+09
layer conv1_2.bias params=64 flops=1.34873e+09
layer conv2_1.weight params=73728 flops=1.84969e+09
layer conv2_1.bias params=128 flops=4.49577e+08
layer conv2_2.weight params=147456 flops=3.69938e+09
layer conv2_2.bias params=128 flops=6.74365e+08
layer conv3_1.weight params=294912 flops=1.84969e+09
layer conv3_1.bias params=256 flops=2.24788e+08
layer conv3_2.weight params=589824 flops=3.69938e+09
layer conv3_2.bias params=256 flops=2.24788e+08
layer conv3_3.weight params=589824 flops=3.69938e+09
layer conv3_3.bias params=256 flops=3.37183e+08
layer conv4_1.weight params=1179648 flops=1.84969e+09
layer conv4_1.bias params=512 flops=1.12394e+08
layer conv4_2.weight params=2359296 flops=3.69938e+09
layer conv4_2.bias params=512 flops=1.12394e+08
layer conv4_3.weight params=2359296 flops=3.69938e+09
layer conv4_3.bias params=512 flops=1.68591e+08
layer conv5_1.weight params=2359296 flops=9.24844e+08
layer conv5_1.bias params=512 flops=2.80986e+07
layer conv5_2.weight params=2359296 flops=9.24844e+08
layer conv5_2.bias params=512 flops=2.80986e+07
layer conv5_3.weight params=2359296 flops=9.24844e+08
layer conv5_3.bias params=512 flops=4.21478e+07
layer fc6.weight params=102760448 flops=2.05521e+08
layer fc6.bias params=4096 flops=1.72032e+06
layer fc7.weight params=16777216 flops=3.35544e+07
layer fc7.bias params=4096 flops=1.72032e+06
layer fc8.weight params=4096000 flops=8.192e+06
layer fc8.bias params=1000 flops=560000
