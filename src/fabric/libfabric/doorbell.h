// Doorbell: a wake-up one process gives another's progress thread through
// shared memory, for providers whose completion queue has no wait fd (shm
// in libfabric 1.17). Without it such a thread finds a message only at its
// next poll, and its back-off (waiter.h) makes a round trip cost hundreds of
// microseconds; with it the sender rings the receiver after posting, and
// the receiver rings the sender after a receive completes, so each side
// wakes when there is something to read (docs/fabric-performance.md).
//
// A doorbell is a 32-bit counter in its own POSIX shared-memory object,
// "/<region>.bell", next to the shm endpoint's region "<region>" (a name
// from endpoint.cc: "murmur-<pid>-<16 hex digits>", so that launchers'
// remove_shm_regions_of finds it too). ring() increments it and wakes a
// futex waiter; wait() sleeps on the futex while the counter still holds
// the value seen before the caller last looked for work, or until a timeout
// (a ring that comes between the look and the wait is then not lost: the
// value differs and wait() returns at once).
//
// Trust: a peer's doorbell is named from its published address, which is
// untrusted: only a name of exactly that form is opened (region_in). A
// process of the same machine that could write /dev/shm could ring it
// spuriously; that costs a wake-up, never correctness.
//
// Ownership and threads: the owner's object is unlinked when its Doorbell
// is destroyed; a peer's mapping stays valid after the peer is gone (rings
// then reach no one). ring() and value() are thread-safe and never block;
// wait() blocks the calling thread up to its timeout.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace murmur::fabric::libfabric {

class Doorbell {
 public:
  // This endpoint's doorbell for shm region `region`. Throws FabricError.
  static std::unique_ptr<Doorbell> create(const std::string& region);
  // A peer's, by its region name; nullptr when there is none (a peer of an
  // older build, or gone already): the peer then finds messages by polling.
  static std::unique_ptr<Doorbell> open(const std::string& region);
  // The region name inside a published shm address, if it holds one of the
  // form endpoint.cc makes; nullopt otherwise.
  static std::optional<std::string> region_in(const std::string& address);

  Doorbell(const Doorbell&) = delete;
  Doorbell& operator=(const Doorbell&) = delete;
  ~Doorbell();

  void ring();
  std::uint32_t value() const { return word_->load(std::memory_order_acquire); }
  // Returns once value() != seen, or after `timeout`, or spuriously.
  void wait(std::uint32_t seen, std::chrono::microseconds timeout);

 private:
  Doorbell(std::string path, void* mapping, bool owner);

  std::string path_;  // "/<region>.bell"
  void* mapping_;
  std::atomic<std::uint32_t>* word_;
  bool owner_;
};

}  // namespace murmur::fabric::libfabric
