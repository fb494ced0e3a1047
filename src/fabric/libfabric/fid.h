// RAII owners of libfabric handles: one owner per fid_* (closed with
// fi_close) and one for fi_info lists (fi_freeinfo). Declare owners in
// creation order so that they close in reverse (ft_close_fids).
#pragma once

#include <rdma/fabric.h>

#include <utility>

namespace murmur::fabric::libfabric {

// Logs instead of throwing: it runs in destructors.
void close_fid_logged(fid_t fid, const char* what);

template <typename T>
class Fid {
 public:
  Fid() = default;
  Fid(T* handle, const char* what) : handle_(handle), what_(what) {}
  Fid(const Fid&) = delete;
  Fid& operator=(const Fid&) = delete;
  Fid(Fid&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)), what_(other.what_) {}
  Fid& operator=(Fid&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
      what_ = other.what_;
    }
    return *this;
  }
  ~Fid() { reset(); }

  void reset() {
    if (handle_ != nullptr) close_fid_logged(&std::exchange(handle_, nullptr)->fid, what_);
  }
  T* get() const { return handle_; }
  T* operator->() const { return handle_; }
  explicit operator bool() const { return handle_ != nullptr; }

 private:
  T* handle_ = nullptr;
  const char* what_ = "fid";
};

class InfoPtr {
 public:
  InfoPtr() = default;
  explicit InfoPtr(fi_info* info) : info_(info) {}
  InfoPtr(const InfoPtr&) = delete;
  InfoPtr& operator=(const InfoPtr&) = delete;
  InfoPtr(InfoPtr&& other) noexcept : info_(std::exchange(other.info_, nullptr)) {}
  InfoPtr& operator=(InfoPtr&& other) noexcept {
    if (this != &other) {
      reset();
      info_ = std::exchange(other.info_, nullptr);
    }
    return *this;
  }
  ~InfoPtr() { reset(); }

  void reset() {
    if (info_ != nullptr) fi_freeinfo(std::exchange(info_, nullptr));
  }
  fi_info* get() const { return info_; }
  fi_info* operator->() const { return info_; }
  explicit operator bool() const { return info_ != nullptr; }

 private:
  fi_info* info_ = nullptr;
};

}  // namespace murmur::fabric::libfabric
