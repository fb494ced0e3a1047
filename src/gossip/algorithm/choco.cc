// CHOCO-SGD / CHOCO-Gossip (Koloskova, Stich, Jaggi 2019), memory-efficient
// form. Each node keeps its public copy x_hat_i (what every neighbour
// believes x_i is) and s_i = sum_j W(i, j) x_hat_j over itself and its
// neighbours. A round on snapshot x:
//   q_i = C(x - x_hat_i)                   sent to every neighbour
//   x_hat_i += q_i;  s_i += sum_j W(i, j) q_j   (j = i and neighbours)
//   x += gamma (s_i - x_hat_i)             (= gamma sum_j W(i,j)(x_hat_j - x_hat_i))
// The compressor runs without error feedback: the public copies play that
// role. Static topologies only (s_i depends on W). Overlapped by default; the
// consensus delta of snapshot r is added to params at the next
// communicating step.
//
// Membership views: s_i depends on the neighbours' public copies and on W,
// both of which a view changes. The first round of a new view begins with
// one dense exchange of the public copies x_hat with the new neighbours
// (phase kChocoResync), from which s_i is recomputed exactly; what the lost
// neighbours contributed to s_i is gone with it. A neighbour excused from a
// round before that (its link failed) is one whose updates s_i misses: it
// counts as a neighbour that stopped moving until the resync.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "gossip/algorithm/algorithm.h"
#include "gossip/algorithm/round_algorithm.h"
#include "gossip/compress/compressor.h"
#include "gossip/topology/mixing.h"

namespace murmur::gossip::detail {
namespace {

class Choco final : public RoundAlgorithm {
 public:
  Choco(const AlgorithmOptions& o, Communicator& comm, const Topology& topology)
      : RoundAlgorithm("choco", o, comm, /*default_overlap=*/true),
        hood_(neighbourhood(topology.at_round(0), comm.rank())),
        spec_(parse_compressor_spec(o.compressor)),
        encoder_(make_compressor(spec_, Feedback::kNone)),
        self_decoder_(make_compressor(spec_, Feedback::kNone)) {
    if (topology.time_varying())
      throw std::invalid_argument("choco: topology '" + topology.name() +
                                  "' is time-varying; CHOCO's public copies need a static graph");
    if (!(o.gamma > 0 && o.gamma <= 1)) throw std::invalid_argument("choco: gamma must be in (0, 1]");
    for (std::size_t k = 0; k < hood_.in.size(); ++k) decoders_.push_back(make_compressor(spec_, Feedback::kNone));
    if (spec_.sparse() && o.max_ratio > 0) {
      max_ratio_ = std::min(1.0, o.max_ratio);
      capacity_ = make_compressor(spec_.with_ratio(max_ratio_), Feedback::kNone);
    }
  }

  ~Choco() override { shutdown(); }

  // Sparse compressors only: one message goes to every neighbour (the
  // public copy x_hat is the same for all of them), so the ratio is the
  // sender's, not a link's.
  bool tunes_ratio() const override { return spec_.sparse() && max_ratio_ > 0; }

 private:
  void set_ratio(double ratio, double trial_ratio) override {
    if (trial_ratio > 0) {
      pending_ratio_ = std::min(trial_ratio, max_ratio_);
      after_trial_ratio_ = std::min(ratio, max_ratio_);
    } else if (after_trial_ratio_ > 0) {
      // A trial not sent yet (the period is longer than the scheduler's
      // interval) stays; the new ratio follows it.
      after_trial_ratio_ = std::min(ratio, max_ratio_);
    } else {
      pending_ratio_ = std::min(ratio, max_ratio_);
    }
  }

  void adopt_view(const ViewChange& change) override {
    hood_ = neighbourhood(change.topology->at_round(0), rank());
    decoders_.clear();
    for (std::size_t k = 0; k < hood_.in.size(); ++k) decoders_.push_back(make_compressor(spec_, Feedback::kNone));
    resync_ = true;
  }

  // s_i = W_ii x_hat_i + sum_j W_ij x_hat_j over the new neighbourhood, from
  // their dense public copies; an excused neighbour's weight stays with
  // x_hat_i. Communication thread, first round of a new view.
  void resync(std::uint64_t round) {
    const std::size_t n = x_hat_.size();
    dense_.fresh().assign(x_hat_.begin(), x_hat_.end());
    inbox_.resize(hood_.in.size());
    std::vector<fabric::RequestPtr> requests;
    for (std::size_t k = 0; k < hood_.in.size(); ++k) {
      inbox_[k].fresh().resize(n * sizeof(float));
      requests.push_back(traffic_.recv(hood_.in[k].peer, tag(Phase::kChocoResync, round), inbox_[k]));
    }
    for (const auto& l : hood_.out) requests.push_back(traffic_.send(l.peer, tag(Phase::kChocoResync, round), dense_));
    wait_excusing(requests);
    std::vector<double> s(n);
    double self = hood_.row.self;
    for (std::size_t k = 0; k < hood_.in.size(); ++k) {
      if (requests[k]->error()) {
        self += hood_.row.in[k];
        continue;
      }
      if (requests[k]->bytes() != n * sizeof(float))
        throw std::invalid_argument("choco: rank " + std::to_string(hood_.in[k].peer) + " (" +
                                    comm_.host(hood_.in[k].peer) + ") sent a public copy of " +
                                    std::to_string(requests[k]->bytes()) + " bytes, expected " +
                                    std::to_string(n * sizeof(float)));
      const float* theirs = reinterpret_cast<const float*>(inbox_[k]->data());
      for (std::size_t i = 0; i < n; ++i) s[i] += hood_.row.in[k] * theirs[i];
    }
    for (std::size_t i = 0; i < n; ++i) s_[i] = static_cast<float>(s[i] + self * x_hat_[i]);
  }

  void use_ratio(double ratio) {
    encoder_ = make_compressor(spec_.with_ratio(ratio), Feedback::kNone);
    self_decoder_ = make_compressor(spec_.with_ratio(ratio), Feedback::kNone);
    ratio_in_use_ = ratio;
  }

  // The public copy x_hat, s = sum_j W(i,j) x_hat_j, and the ratios: in use
  // (0: the configured one), pending for the next round and after a trial.
  void save_own(StateWriter& w) const override {
    w.floats(x_hat_);
    w.floats(s_);
    w.f64(ratio_in_use_);
    w.f64(pending_ratio_);
    w.f64(after_trial_ratio_);
    w.u64(resync_ ? 1 : 0);
  }

  void load_own(StateReader& r, bool other_view) override {
    auto x_hat = r.floats("choco x_hat");
    auto s = r.floats("choco s");
    const double in_use = r.f64("choco ratio in use");
    const double pending = r.f64("choco pending ratio");
    const double after_trial = r.f64("choco ratio after a trial");
    const bool resync = r.u64("choco resync") != 0;
    r.finish();
    if (x_hat.size() != s.size() || (!x_hat.empty() && x_hat.size() != r.elements()))
      throw std::invalid_argument("choco: saved state has " + std::to_string(x_hat.size()) + " x_hat and " +
                                  std::to_string(s.size()) + " s values for " + std::to_string(r.elements()) +
                                  " parameters");
    for (double ratio : {in_use, pending, after_trial}) {
      if (ratio == 0) continue;
      if (!spec_.sparse() || !(ratio > 0) || ratio > std::max(max_ratio_, spec_.ratio))
        throw std::invalid_argument("choco: saved state uses ratio " + std::to_string(ratio) + ", which compressor " +
                                    spec_.text() + " with max ratio " + std::to_string(max_ratio_) + " cannot take");
    }
    if (in_use > 0) use_ratio(in_use);
    pending_ratio_ = pending;
    after_trial_ratio_ = after_trial;
    x_hat_ = std::move(x_hat);
    s_ = std::move(s);
    // Another view: s summed the old neighbours' copies; the first round
    // recomputes it from the new ones' (adopt_view's resync).
    resync_ = resync || other_view;
  }

  void begin_round(std::span<const float> params) override {
    if (pending_ratio_ > 0) {
      use_ratio(pending_ratio_);
      pending_ratio_ = after_trial_ratio_;
      after_trial_ratio_ = 0;
    }
    snapshot_.assign(params.begin(), params.end());
    if (resync_ && x_hat_.empty()) {
      // A member that joins: its public copy starts at its model (which its
      // sponsor sent), so that the resync hands its neighbours a real
      // estimate; zeros would pull them towards zero until it caught up.
      x_hat_ = snapshot_;
      s_.assign(snapshot_.size(), 0.0f);
    } else if (x_hat_.size() != snapshot_.size()) {
      x_hat_.assign(snapshot_.size(), 0.0f);
      s_.assign(snapshot_.size(), 0.0f);
    }
  }

  void run_round(std::uint64_t round) override {
    if (resync_) {
      resync(round);
      resync_ = false;
    }
    const std::size_t n = snapshot_.size();
    const auto& ins = hood_.in;
    const auto& outs = hood_.out;
    diff_.resize(n);
    for (std::size_t i = 0; i < n; ++i) diff_[i] = snapshot_[i] - x_hat_[i];
    const std::size_t cap = encoder_->max_encoded_bytes(n);
    message_.fresh().resize(cap);
    message_->resize(encoder_->encode(diff_, *message_));
    inbox_.resize(ins.size());
    // Neighbours may send at any ratio up to max_ratio.
    const std::size_t inbox_cap = std::max(cap, capacity_ ? capacity_->max_encoded_bytes(n) : 0);
    std::vector<fabric::RequestPtr> requests;
    for (std::size_t k = 0; k < ins.size(); ++k) {
      inbox_[k].fresh().resize(inbox_cap);
      requests.push_back(traffic_.recv(ins[k].peer, tag(Phase::kChoco, round), inbox_[k]));
    }
    for (const auto& l : outs) requests.push_back(traffic_.send(l.peer, tag(Phase::kChoco, round), message_));
    // Decode our own message while the others travel.
    q_.resize(n);
    self_decoder_->decode(*message_, q_);
    const float wii = static_cast<float>(hood_.row.self);
    double residual = 0;
    for (std::size_t i = 0; i < n; ++i) {
      x_hat_[i] += q_[i];
      s_[i] += wii * q_[i];
    }
    wait_excusing(requests);
    for (std::size_t k = 0; k < ins.size(); ++k) {
      if (requests[k]->error()) continue;  // excused
      decoders_[k]->decode(std::span<const std::byte>(inbox_[k]->data(), requests[k]->bytes()), q_);
      const float wk = static_cast<float>(hood_.row.in[k]);
      for (std::size_t i = 0; i < n; ++i) s_[i] += wk * q_[i];
    }
    delta_.resize(n);
    const float gamma = static_cast<float>(options_.gamma);
    for (std::size_t i = 0; i < n; ++i) {
      delta_[i] = gamma * (s_[i] - x_hat_[i]);
      double e = snapshot_[i] - x_hat_[i];
      residual += e * e;
    }
    residual_norm_.store(std::sqrt(residual));
  }

  void end_round(std::span<float> params) override {
    for (std::size_t i = 0; i < params.size(); ++i) params[i] += delta_[i];
  }

  void add_stats(AlgorithmStats& s) const override { s.residual_norm = residual_norm_.load(); }

  Neighbourhood hood_;                    // the static graph as this rank sees it (changes only at a view)
  bool resync_ = false;                   // the next round starts with the dense exchange
  const CompressorSpec spec_;             // parsed once; sparse(): the ratio can be tuned
  double max_ratio_ = 0;                  // 0: the ratio cannot grow past the configured one
  double pending_ratio_ = 0;              // set_ratio -> next begin_round
  double after_trial_ratio_ = 0;          // the round after a trial round (set_ratio's trial_ratio)
  double ratio_in_use_ = 0;               // the encoder's ratio; 0: the configured one
  std::unique_ptr<Compressor> capacity_;  // sizes receive buffers for max_ratio_
  std::unique_ptr<Compressor> encoder_;
  std::unique_ptr<Compressor> self_decoder_;
  std::vector<std::unique_ptr<Compressor>> decoders_;  // one per in-neighbour
  std::vector<float> snapshot_, x_hat_, s_, diff_, q_, delta_;
  MessageBuffer<std::byte> message_;
  MessageBuffer<float> dense_;  // x_hat_ for the resync
  std::vector<MessageBuffer<std::byte>> inbox_;
  std::atomic<double> residual_norm_{0};
};

}  // namespace

std::unique_ptr<Algorithm> make_choco(const AlgorithmOptions& o, Communicator& comm, const Topology& topology) {
  return std::make_unique<Choco>(o, comm, topology);
}

}  // namespace murmur::gossip::detail
