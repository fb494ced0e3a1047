// murmur::Peer over Group + FabricCommunicator + a gossip Algorithm, plus an
// exact ring all-reduce on a second channel for the collectives.
#include "murmur/peer.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <span>
#include <stdexcept>
#include <thread>

#include "common/log.h"
#include "common/text.h"
#include "common/trace.h"
#include "fabric/group.h"
#include "fabric/rendezvous/client.h"
#include "fabric/rendezvous/server.h"
#include "gossip/algorithm/algorithm.h"
#include "gossip/algorithm/fabric_communicator.h"
#include "gossip/algorithm/gossip_setup.h"
#include "gossip/algorithm/registry.h"
#include "gossip/algorithm/state_blob.h"
#include "gossip/schedule/controller.h"
#include "gossip/schedule/schedule_file.h"
#include "gossip/topology/factory.h"
#include "peer/api/job_environment.h"
#include "peer/api/join_exchange.h"
#include "peer/api/membership.h"
#include "peer/api/scalar_gather.h"
#include "peer/api/schedule_agreement.h"
#include "peer/api/tensor_set.h"

namespace murmur {

namespace {

// Tag channels (gossip/algorithm/communicator.h): one per algorithm instance.
constexpr std::uint8_t kGossipChannel = 1;
constexpr std::uint8_t kCollectiveChannel = 2;

std::string as_text(const std::string& value) { return value; }
std::string as_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}
template <typename Integer>
std::string as_text(Integer value) {
  return std::to_string(value);
}

// Starts the timeline when a path is set (the session then outlives
// everything else the Peer owns, so that the leave is recorded too).
std::unique_ptr<trace::Session> start_trace(const std::string& path) {
  if (path.empty()) return nullptr;
  return std::make_unique<trace::Session>(path);
}

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

}  // namespace

class Peer::Impl {
 public:
  explicit Impl(const PeerConfig& config)
      : config_(config),
        env_(peer::resolve_job_environment(config, peer::process_environment())),
        trace_(start_trace(env_.trace_path)) {
    trace::name_thread("main");
    if (trace_) trace_->set_process(env_.rank, "rank " + std::to_string(env_.rank) + " (" + env_.host_name + ")");
    // The one conversion of the public config: PeerConfig is a GossipOptions.
    const GossipOptions& gossip_options = config_;
    // A bad algorithm, period or schedule fails before joining, on every rank alike.
    const auto schedule = gossip::check_gossip_options(gossip_options);
    const bool adaptive = schedule.mode == gossip::schedule::ScheduleMode::kAdaptive;

    if (env_.world_size == 1 && !env_.joining) {
      // A job of one: nothing to gossip with, no network at all. Still load
      // a topology file so that a bad --topology fails here.
      if (gossip::algorithm_info(config_.algorithm).needs_topology && !gossip::is_generator(config_.topology)) {
        gossip::load_topology(config_.topology);
      }
      return;
    }
    if (env_.host_rendezvous && env_.rank == 0) {
      fabric::rendezvous::ServerOptions server_options;
      server_options.port = env_.rendezvous_port;
      server_options.token = env_.token;
      server_options.job_token = env_.job_token;
      try {
        server_ = std::make_unique<fabric::rendezvous::Server>(server_options);
      } catch (const fabric::FabricError& e) {
        // Say where the port came from: under srun it was derived, not given.
        throw fabric::FabricError(std::string(e.what()) + " (rank 0 serves the job's rendezvous; its port is from " +
                                  env_.rendezvous_source + ")");
      }
    }
    // Build the topology before joining: a bad file fails fast on every rank.
    // (A joiner's comes from the job it joins: below.)
    if (!env_.joining) {
      topology_ = gossip::make_gossip_topology(gossip_options, env_.world_size);
      // Checked here, not only by make_algorithm: with a membership it
      // accepts a smaller graph (joiners may be known by then).
      if (topology_ && topology_->size() != env_.world_size)
        gossip::throw_topology_size(config_.algorithm, *topology_, env_.world_size);
    }

    fabric::GroupOptions group_options;
    group_options.rank = env_.rank;
    group_options.size = env_.world_size;
    group_options.rendezvous_host = env_.rendezvous_host;
    group_options.rendezvous_port = env_.rendezvous_port;
    group_options.token = env_.token;
    group_options.job_token = env_.job_token;
    group_options.self_host = env_.host_name;
    group_options.transport.backend = config_.backend;
    group_options.transport.provider = config_.provider;
    group_options.transport.loss_tolerant = config_.survive_lost_peers;
    group_options.link_profile = env_.link_profile;
    group_options.interface = env_.interface;
    group_options.join_timeout = to_ms(config_.join_timeout_s);
    group_options.job_signature = job_signature(config_);
    if (env_.joining) {
      check_can_join();
      group_ = fabric::Group::join_running(group_options);
      env_.rank = group_->rank();
      if (trace_) trace_->set_process(env_.rank, "rank " + std::to_string(env_.rank) + " (" + env_.host_name + ")");
      // The job's graph over every rank so far (a generator: check_can_join).
      topology_ = gossip::make_gossip_topology(gossip_options, static_cast<int>(group_->peers().size()));
    } else {
      group_ = fabric::Group::join(group_options);
    }
    communicator_ = std::make_unique<gossip::FabricCommunicator>(group_->transport(), group_->peers());
    if (config_.survive_lost_peers || env_.joining) start_membership(gossip_options);
    if (env_.joining) {
      // The graph of the view that admitted this member, in rank space.
      std::string description;
      double gap = 0;
      topology_ = std::const_pointer_cast<gossip::Topology>(
          membership_->topology_for(membership_->entry(), &description, &gap));
    }
    scalars_ = std::make_unique<peer::ScalarGather>(*group_, "murmur/peer/gather/", to_ms(config_.timeout_s),
                                                    membership_.get());
    schedule_gather_ = std::make_unique<peer::ScalarGather>(*group_, "murmur/peer/schedule/", to_ms(config_.timeout_s),
                                                            membership_.get());

    gossip::AlgorithmOptions options = gossip::algorithm_options(gossip_options, schedule);
    options.channel = kGossipChannel;
    options.timeout_s = config_.timeout_s;
    options.tolerate_lost_peers = membership_ != nullptr;
    gossip_ = gossip::make_algorithm(config_.algorithm, options, *communicator_, topology_.get());

    // The collectives: an exact mean, whatever the job's settings.
    gossip::AlgorithmOptions exact;
    exact.channel = kCollectiveChannel;
    exact.average = true;
    exact.overlap = false;
    exact.timeout_s = config_.timeout_s;
    exact.tolerate_lost_peers = membership_ != nullptr;
    collective_ = gossip::make_algorithm("allreduce", exact, *communicator_, nullptr);
    if (membership_) {
      collective_view_ = membership_->adopted();
      if (env_.joining) {
        // The collectives run over the view that admitted this member from
        // their first call (exact_mean).
        collective_view_ = membership_->entry();
        gossip::ViewChange change;
        change.view = collective_view_;
        collective_views_.push(change);
      }
      gossip_->set_views(&membership_->gate());
      collective_->set_views(&collective_views_);
      join_exchange_ = std::make_unique<peer::JoinExchange>(
          *communicator_, config_.timeout_s,
          [this] { return join_counters() + (config_.join_state ? config_.join_state() : ""); },
          [this](const std::string& state) {
            config_.on_join_state ? config_.on_join_state(continue_counters(state)) : (void)continue_counters(state);
          });
      membership_->on_join(
          [this](const std::vector<int>& members, const std::vector<int>& joined, std::span<float> params,
                 std::uint64_t first_round) { join_exchange_->exchange(members, joined, params, first_round); });
    }
    if (adaptive) schedule_config_ = schedule;
    peer_log().info("joined as rank {} of {} on {} over {}: {} on {}, compressor {}, period {}", env_.rank,
                    env_.world_size, env_.host_name, group_->transport().name(), config_.algorithm,
                    topology_ ? topology_->name() : "(all ranks)", config_.compressor, config_.period);
  }

  ~Impl() {
    // Only a peer that took part finishes (a rank that failed before its
    // first step would otherwise wait out the layout check here).
    if (started_ && !finished_ && !failed_ && gossip_) {
      try {
        finish();
      } catch (const std::exception& e) {
        peer_log().warn("leaving without a clean finish: {}", e.what());
      }
    }
    // Algorithms stop their threads before the communicator and the group
    // they talk through go away.
    controller_.reset();
    schedule_agreement_.reset();  // waits for a gather in flight
    collective_.reset();
    gossip_.reset();
    communicator_.reset();
    scalars_.reset();
    schedule_gather_.reset();
    membership_.reset();  // before the group whose callbacks it set
    if (group_ && !failed_) {
      // A rank that leaves while a peer still reads what it sent can take
      // that data with it (shm reads the sender's memory), and its clean
      // leave fails the peer's pending receives. Everyone leaves together;
      // a dead peer fails the barrier at once, which is logged, not thrown.
      try {
        group_->barrier("murmur/peer/leave", to_ms(config_.timeout_s));
      } catch (const std::exception& e) {
        peer_log().warn("leaving without the other ranks: {}", e.what());
      }
    } else if (group_) {
      // A failed peer, or one told to leave_now(), leaves at once. The others are not coming to the
      // barrier: they wait in rounds for this one, which heartbeats, so
      // they would be held until the failure ceiling (60 s by default;
      // seen in chaos runs) before expelling it. Its leave makes a view
      // without it now; what they still read from it fails and is excused.
      peer_log().warn("leaving at once; the others go on without this rank");
    }
    group_.reset();
    if (server_) {
      // Rank 0 hosts the job's rendezvous: closing it while another rank is
      // still in its last collective would fail that rank. Wait for everyone
      // to leave, bounded by the failure timeout.
      const auto deadline = std::chrono::steady_clock::now() + to_ms(config_.timeout_s);
      while (server_->member_count() > 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      server_.reset();
    }
  }

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  std::string host(int rank) const {
    if (!group_) {
      if (rank != 0) throw std::invalid_argument("no rank " + std::to_string(rank));
      return env_.host_name;
    }
    const auto peers = group_->peers();  // grows with joiners
    if (rank < 0 || rank >= static_cast<int>(peers.size()))
      throw std::invalid_argument("no rank " + std::to_string(rank));
    return peers[static_cast<std::size_t>(rank)].host;
  }

  void add_tensor(const std::string& name, float* data, std::size_t count, MemoryKind kind) {
    if (started_) throw std::logic_error("add_tensor('" + name + "') after the first step()");
    tensors_.add(name, data, count, kind);
  }
  std::size_t parameter_count() const { return tensors_.count(); }

  // Every call that talks to the other ranks goes through here: after a
  // failure (a lost peer, a layout mismatch, a collective that timed out)
  // the Peer is failed and every later call rethrows the first error.
  template <typename F>
  auto guarded(F&& call) {
    if (failed_) std::rethrow_exception(failed_);
    try {
      return call();
    } catch (...) {
      failed_ = std::current_exception();
      throw;
    }
  }

  void leave_now(const std::string& why) {
    if (failed_) return;
    peer_log().warn("rank {} leaves the job now: {}", env_.rank, why);
    failed_ = std::make_exception_ptr(
        std::logic_error("murmur::Peer: rank " + std::to_string(env_.rank) + " left the job: " + why));
  }

  void step() {
    trace::Scope span(trace::Category::kGossip, "peer_step");
    start();
    steps_.fetch_add(1);
    // The caller's computation is the time between our calls.
    const auto entered = std::chrono::steady_clock::now();
    const double compute_seconds = std::chrono::duration<double>(entered - left_step_).count();
    if (gossip_) {
      tensors_.gather();
      gossip_->step(tensors_.flat());
      tensors_.scatter();
      if (controller_) {
        controller_->on_step(compute_seconds);
        ratio_now_.store(controller_->current_ratio());
      }
    }
    left_step_ = std::chrono::steady_clock::now();
  }

  bool averages_gradients() const {
    return gossip::algorithm_info(config_.algorithm).averages == gossip::Averages::kGradients;
  }

  void set_gradients(float* data, std::size_t count, const std::vector<std::size_t>& layer_sizes) {
    if (started_) throw std::logic_error("set_gradients() after the first step()");
    if (count > 0 && peer::resolve_on_device(data, MemoryKind::kAuto, "set_gradients()"))
      throw std::invalid_argument(
          "set_gradients(): the gradients are in device memory; the gradient hand-off reads "
          "host memory only (copy them to the host, or use a model-averaging algorithm)");
    if (gossip_) gossip_->set_gradients({data, count}, layer_sizes);
  }

  void set_optimizer_state(float* data, std::size_t count) {
    if (started_) throw std::logic_error("set_optimizer_state() after the first step()");
    if (count > 0 && peer::resolve_on_device(data, MemoryKind::kAuto, "set_optimizer_state()"))
      throw std::invalid_argument(
          "set_optimizer_state(): the optimizer's state is in device memory; the gradient methods re-average "
          "host memory only");
    optimizer_state_floats_ = count;
    if (gossip_) gossip_->set_optimizer_state({data, count});
  }

  void gradient_ready(std::size_t layer) {
    start();
    if (gossip_) gossip_->gradient_ready(layer);
  }

  void average_gradients() {
    start();
    if (gossip_) gossip_->average_gradients();
  }

  void wait_layer_averaged(std::size_t layer) {
    start();
    if (gossip_) gossip_->wait_layer_averaged(layer);
  }

  // A joiner's first step() is its entry into the members' step in
  // progress. A gradient round before it would be round 0 of a job far past
  // it: the joiner would wait in it for members that never come, until
  // timeout_s declared someone lost. Outside guarded(): a usage error that
  // changed nothing leaves the Peer usable.
  void require_entered(const char* call) const {
    if (failed_) std::rethrow_exception(failed_);
    if (env_.joining && steps_.load() == 0)
      throw std::logic_error(std::string(call) +
                             " before this joiner's first step(): a joiner enters the running job with step() "
                             "(the members' step in progress, which gives it their model), then takes its first "
                             "gradient on that model");
  }

  void flush() {
    start();
    if (!gossip_) return;
    tensors_.gather();
    gossip_->flush(tensors_.flat());
    tensors_.scatter();
  }

  // Layout (state_blob.h, name "peer", elements: the tensors' floats):
  // the algorithm's blob, then the scheduler's (empty without one).
  std::string save_state() {
    start();
    gossip::StateWriter w("peer", tensors_.count(), 1);
    w.bytes(gossip_ ? gossip_->save_state() : std::string());
    w.bytes(controller_ ? controller_->save_state() : std::string());
    return w.take();
  }

  void load_state(std::string_view state, bool other_view) {
    start();
    gossip::StateReader r(state, "peer", 1);
    if (r.elements() != tensors_.count())
      throw std::invalid_argument("saved state is for " + std::to_string(r.elements()) + " floats, rank " +
                                  std::to_string(env_.rank) + " registered " + std::to_string(tensors_.count()) +
                                  " (tensors: " + tensors_.describe() + ")");
    const std::string algorithm = r.bytes("algorithm state");
    const std::string schedule = r.bytes("scheduler state");
    r.finish();
    if (gossip_) {
      if (other_view) {
        gossip_->load_state_from_other_view(algorithm);
      } else {
        gossip_->load_state(algorithm);
      }
    }
    if (controller_ && !schedule.empty() && !other_view) controller_->load_state(schedule);
  }

  void finish() {
    if (finished_) return;
    start();
    finished_ = true;
    if (!gossip_) return;
    tensors_.gather();
    gossip_->finish(tensors_.flat());
    tensors_.scatter();
  }

  void average(float* data, std::size_t count, MemoryKind kind) {
    if (!collective_ || count == 0) return;
    const bool on_device = peer::resolve_on_device(data, kind, "average()");
    if (!on_device) {
      exact_mean({data, count});
      return;
    }
    std::vector<float> host(count);
    peer::copy_to_host(host.data(), data, count, true);
    exact_mean(host);
    peer::copy_from_host(data, host.data(), count, true);
  }

  // Exact in double, the same bits on every rank (scalar_gather.h), over
  // the live view.
  double average(double value) {
    if (!group_) return value;
    double sum = 0;
    const auto values = scalars_->all(value, "average()");
    for (double v : values) sum += v;
    return sum / static_cast<double>(values.size());
  }

  void averaged_model(float* out) {
    start();
    tensors_.gather();
    auto flat = tensors_.flat();
    std::copy(flat.begin(), flat.end(), out);
    average(out, flat.size(), MemoryKind::kHost);
  }

  double consensus_distance() {
    std::vector<float> mean(tensors_.count());
    averaged_model(mean.data());
    auto flat = tensors_.flat();
    double squared = 0;
    for (std::size_t i = 0; i < flat.size(); ++i) {
      const double d = static_cast<double>(flat[i]) - mean[i];
      squared += d * d;
    }
    return std::sqrt(average(squared));
  }

  bool joining() const { return env_.joining; }

  PeerView view() const {
    PeerView v;
    if (!membership_) {
      for (int r = 0; r < env_.world_size; ++r) v.ranks.push_back(r);
      v.spectral_gap = std::nan("");
      return v;
    }
    return to_peer_view(membership_->history().back());
  }

  void on_view_change(std::function<void(const PeerView&)> callback) {
    if (!membership_) return;
    membership_->on_adopted([callback = std::move(callback)](const peer::ViewEvent& e) {
      if (callback) callback(to_peer_view(e));
    });
  }

  PeerStats stats() const {
    PeerStats s;
    s.steps = steps_.load();
    s.period = gossip_ ? gossip_->period() : config_.period;
    s.ratio = ratio_now_.load();
    s.algorithm = config_.algorithm;
    s.compressor = config_.compressor;
    if (gossip_) {
      const auto g = gossip_->stats();
      s.rounds = g.rounds;
      s.wait_seconds = g.wait_seconds;
      s.comm_seconds = g.comm_seconds;
      s.comm_cpu_seconds = g.comm_cpu_seconds;
      s.overlap_seconds = g.overlap_seconds;
      for (const auto& [rank, link] : g.links) {
        s.bytes_sent += link.bytes_sent;
        s.bytes_received += link.bytes_received;
        s.links.push_back({rank, group_->peers()[rank].host, link.bytes_sent, link.bytes_received, link.messages_sent,
                           link.messages_received});
      }
    }
    if (collective_) {
      for (const auto& [rank, link] : collective_->stats().links) s.collective_bytes_sent += link.bytes_sent;
    }
    return s;
  }

 private:
  static PeerView to_peer_view(const peer::ViewEvent& e) {
    PeerView v;
    v.generation = e.generation;
    v.ranks = e.members;
    for (const auto& d : e.lost) v.lost.push_back({d.rank, d.host, d.reason});
    v.joined = e.joined;
    v.spectral_gap = e.spectral_gap;
    v.topology = e.topology;
    return v;
  }

  // The Peer's own counters a joiner must continue from, so that its
  // collectives' rounds and keys are the members' (the first line of the
  // state a sponsor sends; the user's state follows).
  std::string join_counters() const {
    return std::to_string(collective_->stats().rounds) + " " + std::to_string(scalars_->sequence()) + " " +
           std::to_string(schedule_gather_->sequence()) + "\n";
  }
  // Applies them and returns the user's part.
  std::string continue_counters(const std::string& state) {
    const auto line = state.find('\n');
    std::uint64_t rounds = 0, scalars = 0, schedule = 0;
    const auto words = split_words(state.substr(0, line == std::string::npos ? 0 : line));
    if (line == std::string::npos || words.size() != 3 || !parse_number(words[0], rounds) ||
        !parse_number(words[1], scalars) || !parse_number(words[2], schedule))
      throw std::runtime_error("join: the sponsor's state does not start with the Peer's counters");
    gossip::ViewChange change;
    change.view = collective_view_;
    change.first_round = rounds;
    collective_views_.push(change);
    scalars_->continue_at(scalars);
    schedule_gather_->continue_at(schedule);
    return state.substr(line + 1);
  }

  std::vector<int> view_ranks() const {
    std::vector<int> ranks;
    for (const auto& m : group_->view().members) ranks.push_back(m.rank);
    return ranks;
  }

  // What a joiner must share with the job (the rendezvous compares it at
  // join, naming each difference): the build and wire, the backend, and
  // every gossip setting ranks must agree on. The tensor layout is checked
  // at the first step, as for every rank.
  static std::string job_signature(const PeerConfig& config) {
    std::string signature =
        std::string("build=") + MURMUR_VERSION + ";backend=" + config.backend + ";provider=" + config.provider;
    visit_agreed_fields(config, [&signature](const char* name, const auto& value) {
      signature += std::string(";") + name + "=" + as_text(value);
    });
    return signature;
  }

  // Joins the gossip needs: the view's graph must grow with new ranks (a
  // generator, not a graph file) and the algorithm must take new members.
  void check_can_join() const {
    if (!config_.survive_lost_peers)
      throw std::invalid_argument("joining a running job needs membership views (survive_lost_peers)");
    const auto& info = gossip::algorithm_info(config_.algorithm);
    if (info.needs_topology && !gossip::is_generator(config_.topology))
      throw std::invalid_argument("a job on the graph file '" + config_.topology +
                                  "' cannot take new members: the file names every node (use a generator)");
    if (!info.has_rounds)
      throw std::invalid_argument(config_.algorithm +
                                  " cannot take new members: its exchange pairs are fixed by the job's first graph");
    // The scheduler's decisions are counted in steps since each rank began;
    // a joiner's would fall out of step with the members' agreements.
    if (gossip::check_gossip_options(config_).mode == gossip::schedule::ScheduleMode::kAdaptive)
      throw std::invalid_argument("a job with an adaptive schedule cannot take new members yet (docs/resilience.md)");
  }

  void start_membership(const GossipOptions& gossip_options) {
    peer::Membership::Options m;
    m.gossip = gossip_options;
    m.topology = topology_;
    m.deadline.floor_s = config_.lost_peer_floor_s;
    m.deadline.multiplier = config_.lost_peer_multiplier;
    m.deadline.ceiling_s = std::max(config_.timeout_s, config_.lost_peer_floor_s);
    m.agreement_timeout = to_ms(config_.timeout_s);
    m.joining = env_.joining;
    membership_ = std::make_unique<peer::Membership>(*group_, m);
    auto* membership = membership_.get();
    communicator_->set_failure_detector(
        {&membership->deadline(), [membership](int peer, bool silent, const std::string& reason) {
           membership->suspect(peer, silent, reason);
         }});
  }

  // The exact mean over the live view. With membership, a round that lost
  // a member is not exact on every rank; all ranks learn whether any rank's
  // was incomplete (a scalar gather: the same answer everywhere) and, if
  // so, run it again over the next agreed view, from the same input.
  void exact_mean(std::span<float> data) {
    if (!membership_) {
      collective_->step(data);
      return;
    }
    const std::vector<float> input(data.begin(), data.end());
    gossip::View view = std::max(collective_view_, membership_->adopted(),
                                 [](const auto& a, const auto& b) { return a.generation < b.generation; });
    const auto give_up = std::chrono::steady_clock::now() + to_ms(config_.timeout_s);
    for (;;) {
      if (view.generation != collective_view_.generation) {
        gossip::ViewChange change;
        change.view = view;
        collective_views_.push(change);
        collective_view_ = view;
      }
      const auto before = collective_->stats().incomplete_rounds;
      collective_->step(data);
      const bool whole = collective_->stats().incomplete_rounds == before;
      double wholes = 0;
      const auto flags = scalars_->gather(std::span<const double>(std::array<double, 1>{whole ? 1.0 : 0.0}),
                                          "average() (was every rank's round whole?)", view);
      for (const auto& f : flags.values) wholes += f.front();
      if (wholes == static_cast<double>(flags.values.size())) return;
      std::copy(input.begin(), input.end(), data.begin());
      // The next agreed view after the one that failed: the same on every rank.
      if (!membership_->wait_committed_after(view.generation, give_up))
        throw std::runtime_error("average(): a member was lost and no new membership view was agreed within " +
                                 std::to_string(config_.timeout_s) + " s");
      view = membership_->committed_after(view.generation).front();
    }
  }

  // The first step checks that every rank registered the same layout and
  // runs the same algorithm: a mismatch would otherwise surface as a
  // truncated message or a silent wrong average.
  void start() {
    if (started_) return;
    if (tensors_.empty()) throw std::logic_error("step() before any add_tensor()");
    if (!group_) {
      started_ = true;
      return;
    }
    // Everything ranks must agree on for rounds to pair up and messages to
    // fit (gossip_options.h).
    std::string layout = std::to_string(tensors_.count()) + " floats";
    if (optimizer_state_floats_ > 0)
      layout += ", optimizer state " + std::to_string(optimizer_state_floats_) + " floats";
    visit_agreed_fields(config_, [&layout](const char* name, const auto& value) {
      layout += std::string(", ") + name + " " + as_text(value);
    });
    auto& control = group_->control();
    const std::string prefix = "murmur/peer/layout/";
    control.set(prefix + std::to_string(env_.rank), layout);
    // Every member of the view this rank starts in (a joiner: the one that
    // admitted it); keys persist, so members lost since still count.
    for (int r : view_ranks()) {
      const std::string theirs = control.wait(prefix + std::to_string(r), to_ms(config_.join_timeout_s));
      if (theirs != layout) {
        throw std::invalid_argument("rank " + std::to_string(r) + " (" + host(r) + ") registered " + theirs +
                                    " but rank " + std::to_string(env_.rank) + " registered " + layout +
                                    " (tensors: " + tensors_.describe() + ")");
      }
    }
    started_ = true;
    if (schedule_config_) {
      schedule_agreement_ = std::make_unique<peer::ScheduleAgreement>(*schedule_gather_);
      auto gather = [this](const gossip::schedule::ScheduleProposal& mine) { return (*schedule_agreement_)(mine); };
      auto record = [this](const nlohmann::json& decision) {
        if (trace::enabled())
          trace::instant(trace::Category::kSchedule, "schedule_decision", {.detail = decision.dump()});
        if (config_.on_schedule_decision) config_.on_schedule_decision(decision.dump());
      };
      controller_ = std::make_unique<gossip::schedule::ScheduleController>(
          *schedule_config_, *gossip_, tensors_.count(), config_.schedule_interval, gather, record);
    }
    left_step_ = std::chrono::steady_clock::now();
  }

  PeerConfig config_;
  peer::JobEnvironment env_;
  std::unique_ptr<trace::Session> trace_;  // null: no timeline; destroyed last but two
  peer::TensorSet tensors_;
  std::unique_ptr<fabric::rendezvous::Server> server_;
  std::unique_ptr<fabric::Group> group_;
  std::unique_ptr<gossip::FabricCommunicator> communicator_;
  std::shared_ptr<gossip::Topology> topology_;
  std::unique_ptr<peer::Membership> membership_;       // null: survive_lost_peers off, or a job of one
  std::unique_ptr<peer::JoinExchange> join_exchange_;  // a joiner's sponsor and the joiner (with membership_)
  gossip::PushedViews collective_views_;               // the collective's view, chosen by exact_mean
  gossip::View collective_view_;                       // caller thread: the view collective_ runs in
  std::unique_ptr<gossip::Algorithm> gossip_;
  std::unique_ptr<gossip::Algorithm> collective_;
  bool started_ = false;                    // the layout check passed (caller thread)
  std::size_t optimizer_state_floats_ = 0;  // set_optimizer_state (caller thread)
  bool finished_ = false;
  std::exception_ptr failed_;            // sticky, see guarded()
  std::atomic<std::uint64_t> steps_{0};  // read by stats() on any thread
  std::atomic<double> ratio_now_{1.0};   // likewise
  std::unique_ptr<peer::ScalarGather> scalars_;
  std::unique_ptr<peer::ScalarGather> schedule_gather_;  // its own sequence, used by schedule_agreement_ only
  std::unique_ptr<peer::ScheduleAgreement> schedule_agreement_;
  std::optional<gossip::schedule::ScheduleConfig> schedule_config_;
  std::unique_ptr<gossip::schedule::ScheduleController> controller_;
  std::chrono::steady_clock::time_point left_step_;
};

Peer::Peer(const PeerConfig& config) : impl_(std::make_unique<Impl>(config)) {}
Peer::~Peer() = default;
int Peer::rank() const { return impl_->rank(); }
int Peer::world_size() const { return impl_->world_size(); }
std::string Peer::host(int rank) const { return impl_->host(rank); }
void Peer::add_tensor(const std::string& name, float* data, std::size_t count, MemoryKind kind) {
  impl_->add_tensor(name, data, count, kind);
}
std::size_t Peer::parameter_count() const { return impl_->parameter_count(); }
void Peer::step() {
  impl_->guarded([&] { impl_->step(); });
}
bool Peer::averages_gradients() const { return impl_->averages_gradients(); }
void Peer::set_gradients(float* data, std::size_t count, const std::vector<std::size_t>& layer_sizes) {
  impl_->guarded([&] { impl_->set_gradients(data, count, layer_sizes); });
}
void Peer::set_optimizer_state(float* data, std::size_t count) {
  impl_->guarded([&] { impl_->set_optimizer_state(data, count); });
}
void Peer::gradient_ready(std::size_t layer) {
  impl_->require_entered("gradient_ready()");
  impl_->guarded([&] { impl_->gradient_ready(layer); });
}
void Peer::average_gradients() {
  impl_->require_entered("average_gradients()");
  impl_->guarded([&] { impl_->average_gradients(); });
}
void Peer::wait_layer_averaged(std::size_t layer) {
  impl_->require_entered("wait_layer_averaged()");
  impl_->guarded([&] { impl_->wait_layer_averaged(layer); });
}
std::string Peer::save_state() {
  return impl_->guarded([&] { return impl_->save_state(); });
}
void Peer::load_state(std::string_view state, bool other_view) {
  impl_->guarded([&] { impl_->load_state(state, other_view); });
}
void Peer::flush() {
  impl_->guarded([&] { impl_->flush(); });
}
void Peer::finish() {
  impl_->guarded([&] { impl_->finish(); });
}
void Peer::leave_now(const std::string& why) { impl_->leave_now(why); }
void Peer::average(float* data, std::size_t count, MemoryKind kind) {
  impl_->guarded([&] { impl_->average(data, count, kind); });
}
double Peer::average(double value) {
  return impl_->guarded([&] { return impl_->average(value); });
}
void Peer::averaged_model(float* out) {
  impl_->guarded([&] { impl_->averaged_model(out); });
}
double Peer::consensus_distance() {
  return impl_->guarded([&] { return impl_->consensus_distance(); });
}
PeerStats Peer::stats() const { return impl_->stats(); }
PeerView Peer::view() const { return impl_->view(); }
bool Peer::joining() const { return impl_->joining(); }
void Peer::on_view_change(std::function<void(const PeerView&)> callback) { impl_->on_view_change(std::move(callback)); }

}  // namespace murmur
