#include "sim/cost/free_constants.h"

#include <algorithm>
#include <cmath>

#include "common/check.h"

namespace murmur::sim::cost {
namespace {

// Pinned facts, not fitted.
// IEEE 802.3ae: 10 Gbit/s; 802.3ba and InfiniBand EDR 4x: 100 Gbit/s.
constexpr double k10GbELine = 1.25e9;
constexpr double k100GbLine = 12.5e9;
// RDMA stacks reach most of an EDR link: nccl-tests and BytePS's RDMA van
// report about 90% (11-12 GB/s) on 100 Gbit/s. No ResNet-50 cell on IB is
// limited by it (the PCIe path inside a node is slower), so it stays pinned.
constexpr double kRdmaShare = 0.9;

enum Index {
  kTcpShare,
  kNcclSocket,
  kTcpStep,
  kIbStep,
  kIntraBandwidth,
  kIntraStep,
  kHorovodOp,
  kPsLocal,
  kPsTcp,
  kPsTcpConnection,
  kPsTcpPartition,
  kPsRdmaPartition,
  kByteSchedulerRound,
  kOverlapShare,
  kCount
};

}  // namespace

std::vector<FreeConstant> shipped_free_constants() {
  std::vector<FreeConstant> c(kCount);
  c[kTcpShare] = {"tcp_goodput_share",
                  0.92,
                  0.88,
                  0.95,
                  "byte",
                  "TCP payload over Ethernet line rate: at most 1448/1538 = 0.94 at MTU 1500 (iperf: 9.4 "
                  "Gbit/s on 10GbE); a stack that streams large messages reaches most of it"};
  c[kNcclSocket] = {"nccl_socket_Bps",
                    2.6e9,
                    1.5e9,
                    6e9,
                    "byte",
                    "NCCL 2.4 socket transport, one connection per ring and a helper thread: CPU-bound near "
                    "20-30 Gbit/s on 100GbE (NCCL_NSOCKS_PERTHREAD/NCCL_SOCKET_NTHREADS exist to lift it)"};
  c[kTcpStep] = {"tcp_ring_step_s",
                 20e-6,
                 5e-6,
                 60e-6,
                 "message (ring step)",
                 "one-way latency of a small TCP message through the kernel stack, 10-50 us"};
  c[kIbStep] = {"ib_ring_step_s",
                5e-6,
                1e-6,
                20e-6,
                "message (ring step)",
                "IB verbs one-way latency 1-2 us plus NCCL's proxy thread hand-off"};
  c[kIntraBandwidth] = {"intra_node_Bps",
                        6.3e9,
                        3e9,
                        12e9,
                        "byte",
                        "PCIe 3.0 x16 (15.75 GB/s raw, ~12 GB/s achieved); the RTX 2080 Ti has no peer-to-peer "
                        "(p2pBandwidthLatencyTest in NVIDIA/nccl-tests#117), so NCCL stages every hop through "
                        "host memory"};
  c[kIntraStep] = {"intra_ring_step_s",
                   20e-6,
                   2e-6,
                   100e-6,
                   "message (ring step)",
                   "NCCL shared-memory hand-off between processes, 5-50 us"};
  c[kHorovodOp] = {
      "horovod_op_s", 100e-6,
      10e-6,          2e-3,
      "all-reduce",   "Horovod's coordinator round (MPI gather of ready names) and NCCL launch per fused op"};
  c[kPsLocal] = {
      "ps_local_Bps", 2.8e9,  1.5e9,
      12e9,           "byte", "BytePS's reduce inside the node, GPU-to-host and host-to-GPU copies over PCIe 3.0 x16"};
  c[kPsTcp] = {"ps_tcp_Bps",
               2.4e9,
               1.5e9,
               4e9,
               "byte",
               "ps-lite over ZeroMQ on a fast NIC: no more than one thread's memcpy() (BytePS maintainers, "
               "bytedance/byteps#237), 1.5-4 GB/s; on 10GbE the wire binds first"};
  c[kPsTcpConnection] = {"ps_tcp_connection_Bps",
                         1e9,
                         0.5e9,
                         2.5e9,
                         "byte",
                         "one ZeroMQ TCP connection: BytePS 0.2's best-practice notes (bytedance/byteps#206) say "
                         "a single TCP connection usually cannot reach 25 Gbit/s (3.1 GB/s)"};
  c[kPsTcpPartition] = {"ps_tcp_partition_s",
                        4e-3,
                        0.5e-3,
                        10e-3,
                        "partition (overlaps in flight)",
                        "a partition's trip through BytePS's stages and ps-lite over ZeroMQ: push, the server "
                        "waiting for every worker's push, pull; each stage a queue served by its own thread"};
  c[kPsRdmaPartition] = {"ps_rdma_partition_s",
                         100e-6,
                         10e-6,
                         300e-6,
                         "partition (overlaps in flight)",
                         "the same over BytePS's RDMA van: two verbs round trips of a few us plus the server's "
                         "handling"};
  c[kByteSchedulerRound] = {"bytescheduler_round_s",
                            1.5e-3,
                            0.5e-3,
                            5e-3,
                            "negotiation round (one tensor's partitions up to the 16 MB credit)",
                            "Horovod's background loop: a cycle of at most HOROVOD_CYCLE_TIME, 5 ms in the Horovod "
                            "0.16 that ByteScheduler's PyTorch image builds (1 ms from v0.21.0, #2468), launches what "
                            "is ready; ByteScheduler releases one round at a time. The coordinator's gather from the "
                            "remote ranks is charged apart (paper_methods.cc, CostModel::gather_s)"};
  c[kOverlapShare] = {"overlap_share",
                      0.8,
                      0.5,
                      1.0,
                      "iteration (while backward runs)",
                      "collective kernels and copies share SMs and PCIe with backward"};
  // The values calibration.cc's fit found (murmur-sim --calibrate).
  const double fitted[kCount] = {0.95,     2.131e+09, 7.083e-06, 4e-06,    5.236e+09, 1.318e-05, 4.931e-05,
                                 2.18e+09, 1.5e+09,   1.061e+09, 0.002089, 0.0003,    0.001919,  0.7983};
  for (int i = 0; i < kCount; ++i) c[static_cast<std::size_t>(i)].value = fitted[i];
  return c;
}

double prior(const FreeConstant& constant) { return std::sqrt(constant.low * constant.high); }

PaperConstants derive_constants(const std::vector<double>& v) {
  MURMUR_CHECK_EQ(v.size(), static_cast<std::size_t>(kCount));
  PaperConstants c;
  const double tcp10 = v[kTcpShare] * k10GbELine;
  const double tcp100 = v[kTcpShare] * k100GbLine;
  const double rdma = kRdmaShare * k100GbLine;
  // Each stack reaches the smaller of the wire's goodput and its software's cap.
  c.networks["10gbe-tcp"] = {std::min(tcp10, v[kNcclSocket]), v[kTcpStep], std::min(tcp10, v[kPsTcp]),
                             std::min(tcp10, v[kPsTcpConnection]), v[kPsTcpPartition]};
  c.networks["100gbe-tcp"] = {std::min(tcp100, v[kNcclSocket]), v[kTcpStep], std::min(tcp100, v[kPsTcp]),
                              std::min(tcp100, v[kPsTcpConnection]), v[kPsTcpPartition]};
  c.networks["100gb-ib-rdma"] = {rdma, v[kIbStep], rdma, rdma, v[kPsRdmaPartition]};
  c.intra_ring_bandwidth_Bps = v[kIntraBandwidth];
  c.intra_ring_step_s = v[kIntraStep];
  c.horovod_op_s = v[kHorovodOp];
  c.ps_local_bandwidth_Bps = v[kPsLocal];
  c.bytescheduler_round_s = v[kByteSchedulerRound];
  c.overlap_share = v[kOverlapShare];
  return c;
}

}  // namespace murmur::sim::cost
