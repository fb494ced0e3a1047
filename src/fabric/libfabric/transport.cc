// The libfabric Transport: a thread-safe front that hands operations to one
// progress thread, which owns the endpoint and makes every fi_* data call.
//
// Lock order: mutex_ is a leaf lock except for Request's own (leaf) mutex,
// which is never held while taking mutex_.
#include "fabric/libfabric/transport.h"

#include <rdma/fi_cm.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <variant>

#include "common/check.h"
#include "common/log.h"
#include "fabric/errors.h"
#include "fabric/libfabric/endpoint.h"
#include "fabric/libfabric/engine.h"
#include "fabric/libfabric/fi_check.h"
#include "fabric/libfabric/waiter.h"

namespace murmur::fabric::libfabric {
namespace {

using namespace std::chrono_literals;

struct FailPeer {
  int peer;
  std::exception_ptr error;
};
using Command = std::variant<std::unique_ptr<Operation>, FailPeer>;

class LibfabricTransport final : public Transport {
 public:
  explicit LibfabricTransport(const TransportOptions& options)
      : options_(options),
        endpoint_(options, choose_provider(options)),
        waiter_(endpoint_.fabric.get(), endpoint_.cq.get(), endpoint_.wait_fd),
        engine_(endpoint_, options.chunk_bytes,
                [this](int peer, std::exception_ptr error) { mark_failed(peer, error); }) {
    char name[256];
    std::size_t len = sizeof(name);
    fi_check(fi_getname(&endpoint_.ep->fid, name, &len), "fi_getname");
    address_.assign(name, len);
    failed_.assign(options.size, nullptr);
  }

  ~LibfabricTransport() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    waiter_.wake();
    if (thread_.joinable()) thread_.join();
    // Operations the thread never took: fail them too.
    std::deque<Command> left;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      left.swap(commands_);
    }
    engine_.close();
    for (auto& command : left) {
      if (auto* op = std::get_if<std::unique_ptr<Operation>>(&command)) {
        (*op)->request->fail(engine_.peer_error((*op)->peer, "transport closed"));
      }
    }
    fabric_log().debug("libfabric transport rank {} closed", options_.rank);
  }

  int rank() const override { return options_.rank; }
  int size() const override { return options_.size; }
  std::string name() const override { return "libfabric:" + endpoint_.provider; }
  std::string address() const override { return address_; }

  void connect(const std::vector<PeerInfo>& peers) override {
    if (static_cast<int>(peers.size()) != options_.size) {
      throw FabricError("connect: got " + std::to_string(peers.size()) +
                        " peers for a group of size " + std::to_string(options_.size));
    }
    MURMUR_CHECK(!connected_.load());
    std::vector<fi_addr_t> addresses(peers.size(), FI_ADDR_NOTAVAIL);
    for (std::size_t r = 0; r < peers.size(); ++r) {
      MURMUR_CHECK_EQ(peers[r].rank, static_cast<int>(r));
      const int ret = fi_av_insert(endpoint_.av.get(), peers[r].address.data(), 1,
                                   &addresses[r], 0, nullptr);
      if (ret != 1) {
        throw PeerError(peers[r].rank, peers[r].host,
                        fi_error_text("fi_av_insert", ret < 0 ? ret : -FI_EADDRNOTAVAIL));
      }
    }
    // The progress thread starts only now: until then this thread alone
    // touched the endpoint (FI_THREAD_DOMAIN).
    engine_.set_peers(peers, std::move(addresses));
    connected_.store(true);
    thread_ = std::thread([this] { run(); });
  }

  RequestPtr isend(int peer, Tag tag, const void* data, std::size_t bytes) override {
    auto request = std::make_shared<Request>(Request::Kind::kSend, peer, tag);
    if (bytes > engine_.max_message_bytes()) {
      request->fail(std::make_exception_ptr(FabricError(
          "isend: message of " + std::to_string(bytes) + " bytes exceeds the " +
          std::to_string(engine_.max_message_bytes()) + " bytes that provider " +
          endpoint_.provider_name + " can announce in " +
          std::to_string(endpoint_.cq_data_size) + " bytes of CQ data")));
      return request;
    }
    return submit(std::move(request), peer, tag, const_cast<void*>(data), bytes);
  }

  RequestPtr irecv(int peer, Tag tag, void* data, std::size_t capacity) override {
    auto request = std::make_shared<Request>(Request::Kind::kRecv, peer, tag);
    return submit(std::move(request), peer, tag, data, capacity);
  }

  void fail_peer(int peer, std::exception_ptr error) override {
    MURMUR_CHECK(peer >= 0 && peer < options_.size);
    if (!mark_failed(peer, error)) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      commands_.emplace_back(FailPeer{peer, std::move(error)});
    }
    waiter_.wake();
  }

 private:
  // Records the failure for the front; false if the peer had failed before.
  bool mark_failed(int peer, std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_[peer]) return false;
    failed_[peer] = std::move(error);
    return true;
  }

  RequestPtr submit(RequestPtr request, int peer, Tag tag, void* data, std::size_t bytes) {
    MURMUR_CHECK(peer >= 0 && peer < options_.size);
    if (!connected_.load()) {
      throw FabricError("libfabric transport: isend/irecv before connect()");
    }
    auto op = std::make_unique<Operation>();
    op->request = request;
    op->peer = peer;
    op->tag = tag;
    op->data = static_cast<char*>(data);
    op->capacity = bytes;
    std::exception_ptr failed;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) throw FabricError("libfabric transport: used while closing");
      failed = failed_[peer];
      if (!failed) commands_.emplace_back(std::move(op));
    }
    if (failed) {  // outside the lock: callbacks may call into the transport
      request->fail(failed);
      return request;
    }
    waiter_.wake();
    return request;
  }

  void run() {
    bool busy = true;
    for (;;) {
      std::deque<Command> commands;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) return;
        commands.swap(commands_);
      }
      try {
        for (auto& command : commands) {
          if (auto* op = std::get_if<std::unique_ptr<Operation>>(&command)) {
            engine_.submit(std::move(*op));
          } else {
            auto& fail = std::get<FailPeer>(command);
            engine_.fail_peer(fail.peer, fail.error);
          }
        }
        busy = engine_.progress() || !commands.empty();
      } catch (const std::exception& e) {
        // A bug (MURMUR_CHECK) must not kill the process from this thread:
        // hand it to every waiter instead.
        fabric_log().error("libfabric progress thread: {}", e.what());
        engine_.fail_everything(std::current_exception());
        busy = true;
      }
      if (busy) {
        waiter_.note_busy();
        continue;
      }
      // Bounded waits while work is in flight guard against a provider that
      // needs progress without signalling its fd; idle waits are long.
      const auto max_wait = engine_.has_pending_posts() ? 1000us
                            : engine_.idle()            ? 200000us
                                                        : 20000us;
      waiter_.wait(max_wait);
    }
  }

  const TransportOptions options_;
  // Creation order: closed in reverse.
  Endpoint endpoint_;
  Waiter waiter_;
  Engine engine_;
  std::string address_;
  std::atomic<bool> connected_{false};

  std::mutex mutex_;  // guards below; taken before no other lock
  bool stopping_ = false;
  std::deque<Command> commands_;
  std::vector<std::exception_ptr> failed_;

  std::thread thread_;
};

}  // namespace

std::unique_ptr<Transport> make_transport(const TransportOptions& options) {
  return std::make_unique<LibfabricTransport>(options);
}

}  // namespace murmur::fabric::libfabric
