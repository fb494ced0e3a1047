// What one training peer runs: the gossip (a PeerConfig) plus model, data,
// optimizer, schedule, metrics and checkpoints. murmur-peer fills it from
// its flags (murmur_peer_main.cc lists them with their defaults).
#pragma once

#include <cstdint>
#include <string>

#include "murmur/peer.h"

namespace murmur::peer::train {

struct TrainOptions {
  PeerConfig peer;

  std::string model = "mlp";      // mlp, mlp:H1,H2,..., cnn, logreg (docs/models.md)
  std::string device = "cpu";     // cpu | cuda | auto (cuda when a device is present)
  std::string data_dir;           // empty: $MURMUR_DATA_DIR, else Debian's dataset-fashion-mnist
  std::string partition = "iid";  // iid | dirichlet:<alpha>
  long train_examples = 0;        // > 0: cap each peer's shard (quick runs)

  int epochs = 5;
  int batch = 64;  // per peer
  double lr = 0.05;
  double momentum = 0.9;
  double weight_decay = 1e-4;
  bool nesterov = false;
  double warmup_epochs = 0.5;
  std::string lr_decay = "cosine";
  std::uint64_t seed = 1;       // model initialisation (identical on every rank) and shuffling
  double extra_compute_ms = 0;  // sleep per step: an accelerator's compute time, CPU left idle (experiments)
  // The layer-wise optimizer step (gradient-averaging algorithms): a step's
  // update of layer k waits for the next forward pass to reach layer k,
  // so the front layers' forward runs while back layers still communicate
  // (ByteScheduler's cross-iteration overlap). The same parameters, bit for bit.
  bool layerwise_update = false;

  std::string metrics;         // JSON lines path; "{rank}" becomes the rank
  std::string checkpoint_dir;  // a checkpoint per rank after every epoch
  bool resume = false;         // start from checkpoint_dir's checkpoints
  int stop_after_epoch = 0;    // > 0: end after this epoch's checkpoint (--resume continues)
  int log_every = 50;          // steps between step metrics lines / progress events
  int evals_per_epoch = 1;     // test-set evaluations per epoch ("eval" lines; the last is the epoch's)
  bool events = true;          // "@murmur" event lines on stdout for murmur-run
};

}  // namespace murmur::peer::train
