// The averaged model's accuracy for 1/N of an evaluation each: every member
// of the live view evaluates its slice of the test set and the counts are
// summed over the view (exact, through Peer::average).
// Blocking: compute, then collectives (every member calls it together).
#pragma once

#include <span>

#include "murmur/peer.h"
#include "peer/data/batcher.h"
#include "peer/data/dataset.h"
#include "peer/model/model.h"
#include "peer/train/evaluation.h"

namespace murmur::peer::train {

// `parameters` (host) are evaluated; the model's own are put back after.
Accuracy evaluate_shared(Peer& peer, model::Model& model, std::span<const float> parameters,
                         const data::ImageDataset& test, int batch, data::Batch& scratch);

}  // namespace murmur::peer::train
