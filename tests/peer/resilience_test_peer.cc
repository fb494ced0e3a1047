// One rank of a resilience test job (tests/peer/resilience_test.cc, through
// LocalJob), over the public header only. Each rank gossips a vector filled
// from its rank for --steps steps, sleeping --compute-ms per step as a
// trainer computes, and prints what the driver checks:
//   "step S"                 every 20 steps (the driver kills on progress)
//   "view G members=a,b,c"   each view the gossip adopts
//   "weight W"               sgp: the push-sum weight after finish
//   "done D"                 after finish: D = the consensus distance over
//                            the live view (exact collective)
//   "value V"                the first element after finish
//   "joined at S"            a joiner (--join): the step it entered at
//   "mean S M"               with --mean-every N: every N steps, the exact
//                            mean of the ranks' step counters (a collective
//                            mid-run, as a trainer's epoch-end evaluation)
//   "join-mean S M"          with --mean-at-joins: the same collective after
//                            every step at which a view admitted members
//                            (a joiner's first step included), so that one
//                            always follows the step a joiner enters in
// Under a gradient-averaging algorithm (bsp-a2a, ...) each step also hands
// over a gradient of four layers, g = 0.01 (x - rank), backward order, and
// applies its mean: the ranks' models start apart and stay apart until a
// view change averages them (then the same mean gradient keeps them equal).
// With --join the process joins the running job as a new member: its first
// step() takes a member's model and, through join_state / on_join_state,
// the step that member was in. That first step() *is* that step (its round
// is the members' round of that step), so the joiner then does what the
// members do after that step, its collectives included, before the next:
// skipping them left the members waiting in a collective for the joiner
// while it waited in the next round for them (murmur/peer.h, `join`).
// Exits 0 when the run completed, 3 with the error otherwise.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "murmur/peer.h"

int main(int argc, char** argv) {
  int rank = 0, size = 1, port = 0, steps = 300, mean_every = 0;
  std::string token, algorithm = "dpsgd", topology = "exponential", compressor = "identity";
  double compute_ms = 5, floor_s = 1, timeout_s = 30;
  int absent_mean_rank = -1;
  bool join = false, mean_at_joins = false;
  CLI::App app{"resilience test peer"};
  app.add_option("--rank", rank);
  app.add_option("--size", size);
  app.add_option("--rendezvous-port", port);
  app.add_option("--token", token);
  app.add_option("--algorithm", algorithm);
  app.add_option("--topology", topology);
  app.add_option("--compressor", compressor);
  app.add_option("--steps", steps);
  app.add_option("--compute-ms", compute_ms);
  app.add_option("--lost-peer-floor", floor_s);
  app.add_option("--mean-every", mean_every);
  app.add_option("--timeout", timeout_s);
  app.add_option("--absent-mean-rank", absent_mean_rank,
                 "this rank stops before its first --mean-every collective and sleeps until killed (alive, "
                 "heartbeating): a program whose ranks do not make the same collectives");
  app.add_flag("--join", join);
  app.add_flag("--mean-at-joins", mean_at_joins, "a collective after every step at which a view admitted members");
  bool host_rendezvous = false;
  app.add_flag("--host-rendezvous", host_rendezvous, "serve the job's rendezvous in this rank (rank 0)");
  CLI11_PARSE(app, argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    murmur::PeerConfig config;
    config.rank = rank;
    config.world_size = size;
    config.rendezvous = "127.0.0.1:" + std::to_string(port);
    config.token = token;
    config.host_rendezvous = host_rendezvous;
    config.algorithm = algorithm;
    config.topology = topology;
    config.compressor = compressor;
    config.gamma = 0.3;
    config.timeout_s = timeout_s;
    config.lost_peer_floor_s = floor_s;
    config.join = join;
    int step = 0;  // the step in progress: a sponsor hands it to a joiner
    config.join_state = [&step] { return std::to_string(step); };
    config.on_join_state = [&step](const std::string& s) { step = std::stoi(s); };
    murmur::Peer peer(config);
    bool admitted_members = false;  // the step in progress adopted a view that admitted members
    peer.on_view_change([&admitted_members](const murmur::PeerView& v) {
      if (!v.joined.empty()) admitted_members = true;
      std::string members;
      for (int r : v.ranks) members += (members.empty() ? "" : ",") + std::to_string(r);
      std::printf("view %llu members=%s\n", static_cast<unsigned long long>(v.generation), members.c_str());
    });
    std::vector<float> x(1000);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(rank) + static_cast<float>(i) / 1000.0f;
    peer.add_tensor("x", x.data(), x.size());
    std::vector<float> gradient(x.size());
    const std::vector<std::size_t> layers{100, 200, 300, 400};
    if (peer.averages_gradients()) peer.set_gradients(gradient.data(), gradient.size(), layers);
    // What every rank does after step() of step `s`, a joiner after its
    // first step() too (its entry step's collectives are the members').
    auto after_step = [&](int s) {
      if (s % 20 == 0) std::printf("step %d\n", s);
      if (mean_every > 0 && (s + 1) % mean_every == 0) {
        if (rank == absent_mean_rank) {
          std::printf("absent from mean %d\n", s);
          for (;;) std::this_thread::sleep_for(std::chrono::seconds(60));  // the test kills it
        }
        std::printf("mean %d %.9g\n", s, peer.average(static_cast<double>(s)));
      }
      if (mean_at_joins && admitted_members) {
        std::printf("join-mean %d %.9g\n", s, peer.average(static_cast<double>(s)));
      }
      admitted_members = false;
    };
    if (join) {
      peer.step();  // admitted: the sponsor's model and step arrive; this was that step
      std::printf("joined at %d as rank %d\n", step, peer.rank());
      after_step(step++);
    }
    for (; step < steps; ++step) {
      std::this_thread::sleep_for(std::chrono::microseconds(static_cast<long>(compute_ms * 1000)));
      if (peer.averages_gradients()) {
        for (std::size_t i = 0; i < x.size(); ++i) gradient[i] = 0.01f * (x[i] - static_cast<float>(rank));
        for (std::size_t l = layers.size(); l-- > 0;) peer.gradient_ready(l);
        peer.average_gradients();
        for (std::size_t i = 0; i < x.size(); ++i) x[i] -= gradient[i];
      }
      peer.step();
      after_step(step);
    }
    peer.finish();
    const double distance = peer.consensus_distance();
    std::printf("generation %llu\n", static_cast<unsigned long long>(peer.view().generation));
    std::printf("done %.9g\n", distance);
    std::printf("value %.9g\n", x[0]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    std::printf("error %s\n", e.what());
    return 3;
  }
}
