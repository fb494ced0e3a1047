#include "peer/api/tensor_set.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "kernels/compress.h"
#include "kernels/memory.h"

namespace murmur::peer {

bool resolve_on_device(const void* data, MemoryKind kind, const std::string& what) {
  switch (kind) {
    case MemoryKind::kHost:
      return false;
    case MemoryKind::kAuto:
      return kernels::is_device_pointer(data);
    case MemoryKind::kDevice:
      if (!kernels::cuda_device_available()) {
        throw std::invalid_argument(what + ": device memory given, but this murmur build or host has no CUDA device");
      }
      return true;
  }
  return false;
}

void copy_to_host(float* host, const float* source, std::size_t count, bool source_on_device) {
  if (!source_on_device) {
    std::memcpy(host, source, count * sizeof(float));
    return;
  }
  const auto status = kernels::copy_device_to_host(host, source, count * sizeof(float));
  if (status != kernels::Status::kOk) {
    throw std::runtime_error(std::string("copying a tensor from the device failed: ") + kernels::to_string(status));
  }
}

void copy_from_host(float* destination, const float* host, std::size_t count, bool destination_on_device) {
  if (!destination_on_device) {
    std::memcpy(destination, host, count * sizeof(float));
    return;
  }
  const auto status = kernels::copy_host_to_device(destination, host, count * sizeof(float));
  if (status != kernels::Status::kOk) {
    throw std::runtime_error(std::string("copying a tensor to the device failed: ") + kernels::to_string(status));
  }
}

void TensorSet::add(const std::string& name, float* data, std::size_t count, MemoryKind kind) {
  if (data == nullptr) throw std::invalid_argument("tensor '" + name + "': null data");
  if (count == 0) throw std::invalid_argument("tensor '" + name + "': zero elements");
  for (const auto& t : tensors_) {
    if (t.name == name) throw std::invalid_argument("tensor '" + name + "' is registered twice");
  }
  tensors_.push_back({name, data, count, resolve_on_device(data, kind, "tensor '" + name + "'")});
  total_ += count;
  if (!in_place()) staging_.resize(total_);
}

std::string TensorSet::describe() const {
  std::string text;
  for (const auto& t : tensors_) {
    text += (text.empty() ? "" : " ") + t.name + "[" + std::to_string(t.count) + "]" + (t.device ? " (device)" : "");
  }
  return text;
}

std::span<float> TensorSet::flat() {
  if (in_place()) return {tensors_[0].data, tensors_[0].count};
  return staging_;
}

void TensorSet::gather() {
  if (in_place()) return;
  std::size_t offset = 0;
  for (const auto& t : tensors_) {
    copy_to_host(staging_.data() + offset, t.data, t.count, t.device);
    offset += t.count;
  }
}

void TensorSet::scatter() {
  if (in_place()) return;
  std::size_t offset = 0;
  for (const auto& t : tensors_) {
    copy_from_host(t.data, staging_.data() + offset, t.count, t.device);
    offset += t.count;
  }
}

}  // namespace murmur::peer
