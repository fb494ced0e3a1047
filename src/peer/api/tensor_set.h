// TensorSet: the tensors a Peer gossips, seen as one flat host vector.
// Algorithms work on one contiguous span; users have several tensors, some
// on the GPU. gather() copies them into the flat vector, scatter() copies
// the flat vector back. One host tensor is used in place: no copy at all.
//
// Ownership: the set does not own the user's memory; the flat staging
// vector is its own. Thread safety: none (the Peer's caller thread).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "murmur/peer.h"

namespace murmur::peer {

class TensorSet {
 public:
  // Throws std::invalid_argument for null data, zero count, a duplicate
  // name, or kDevice memory in a build or on a host without CUDA.
  void add(const std::string& name, float* data, std::size_t count, MemoryKind kind);

  std::size_t count() const { return total_; }
  bool empty() const { return tensors_.empty(); }
  // "weights[4096] bias[64] (device)", for messages.
  std::string describe() const;

  // The flat view: the user's own memory when there is exactly one host
  // tensor, else the staging vector after gather().
  std::span<float> flat();
  void gather();
  void scatter();

 private:
  struct Tensor {
    std::string name;
    float* data;
    std::size_t count;
    bool device;
  };
  bool in_place() const { return tensors_.size() == 1 && !tensors_[0].device; }

  std::vector<Tensor> tensors_;
  std::size_t total_ = 0;
  std::vector<float> staging_;
};

// Copies `count` floats between host and (possibly) device memory; `kind`
// as in Peer. Throws std::runtime_error when a CUDA copy fails.
void copy_to_host(float* host, const float* source, std::size_t count, bool source_on_device);
void copy_from_host(float* destination, const float* host, std::size_t count, bool destination_on_device);
// kAuto resolved: true for device memory. Throws for kDevice without CUDA.
bool resolve_on_device(const void* data, MemoryKind kind, const std::string& what);

}  // namespace murmur::peer
