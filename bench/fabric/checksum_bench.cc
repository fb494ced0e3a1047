// checksum_bench: what the asio backend's payload checksum (XXH3-64,
// fabric/asio/wire.h) costs per byte, next to memcpy of the same bytes in
// the same run: over one buffer, over a gathered send's three pieces, at
// sizes that stay in cache and one that does not. Each benchmark checks
// what it timed (SkipWithError on a mismatch).
//
//   checksum_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//
// Counter GBps: bytes / time. docs/fabric-performance.md, "asio: checksums
// where a wire is", quotes it.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "fabric/asio/wire.h"
#include "fabric/send_pieces.h"

namespace {

namespace wire = murmur::fabric::asio::wire;

std::vector<std::byte> pattern(std::size_t bytes) {
  std::vector<std::byte> v(bytes);
  for (std::size_t i = 0; i < bytes; ++i) v[i] = static_cast<std::byte>((i * 2654435761u) >> 24);
  return v;
}

void set_rate(benchmark::State& state, std::size_t bytes) {
  state.counters["GBps"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(bytes) / 1e9, benchmark::Counter::kIsRate);
}

void BM_memcpy(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const auto from = pattern(bytes);
  std::vector<std::byte> to(bytes);
  for (auto _ : state) {
    std::memcpy(to.data(), from.data(), bytes);
    benchmark::DoNotOptimize(to.data());
    benchmark::ClobberMemory();
  }
  if (to != from) state.SkipWithError("memcpy result differs");
  set_rate(state, bytes);
}

void BM_checksum_one_buffer(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const auto data = pattern(bytes);
  std::uint64_t hash = 0;
  for (auto _ : state) {
    hash = wire::checksum_payload(data.data(), bytes);
    benchmark::DoNotOptimize(hash);
  }
  // The checksum of a changed byte must differ: it read the whole buffer.
  auto changed = data;
  changed.back() ^= std::byte{1};
  if (wire::checksum_payload(changed.data(), bytes) == hash) state.SkipWithError("the checksum missed the last byte");
  set_rate(state, bytes);
}

// A sparse message's layout (fabric_bench --gathered): an 8-byte header,
// an index of a fifth of the rest, the values.
void BM_checksum_three_pieces(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const auto data = pattern(bytes);
  const std::size_t index = (bytes - 8) / 5;
  const murmur::fabric::SendPieces pieces{murmur::fabric::SendPiece(data.data(), 8),
                                          murmur::fabric::SendPiece(data.data() + 8, index),
                                          murmur::fabric::SendPiece(data.data() + 8 + index, bytes - 8 - index)};
  std::uint64_t hash = 0;
  for (auto _ : state) {
    hash = wire::checksum_payload(pieces, 0, bytes);
    benchmark::DoNotOptimize(hash);
  }
  if (hash != wire::checksum_payload(data.data(), bytes)) state.SkipWithError("pieces and one buffer differ");
  set_rate(state, bytes);
}

constexpr std::int64_t kSizes[] = {256 << 10, 1 << 20, 64 << 20};

void sizes(benchmark::internal::Benchmark* b) {
  for (const auto bytes : kSizes) b->Arg(bytes);
}

BENCHMARK(BM_memcpy)->Apply(sizes);
BENCHMARK(BM_checksum_one_buffer)->Apply(sizes);
BENCHMARK(BM_checksum_three_pieces)->Apply(sizes);

}  // namespace

BENCHMARK_MAIN();
