// Embedding murmur in your own trainer: logistic regression written right
// here, with murmur doing only the gossip. Nothing of murmur is used but
// <murmur/peer.h>.
//
// Every peer draws its own examples of one synthetic problem (the true
// weights come from a seed all peers share, the examples from a seed of
// their own), runs plain SGD on them, and hands its weights to murmur after
// each step. At the end it reports the accuracy of its own weights and of
// the average of every peer's weights on a shared held-out set.
//
//   murmur-run -np 4 -- ./logistic_regression --algorithm choco --compress topk:0.1
//
// Built in-tree as murmur-embedding-example, and out of tree against an
// installed murmur with this directory's CMakeLists.txt (find_package) or
// with `c++ -std=c++17 logistic_regression.cc $(pkg-config --cflags --libs murmur)`.
#include <murmur/peer.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int kFeatures = 32;

struct Example {
  float x[kFeatures];
  float y;  // 0 or 1
};

std::vector<float> true_weights() {
  std::mt19937_64 rng(2024);  // shared by every peer: one problem
  std::normal_distribution<float> normal;
  std::vector<float> w(kFeatures + 1);
  for (auto& v : w) v = normal(rng);
  return w;
}

std::vector<Example> draw_examples(std::size_t n, std::uint64_t seed) {
  const auto w = true_weights();
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<Example> out(n);
  for (auto& e : out) {
    float z = w[kFeatures];
    for (int i = 0; i < kFeatures; ++i) {
      e.x[i] = normal(rng);
      z += w[i] * e.x[i];
    }
    e.y = z + 0.5f * normal(rng) > 0 ? 1.0f : 0.0f;  // noisy labels
  }
  return out;
}

float predict(const std::vector<float>& w, const Example& e) {
  float z = w[kFeatures];
  for (int i = 0; i < kFeatures; ++i) z += w[i] * e.x[i];
  return 1.0f / (1.0f + std::exp(-z));
}

double accuracy(const std::vector<float>& w, const std::vector<Example>& data) {
  int correct = 0;
  for (const auto& e : data) correct += (predict(w, e) > 0.5f) == (e.y > 0.5f);
  return static_cast<double>(correct) / data.size();
}

}  // namespace

int main(int argc, char** argv) {
  murmur::PeerConfig config;  // rank, size, rendezvous: from murmur-run's environment
  config.algorithm = "dpsgd";
  config.topology = "ring";
  int steps = 400;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--algorithm")
      config.algorithm = value;
    else if (flag == "--compress")
      config.compressor = value;
    else if (flag == "--topology")
      config.topology = value;
    else if (flag == "--steps")
      steps = std::stoi(value);
    else {
      std::fprintf(stderr,
                   "logistic_regression: unknown flag %s (expected --algorithm, --compress, --topology, --steps)\n",
                   flag.c_str());
      return 2;
    }
  }
  try {
    murmur::Peer peer(config);
    // A peer lost (or joined) mid-run changes the membership view: the
    // gossip goes on over the live peers; the program only hears of it.
    peer.on_view_change([&peer](const murmur::PeerView& view) {
      std::string lost;
      for (const auto& d : view.lost) lost += " " + std::to_string(d.rank) + " (" + d.reason + ")";
      std::printf("rank %d: view %llu, %zu peers live; lost:%s\n", peer.rank(),
                  static_cast<unsigned long long>(view.generation), view.ranks.size(),
                  lost.empty() ? " none" : lost.c_str());
    });
    const auto train = draw_examples(2000, 100 + peer.rank());
    const auto held_out = draw_examples(5000, 7);
    std::vector<float> w(kFeatures + 1, 0.0f);
    peer.add_tensor("weights", w.data(), w.size());

    std::mt19937_64 rng(peer.rank());
    std::uniform_int_distribution<std::size_t> pick(0, train.size() - 1);
    constexpr int kBatch = 16;
    for (int step = 0; step < steps; ++step) {
      std::vector<float> grad(w.size(), 0.0f);
      for (int b = 0; b < kBatch; ++b) {
        const auto& e = train[pick(rng)];
        const float error = predict(w, e) - e.y;
        for (int i = 0; i < kFeatures; ++i) grad[i] += error * e.x[i];
        grad[kFeatures] += error;
      }
      for (std::size_t i = 0; i < w.size(); ++i) w[i] -= 0.1f * grad[i] / kBatch;
      peer.step();  // murmur gossips w with the neighbours
    }
    peer.finish();

    std::vector<float> averaged(w.size());
    peer.averaged_model(averaged.data());
    const auto stats = peer.stats();
    std::printf(
        "rank %d: own accuracy %.4f, averaged model accuracy %.4f, %llu bytes sent in %llu rounds, %zu peers at the "
        "end\n",
        peer.rank(), accuracy(w, held_out), accuracy(averaged, held_out),
        static_cast<unsigned long long>(stats.bytes_sent), static_cast<unsigned long long>(stats.rounds),
        peer.view().ranks.size());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "logistic_regression: %s\n", e.what());
    return 1;
  }
}
