#include "peer/data/partition.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <random>
#include <stdexcept>

#include "common/check.h"
#include "peer/data/shuffle.h"

namespace murmur::peer::data {
namespace {

using Shards = std::vector<std::vector<std::uint32_t>>;

constexpr std::string_view kDirichletPrefix = "dirichlet:";

[[noreturn]] void bad_spec(const std::string& spec, const std::string& why) {
  throw std::invalid_argument("partition \"" + spec + "\": " + why +
                              "; expected \"iid\" or \"dirichlet:<alpha>\" with alpha > 0, "
                              "e.g. \"dirichlet:0.3\"");
}

// Shuffle all examples, deal contiguous runs of floor(n/peers) or one more.
Shards split_iid(std::size_t n, int peers, std::mt19937_64& rng) {
  std::vector<std::uint32_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
  detail::shuffle(std::span(order), rng);
  Shards shards(peers);
  const std::size_t base = n / peers, extra = n % peers;
  auto it = order.begin();
  for (int p = 0; p < peers; ++p) {
    const std::size_t size = base + (static_cast<std::size_t>(p) < extra ? 1 : 0);
    shards[p].assign(it, it + static_cast<std::ptrdiff_t>(size));
    it += static_cast<std::ptrdiff_t>(size);
  }
  return shards;
}

// Proportions over peers drawn from Dir(alpha) as normalized Gamma(alpha, 1)
// draws. For tiny alpha every draw can underflow to 0; Dir(alpha) tends to a
// one-hot vector as alpha -> 0, so one peer chosen uniformly gets it all.
std::vector<double> dirichlet(double alpha, int peers, std::mt19937_64& rng) {
  std::gamma_distribution<double> gamma(alpha, 1.0);
  std::vector<double> p(peers);
  double sum = 0;
  for (double& v : p) sum += (v = gamma(rng));
  if (!(sum > 0) || !std::isfinite(sum)) {
    std::fill(p.begin(), p.end(), 0.0);
    p[detail::uniform_below(rng, peers)] = 1.0;
    return p;
  }
  for (double& v : p) v /= sum;
  return p;
}

// Per class: shuffle its examples and cut them at the cumulative
// proportions (Hsu et al. 2019; np.split(idx, cumsum(p) * n) in their code).
Shards split_dirichlet(std::span<const std::uint8_t> labels, int num_classes, double alpha, int peers,
                       std::mt19937_64& rng) {
  std::vector<std::vector<std::uint32_t>> by_class(num_classes);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    MURMUR_CHECK_LT(int{labels[i]}, num_classes);
    by_class[labels[i]].push_back(static_cast<std::uint32_t>(i));
  }
  Shards shards(peers);
  for (auto& members : by_class) {
    detail::shuffle(std::span(members), rng);
    const std::vector<double> p = dirichlet(alpha, peers, rng);
    const double n = static_cast<double>(members.size());
    double cumulative = 0;
    std::size_t begin = 0;
    for (int k = 0; k < peers; ++k) {
      cumulative += p[k];
      const std::size_t end =
          k + 1 == peers ? members.size() : std::min(members.size(), static_cast<std::size_t>(cumulative * n));
      if (end > begin) shards[k].insert(shards[k].end(), members.begin() + begin, members.begin() + end);
      begin = std::max(begin, end);
    }
  }
  // Every peer needs data to train on: an empty shard takes the last example
  // of the currently largest shard (lowest peer on ties). Since there are at
  // least as many examples as peers, a donor always has two or more.
  for (auto& shard : shards) {
    if (!shard.empty()) continue;
    auto donor = std::max_element(shards.begin(), shards.end(),
                                  [](const auto& a, const auto& b) { return a.size() < b.size(); });
    MURMUR_CHECK_GE(donor->size(), std::size_t{2});
    shard.push_back(donor->back());
    donor->pop_back();
  }
  return shards;
}

}  // namespace

PartitionSpec parse_partition(const std::string& spec) {
  if (spec == "iid") return {};
  if (!spec.starts_with(kDirichletPrefix)) bad_spec(spec, "unknown kind");
  const char* first = spec.data() + kDirichletPrefix.size();
  const char* last = spec.data() + spec.size();
  double alpha = 0;
  const auto [end, ec] = std::from_chars(first, last, alpha);
  if (first == last || ec != std::errc() || end != last) bad_spec(spec, "alpha is not a number");
  if (!(alpha > 0) || !std::isfinite(alpha)) bad_spec(spec, "alpha must be finite and > 0");
  return {PartitionSpec::Kind::kDirichlet, alpha};
}

std::string describe(const PartitionSpec& spec) {
  if (spec.kind == PartitionSpec::Kind::kIid) return "iid";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, spec.alpha);
  MURMUR_CHECK(ec == std::errc());
  return std::string(kDirichletPrefix) + std::string(buf, end);
}

std::vector<std::vector<std::uint32_t>> partition(const PartitionSpec& spec, std::span<const std::uint8_t> labels,
                                                  int num_classes, int peers, std::uint64_t seed) {
  if (peers < 1) throw std::invalid_argument("partition: " + std::to_string(peers) + " peers; need at least 1");
  if (labels.size() < static_cast<std::size_t>(peers))
    throw std::invalid_argument("partition: cannot give each of " + std::to_string(peers) + " peers an example: only " +
                                std::to_string(labels.size()) + " examples");
  MURMUR_CHECK_LE(labels.size(), std::size_t{UINT32_MAX});
  MURMUR_CHECK(num_classes >= 1 && num_classes <= 256);
  std::mt19937_64 rng(detail::mix_seed(seed, 0));
  Shards shards;
  if (spec.kind == PartitionSpec::Kind::kIid) {
    shards = split_iid(labels.size(), peers, rng);
  } else {
    if (!(spec.alpha > 0) || !std::isfinite(spec.alpha))
      throw std::invalid_argument("partition " + describe(spec) + ": alpha must be finite and > 0");
    shards = split_dirichlet(labels, num_classes, spec.alpha, peers, rng);
  }
  for (auto& shard : shards) std::sort(shard.begin(), shard.end());
  return shards;
}

}  // namespace murmur::peer::data
