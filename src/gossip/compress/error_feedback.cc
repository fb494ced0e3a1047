#include <stdexcept>
#include <vector>

#include "gossip/compress/compressor.h"

namespace murmur::gossip {

struct ErrorFeedback::State {
  std::vector<float> residual;
  std::vector<float> decoded;
};

ErrorFeedback::ErrorFeedback(std::unique_ptr<Compressor> inner)
    : inner_(std::move(inner)), state_(std::make_unique<State>()) {
  if (!inner_) throw std::invalid_argument("ErrorFeedback: null compressor");
}
ErrorFeedback::~ErrorFeedback() = default;

std::string ErrorFeedback::name() const { return "ef(" + inner_->name() + ")"; }
std::span<const float> ErrorFeedback::residual() const { return state_->residual; }
Compressor& ErrorFeedback::inner() { return *inner_; }
void ErrorFeedback::restore_residual(std::span<const float> residual) {
  state_->residual.assign(residual.begin(), residual.end());
}

std::size_t ErrorFeedback::max_bytes(std::size_t n, const EncodeParams& p) const {
  return inner_->max_encoded_bytes(n, p);
}

std::size_t ErrorFeedback::do_encode(std::span<const float> in, std::span<std::byte> out, const EncodeParams& p) {
  auto& e = state_->residual;
  auto& d = state_->decoded;
  const std::size_t n = in.size();
  if (e.size() != n) e.assign(n, 0.0f);
  d.resize(n);
  float* ep = e.data();
  for (std::size_t i = 0; i < n; ++i) ep[i] += in[i];
  const std::size_t bytes = inner_->encode(e, out, p);
  // TODO(perf): sparse codecs could subtract at their k indices only.
  inner_->decode(out.first(bytes), d);
  const float* dp = d.data();
  for (std::size_t i = 0; i < n; ++i) ep[i] -= dp[i];
  return bytes;
}

void ErrorFeedback::do_decode(std::span<const std::byte> in, std::span<float> out) { inner_->decode(in, out); }

}  // namespace murmur::gossip
