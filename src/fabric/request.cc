#include "fabric/request.h"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

namespace murmur::fabric {

Request::Request(Kind kind, int peer, Tag tag) : kind_(kind), peer_(peer), tag_(tag) {
  if (tag & kBackendTagBit) {
    throw std::invalid_argument(
        fmt::format("{} rank {}: tag {:#018x} sets bit 63, which the transport keeps for itself; tags use bits 0..62",
                    kind == Kind::kSend ? "isend to" : "irecv from", peer, tag));
  }
}

bool Request::test() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

bool Request::wait_until(Clock::time_point deadline) {
  if (auto driver = driver_.lock()) driver->drive(*this, deadline);
  std::unique_lock<std::mutex> lock(mutex_);
  if (!done_cv_.wait_until(lock, deadline, [this] { return done_; })) return false;
  if (error_) std::rethrow_exception(error_);
  return true;
}

std::size_t Request::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

std::exception_ptr Request::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

void Request::complete(std::size_t bytes) { finish(bytes, nullptr); }

void Request::fail(std::exception_ptr error) { finish(0, std::move(error)); }

void Request::finish(std::size_t bytes, std::exception_ptr error) {
  std::vector<std::function<void(Request&)>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) return;
    finished_ = true;
    bytes_ = bytes;
    error_ = std::move(error);
    callbacks.swap(callbacks_);
  }
  // Outside the lock: a callback may inspect this request. Before waiters
  // wake: what callbacks record is visible to whoever waited.
  for (auto& callback : callbacks) callback(*this);
  callbacks.clear();  // what they captured goes before anyone is woken
  // Notified under the lock: a woken waiter may drop the last reference to
  // this request as soon as it can see done_.
  std::lock_guard<std::mutex> lock(mutex_);
  done_ = true;
  done_cv_.notify_all();
}

void Request::on_done(std::function<void(Request&)> callback) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!finished_) {
      callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback(*this);
}

void Request::retain(std::shared_ptr<const void> owner) {
  if (!owner) return;
  std::lock_guard<std::mutex> lock(mutex_);
  owners_.push_back(std::move(owner));
}

bool wait_all(std::span<const RequestPtr> requests, Clock::time_point deadline) {
  std::exception_ptr first_error;
  bool all_done = true;
  for (const auto& request : requests) {
    try {
      if (!request->wait_until(deadline)) all_done = false;
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
  return all_done;
}

}  // namespace murmur::fabric
