// train(): one peer's whole run. Loads Fashion-MNIST, takes this rank's
// shard, builds the model and optimizer, joins the gossip through a
// murmur::Peer, trains for the epochs asked, evaluates after each epoch
// (local model on the test set, consensus distance), checkpoints, and at the
// end evaluates the averaged model. Metrics go to the JSON-lines file and,
// as "@murmur" events, to stdout for murmur-run.
//
// Every rank runs the same number of steps per epoch (the mean shard size
// over the batch size): gossip rounds pair up across ranks, so a rank whose
// Dirichlet shard is small cycles through it more often instead of stopping
// early.
//
// Blocking: runs to the end. Errors: data, model, checkpoint and
// configuration faults throw with the path, flag or value named; a lost
// peer throws the Peer's error naming its rank and host.
#pragma once

#include <cstdint>

#include "peer/train/train_options.h"

namespace murmur::peer::train {

struct TrainSummary {
  double test_accuracy = 0;                // this rank's final model
  double average_model_test_accuracy = 0;  // the mean of every rank's model
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  double wall_seconds = 0;
  std::uint64_t peak_rss_bytes = 0;
};

TrainSummary train(const TrainOptions& options);

}  // namespace murmur::peer::train
