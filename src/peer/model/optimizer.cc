#include "peer/model/optimizer.h"

#include "common/check.h"
#include "peer/model/ops.h"

namespace murmur::peer::model {

SgdOptimizer::SgdOptimizer(std::size_t parameters, Device device, SgdOptions options)
    : options_(options), ops_(detail::make_ops(device)) {
  momentum_ = {ops_->allocate_array<float>(parameters), parameters};
  ops_->synchronize();  // zero before a checkpoint reads it
}

SgdOptimizer::~SgdOptimizer() = default;

void SgdOptimizer::step(std::span<float> params, std::span<const float> grads, double learning_rate) {
  MURMUR_CHECK_EQ(params.size(), momentum_.size());
  step_slice(params, grads, 0, learning_rate);
}

void SgdOptimizer::step_slice(std::span<float> params, std::span<const float> grads, std::size_t offset,
                              double learning_rate) {
  MURMUR_CHECK_EQ(grads.size(), params.size());
  MURMUR_CHECK_LE(offset + params.size(), momentum_.size());
  ops_->sgd_momentum(params.data(), grads.data(), momentum_.data() + offset, params.size(),
                     static_cast<float>(learning_rate), static_cast<float>(options_.momentum),
                     static_cast<float>(options_.weight_decay), options_.nesterov);
  ops_->synchronize();
}

std::span<float> SgdOptimizer::momentum() { return momentum_; }

}  // namespace murmur::peer::model
