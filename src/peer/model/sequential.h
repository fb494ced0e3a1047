// Internal: a Model made of a stack of layers ending in softmax
// cross-entropy; every architecture in model.h is one of these.
#pragma once

#include <memory>
#include <vector>

#include "peer/model/layers.h"
#include "peer/model/model.h"
#include "peer/model/ops.h"

namespace murmur::peer::model::detail {

// The layers of spec.name, built on ops (which they allocate from);
// std::invalid_argument for a bad name or an input too small for it.
std::vector<std::unique_ptr<Layer>> build_layers(const ModelSpec& spec, Ops& ops);

std::unique_ptr<Model> make_sequential(const ModelSpec& spec, std::unique_ptr<Ops> ops,
                                       std::vector<std::unique_ptr<Layer>> layers);

}  // namespace murmur::peer::model::detail
