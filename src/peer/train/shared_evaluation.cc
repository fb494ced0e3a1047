#include "peer/train/shared_evaluation.h"

#include <algorithm>
#include <cmath>

namespace murmur::peer::train {

Accuracy evaluate_shared(Peer& peer, model::Model& model, std::span<const float> parameters,
                         const data::ImageDataset& test, int batch, data::Batch& scratch) {
  const auto local = read_parameters(model);
  write_parameters(model, parameters);
  // Slices by place in the live view; every member is at the same round.
  const PeerView view = peer.view();
  const std::size_t world = view.ranks.size();
  const std::size_t position =
      static_cast<std::size_t>(std::find(view.ranks.begin(), view.ranks.end(), peer.rank()) - view.ranks.begin());
  const std::size_t first = test.size() * position / world;
  const std::size_t last = test.size() * (position + 1) / world;
  const auto mine = evaluate_range(model, test, first, last - first, batch, scratch);
  write_parameters(model, local);
  Accuracy all;
  all.correct = std::llround(peer.average(static_cast<double>(mine.correct)) * world);
  all.count = std::llround(peer.average(static_cast<double>(mine.count)) * world);
  all.loss_sum = peer.average(mine.loss_sum) * world;
  return all;
}

}  // namespace murmur::peer::train
