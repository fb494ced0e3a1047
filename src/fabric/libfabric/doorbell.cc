#include "fabric/libfabric/doorbell.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "fabric/errors.h"

namespace murmur::fabric::libfabric {
namespace {

constexpr std::size_t kBytes = 64;  // one cache line; the object is a page on disk

std::string path_of(const std::string& region) { return "/" + region + ".bell"; }

void* map_shared(int fd) {
  void* p = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : p;
}

// "murmur-<digits>-<16 hex>" at `at` of `s`: its length, or 0.
std::size_t region_length_at(const std::string& s, std::size_t at) {
  static constexpr char kPrefix[] = "murmur-";
  std::size_t i = at + sizeof(kPrefix) - 1;
  if (s.compare(at, sizeof(kPrefix) - 1, kPrefix) != 0) return 0;
  const std::size_t digits = i;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && i - digits < 10) ++i;
  if (i == digits || i >= s.size() || s[i] != '-') return 0;
  ++i;
  for (int k = 0; k < 16; ++k, ++i)
    if (i >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i]))) return 0;
  return i - at;
}

}  // namespace

std::unique_ptr<Doorbell> Doorbell::create(const std::string& region) {
  const std::string path = path_of(region);
  const int fd = ::shm_open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw FabricError("shm_open(" + path + "): " + std::strerror(errno));
  void* mapping = ::ftruncate(fd, kBytes) == 0 ? map_shared(fd) : nullptr;
  const int saved = errno;
  ::close(fd);
  if (mapping == nullptr) {
    ::shm_unlink(path.c_str());
    throw FabricError("mapping the doorbell " + path + ": " + std::strerror(saved));
  }
  return std::unique_ptr<Doorbell>(new Doorbell(path, mapping, true));
}

std::unique_ptr<Doorbell> Doorbell::open(const std::string& region) {
  const std::string path = path_of(region);
  const int fd = ::shm_open(path.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) return nullptr;
  // Only an object the size create() makes: anything else is not ours.
  struct stat st {};
  void* mapping = ::fstat(fd, &st) == 0 && st.st_size == static_cast<off_t>(kBytes) ? map_shared(fd) : nullptr;
  ::close(fd);
  if (mapping == nullptr) return nullptr;
  return std::unique_ptr<Doorbell>(new Doorbell(path, mapping, false));
}

std::optional<std::string> Doorbell::region_in(const std::string& address) {
  for (std::size_t at = address.find("murmur-"); at != std::string::npos; at = address.find("murmur-", at + 1)) {
    if (const std::size_t n = region_length_at(address, at)) return address.substr(at, n);
  }
  return std::nullopt;
}

Doorbell::Doorbell(std::string path, void* mapping, bool owner)
    : path_(std::move(path)),
      mapping_(mapping),
      word_(static_cast<std::atomic<std::uint32_t>*>(mapping)),
      owner_(owner) {
  static_assert(std::atomic<std::uint32_t>::is_always_lock_free, "a futex word must be a plain 32-bit atomic");
}

Doorbell::~Doorbell() {
  ::munmap(mapping_, kBytes);
  if (owner_) ::shm_unlink(path_.c_str());
}

void Doorbell::ring() {
  word_->fetch_add(1, std::memory_order_release);
  // Not FUTEX_PRIVATE: the waiter is another process.
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word_), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

void Doorbell::wait(std::uint32_t seen, std::chrono::microseconds timeout) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(timeout.count() / 1000000);
  ts.tv_nsec = static_cast<long>(timeout.count() % 1000000) * 1000;
  // EAGAIN (the value moved on), EINTR and ETIMEDOUT all mean: look again.
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word_), FUTEX_WAIT, seen, &ts, nullptr, 0);
}

}  // namespace murmur::fabric::libfabric
