// GradientStaging: the gradient buffer the trainer hands the gradient
// methods (Peer::set_gradients), which average host memory only.
//
// On the CPU it is the model's own gradients: nothing is copied. A CUDA
// model's gradients are device memory, so the staging keeps a host copy of
// them: the backward hook copies each layer down as soon as it is final
// (to_host; the CUDA model has waited for its stream before calling the
// hook), so that its all-reduce starts while backward computes the layers
// below, and the means go back up before the optimizer reads them
// (all_to_device after average_gradients(), or one layer at a time for the
// layer-wise step, after its wait_layer_averaged()). Cost per step on a
// GPU: the gradient crosses PCIe twice (pageable copies, which wait for
// the device).
//
// Ownership: borrows the model's gradients (valid for the model's
// lifetime); owns the host copy, whose address never changes (the Peer
// holds it). Threads: the trainer's thread only. Blocking: the copies wait
// for the device.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "peer/model/model.h"

namespace murmur::peer::train {

class GradientStaging {
 public:
  // `gradients`: the model's, layers of `layer_sizes` floats, front first.
  GradientStaging(model::Device device, std::span<float> gradients, const std::vector<std::size_t>& layer_sizes);
  GradientStaging(const GradientStaging&) = delete;
  GradientStaging& operator=(const GradientStaging&) = delete;

  // What the algorithm averages in place: host memory.
  std::span<float> host() { return staged() ? std::span<float>(host_) : gradients_; }
  // Whether a copy sits between the model and the algorithm (a CUDA model).
  bool staged() const { return !host_.empty(); }

  void to_host(std::size_t layer);    // the model's layer into host(); no-op unstaged
  void to_device(std::size_t layer);  // host()'s layer into the model's; no-op unstaged
  void all_to_device();

 private:
  std::span<float> layer_of(std::span<float> buffer, std::size_t layer) const;

  std::span<float> gradients_;        // the model's
  std::vector<float> host_;           // empty on the CPU
  std::vector<std::size_t> offsets_;  // layer l is [offsets_[l], offsets_[l + 1])
};

}  // namespace murmur::peer::train
