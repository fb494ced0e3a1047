// Throughput of each CUDA compression kernel in GB/s of fp32 input, next to a
// device-to-device cudaMemcpy of the same bytes measured in the same run
// (docs/compressors.md, "On the GPU"). Built only with CUDA; without a usable
// device it prints why and exits 3; a case whose result differs from the
// CPU reference, or that fails, makes it exit 1 (google-benchmark reports
// no aggregate for a case that stopped with an error, so the exit status is
// where scripts/gpu-check.sh learns of it).
//
//   compress_cuda_bench [--benchmark_repetitions=5 --benchmark_report_aggregates_only=true]
//
// Timing: CUDA events around each launch on the default stream (manual
// time), so launch overhead is included as a trainer pays it. Before timing, each kernel's output is copied back once
// and compared with the CPU reference body on the same input (kernels/cpu): equal bit for bit where kernels/compress.h
// promises it, within 1e-3 for PowerSGD (float sums in another order); a mismatch skips the case with the error.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/compress.h"

namespace mk = murmur::kernels;

namespace {

bool g_any_case_failed = false;  // main's exit status; set by fail()

void fail(benchmark::State& state, const std::string& why) {
  g_any_case_failed = true;
  state.SkipWithError(why.c_str());
}

constexpr std::size_t kElements = std::size_t(1) << 24;  // 64 MiB of fp32: a 16 M-parameter model
constexpr std::size_t kTopK = kElements / 100;           // top-1%, as in the main job
constexpr unsigned kQsgdLevels = 15;
constexpr std::uint64_t kSeed = 7;

#define CUDA_OK(call)                                                                                        \
  do {                                                                                                       \
    const cudaError_t err_ = (call);                                                                         \
    if (err_ != cudaSuccess) throw std::runtime_error(std::string(#call) + ": " + cudaGetErrorString(err_)); \
  } while (0)

// Device memory for one case, freed when it goes.
class DeviceBytes {
 public:
  explicit DeviceBytes(std::size_t bytes) { CUDA_OK(cudaMalloc(&ptr_, bytes == 0 ? 1 : bytes)); }
  ~DeviceBytes() { cudaFree(ptr_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
};

const std::vector<float>& input() {
  static const std::vector<float> x = [] {
    std::vector<float> v(kElements);
    std::mt19937 gen(1234);
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (auto& e : v) e = d(gen);
    return v;
  }();
  return x;
}

template <typename T>
std::vector<T> to_host(const T* device, std::size_t n) {
  std::vector<T> h(n);
  CUDA_OK(cudaMemcpy(h.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

// A kernel call in the CUB shape: (scratch, scratch_bytes) -> Status.
using KernelCall = std::function<mk::Status(void*, std::size_t&)>;

std::vector<std::byte> host_scratch_for(const KernelCall& cpu) {
  std::size_t bytes = 0;
  if (cpu(nullptr, bytes) != mk::Status::kOk) throw std::runtime_error("cpu size query failed");
  return std::vector<std::byte>(bytes == 0 ? 1 : bytes);
}

mk::Status run_cpu(const KernelCall& cpu) {
  auto scratch = host_scratch_for(cpu);
  std::size_t bytes = scratch.size();
  return cpu(scratch.data(), bytes);
}

// Times `device` (after its size query) with events; `check` compares its
// output with the CPU reference and returns what is wrong, or "".
void time_device(benchmark::State& state, const KernelCall& device, const std::function<std::string()>& check,
                 std::size_t input_bytes) {
  try {
    std::size_t bytes = 0;
    if (device(nullptr, bytes) != mk::Status::kOk) throw std::runtime_error("size query failed");
    DeviceBytes scratch(bytes);
    if (device(scratch.as<void>(), bytes) != mk::Status::kOk) throw std::runtime_error("kernel failed");
    CUDA_OK(cudaDeviceSynchronize());
    if (const std::string wrong = check(); !wrong.empty()) {
      fail(state, wrong);
      return;
    }
    cudaEvent_t start, stop;
    CUDA_OK(cudaEventCreate(&start));
    CUDA_OK(cudaEventCreate(&stop));
    for (auto _ : state) {
      CUDA_OK(cudaEventRecord(start, nullptr));
      const mk::Status status = device(scratch.as<void>(), bytes);
      CUDA_OK(cudaEventRecord(stop, nullptr));
      if (status != mk::Status::kOk) throw std::runtime_error("kernel failed in the timed loop");
      CUDA_OK(cudaEventSynchronize(stop));
      float ms = 0;
      CUDA_OK(cudaEventElapsedTime(&ms, start, stop));
      state.SetIterationTime(ms / 1e3);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    state.counters["GBps"] =
        benchmark::Counter(double(input_bytes) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  } catch (const std::exception& e) {
    fail(state, e.what());
  }
}

std::string compare_exact(const char* what, const void* a, const void* b, std::size_t bytes) {
  return std::memcmp(a, b, bytes) == 0 ? std::string() : std::string(what) + ": differs from the CPU reference";
}

struct Inputs {
  DeviceBytes x{kElements * sizeof(float)};
  Inputs() { CUDA_OK(cudaMemcpy(x.as<float>(), input().data(), kElements * 4, cudaMemcpyHostToDevice)); }
};

void BM_DeviceMemcpy(benchmark::State& state) {
  Inputs in;
  DeviceBytes out(kElements * 4);
  const KernelCall copy = [&](void*, std::size_t& b) {
    b = 0;
    return cudaMemcpyAsync(out.as<float>(), in.x.as<float>(), kElements * 4, cudaMemcpyDeviceToDevice, nullptr) ==
                   cudaSuccess
               ? mk::Status::kOk
               : mk::Status::kMalformed;
  };
  time_device(
      state, copy,
      [&] {
        return compare_exact("memcpy", to_host(out.as<float>(), kElements).data(), input().data(), kElements * 4);
      },
      kElements * 4);
}

// fp32 -> 16-bit encodings (fp16, bf16): the same shape, one body.
using HalfEncodeOnDevice = mk::Status (*)(void*, std::size_t&, const float*, std::uint16_t*, std::size_t, mk::Stream);
using HalfEncodeOnHost = mk::Status (*)(void*, std::size_t&, const float*, std::uint16_t*, std::size_t);

void time_half_encode(benchmark::State& state, const char* what, HalfEncodeOnDevice device, HalfEncodeOnHost host) {
  Inputs in;
  DeviceBytes out(kElements * 2);
  time_device(
      state,
      [&](void* s, std::size_t& b) {
        return device(s, b, in.x.as<float>(), out.as<std::uint16_t>(), kElements, nullptr);
      },
      [&] {
        std::vector<std::uint16_t> ref(kElements);
        run_cpu([&](void* s, std::size_t& b) { return host(s, b, input().data(), ref.data(), kElements); });
        return compare_exact(what, to_host(out.as<std::uint16_t>(), kElements).data(), ref.data(), kElements * 2);
      },
      kElements * 4);
}

void BM_F16Encode(benchmark::State& state) {
  time_half_encode(state, "f16 encode", mk::cuda::f32_to_f16, mk::cpu::f32_to_f16);
}

void BM_Bf16Encode(benchmark::State& state) {
  time_half_encode(state, "bf16 encode", mk::cuda::f32_to_bf16, mk::cpu::f32_to_bf16);
}

void BM_QsgdEncode(benchmark::State& state) {
  Inputs in;
  const std::size_t packed = mk::packed_bytes(kElements, mk::qsgd_bits(kQsgdLevels));
  DeviceBytes norm(sizeof(float)), codes(packed);
  time_device(
      state,
      [&](void* s, std::size_t& b) {
        return mk::cuda::qsgd_encode(s, b, in.x.as<float>(), kElements, kQsgdLevels, kSeed, norm.as<float>(),
                                     codes.as<std::uint8_t>(), nullptr);
      },
      [&] {
        float ref_norm = 0;
        std::vector<std::uint8_t> ref(packed);
        run_cpu([&](void* s, std::size_t& b) {
          return mk::cpu::qsgd_encode(s, b, input().data(), kElements, kQsgdLevels, kSeed, &ref_norm, ref.data());
        });
        const float norm_here = to_host(norm.as<float>(), 1)[0];
        if (std::fabs(norm_here - ref_norm) > 1e-3f * ref_norm)
          return std::string("qsgd encode: norm differs from the CPU reference");
        // Codes may differ where the norms' last bits differ; count them.
        const auto codes_here = to_host(codes.as<std::uint8_t>(), packed);
        std::size_t differing = 0;
        for (std::size_t i = 0; i < packed; ++i) differing += codes_here[i] != ref[i];
        return differing * 1000 > packed
                   ? std::string("qsgd encode: over 0.1% of code bytes differ from the CPU reference")
                   : std::string();
      },
      kElements * 4);
}

void BM_SignEncode(benchmark::State& state) {
  Inputs in;
  DeviceBytes scale(sizeof(float)), bits(kElements / 8);
  time_device(
      state,
      [&](void* s, std::size_t& b) {
        return mk::cuda::sign_encode(s, b, in.x.as<float>(), kElements, scale.as<float>(), bits.as<std::uint8_t>(),
                                     nullptr);
      },
      [&] {
        float ref_scale = 0;
        std::vector<std::uint8_t> ref(kElements / 8);
        run_cpu([&](void* s, std::size_t& b) {
          return mk::cpu::sign_encode(s, b, input().data(), kElements, &ref_scale, ref.data());
        });
        const float scale_here = to_host(scale.as<float>(), 1)[0];
        if (std::fabs(scale_here - ref_scale) > 1e-5f * std::fabs(ref_scale))
          return "sign encode: scale " + std::to_string(scale_here) + ", CPU " + std::to_string(ref_scale);
        return compare_exact("sign encode", to_host(bits.as<std::uint8_t>(), kElements / 8).data(), ref.data(),
                             kElements / 8);
      },
      kElements * 4);
}

void BM_TopkSelect(benchmark::State& state) {
  Inputs in;
  DeviceBytes idx(kTopK * 4), vals(kTopK * 4);
  time_device(
      state,
      [&](void* s, std::size_t& b) {
        return mk::cuda::topk_select(s, b, in.x.as<float>(), kElements, kTopK, kSeed, idx.as<std::uint32_t>(),
                                     vals.as<float>(), nullptr);
      },
      [&] {
        std::vector<std::uint32_t> ref_idx(kTopK);
        std::vector<float> ref_vals(kTopK);
        run_cpu([&](void* s, std::size_t& b) {
          return mk::cpu::topk_select(s, b, input().data(), kElements, kTopK, kSeed, ref_idx.data(), ref_vals.data());
        });
        if (std::string wrong = compare_exact("topk indices", to_host(idx.as<std::uint32_t>(), kTopK).data(),
                                              ref_idx.data(), kTopK * 4);
            !wrong.empty())
          return wrong;
        return compare_exact("topk values", to_host(vals.as<float>(), kTopK).data(), ref_vals.data(), kTopK * 4);
      },
      kElements * 4);
}

void BM_RandkIndices(benchmark::State& state) {
  DeviceBytes idx(kTopK * 4);
  time_device(
      state,
      [&](void* s, std::size_t& b) {
        return mk::cuda::randk_indices(s, b, kElements, kTopK, kSeed, idx.as<std::uint32_t>(), nullptr);
      },
      [&] {
        std::vector<std::uint32_t> ref(kTopK);
        run_cpu(
            [&](void* s, std::size_t& b) { return mk::cpu::randk_indices(s, b, kElements, kTopK, kSeed, ref.data()); });
        return compare_exact("randk indices", to_host(idx.as<std::uint32_t>(), kTopK).data(), ref.data(), kTopK * 4);
      },
      kElements * 4);
}

void BM_PowerSgdFactor(benchmark::State& state) {
  // The 64 MiB input as a 4096 x 4096 matrix, rank 4.
  constexpr std::size_t rows = 4096, cols = kElements / rows, rank = 4;
  Inputs in;
  std::vector<float> q0(cols * rank);
  std::mt19937 gen(5);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (auto& e : q0) e = d(gen);
  DeviceBytes p(rows * rank * 4), q(cols * rank * 4);
  const auto reset_q = [&] { CUDA_OK(cudaMemcpy(q.as<float>(), q0.data(), q0.size() * 4, cudaMemcpyHostToDevice)); };
  reset_q();
  time_device(
      state,
      [&](void* s, std::size_t& b) {
        return mk::cuda::powersgd_factor(s, b, in.x.as<float>(), rows, cols, rank, p.as<float>(), q.as<float>(),
                                         nullptr);
      },
      [&] {
        std::vector<float> ref_p(rows * rank), ref_q = q0;
        run_cpu([&](void* s, std::size_t& b) {
          return mk::cpu::powersgd_factor(s, b, input().data(), rows, cols, rank, ref_p.data(), ref_q.data());
        });
        const auto here = to_host(q.as<float>(), cols * rank);
        for (std::size_t i = 0; i < here.size(); ++i) {
          if (std::fabs(here[i] - ref_q[i]) > 1e-3f * (1.0f + std::fabs(ref_q[i])))
            return "powersgd q[" + std::to_string(i) + "] = " + std::to_string(here[i]) + ", CPU " +
                   std::to_string(ref_q[i]);
        }
        reset_q();
        return std::string();
      },
      kElements * 4);
}

}  // namespace

int main(int argc, char** argv) {
  if (!mk::cuda_device_available()) {
    std::fprintf(stderr, "compress_cuda_bench: no usable CUDA device here; nothing to measure\n");
    return 3;
  }
  for (auto* b : {benchmark::RegisterBenchmark("BM_DeviceMemcpy", BM_DeviceMemcpy),
                  benchmark::RegisterBenchmark("BM_F16Encode", BM_F16Encode),
                  benchmark::RegisterBenchmark("BM_Bf16Encode", BM_Bf16Encode),
                  benchmark::RegisterBenchmark("BM_QsgdEncode", BM_QsgdEncode),
                  benchmark::RegisterBenchmark("BM_SignEncode", BM_SignEncode),
                  benchmark::RegisterBenchmark("BM_TopkSelect", BM_TopkSelect),
                  benchmark::RegisterBenchmark("BM_RandkIndices", BM_RandkIndices),
                  benchmark::RegisterBenchmark("BM_PowerSgdFactor", BM_PowerSgdFactor)}) {
    b->UseManualTime()->Unit(benchmark::kMicrosecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return g_any_case_failed ? 1 : 0;
}
