// ScalarGather over an in-process rendezvous server and real Groups (asio on
// loopback): every member sees every value in rank order, and a long run of
// collectives keeps the server's store at two collectives' keys, not one set
// per collective (the growth a 30-minute soak found in murmur-run's RSS).
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "fabric/group.h"
#include "fabric/rendezvous/server.h"
#include "peer/api/scalar_gather.h"

namespace murmur::peer {
namespace {

using namespace std::chrono_literals;

class ScalarGatherJob : public ::testing::Test {
 protected:
  ScalarGatherJob() {
    fabric::rendezvous::ServerOptions s;
    s.bind_host = "127.0.0.1";
    s.token = "secret";
    server_ = std::make_unique<fabric::rendezvous::Server>(s);
  }

  std::vector<std::unique_ptr<fabric::Group>> start_job(int size) const {
    std::vector<std::future<std::unique_ptr<fabric::Group>>> starting;
    for (int r = 0; r < size; ++r) {
      starting.push_back(std::async(std::launch::async, [this, r, size] {
        fabric::GroupOptions o;
        o.rank = r;
        o.size = size;
        o.rendezvous_port = server_->port();
        o.token = "secret";
        o.self_host = "127.0.0.1";
        o.standby_bind_host = "127.0.0.1";
        o.transport.backend = "asio";
        o.join_timeout = 30s;
        return fabric::Group::join(o);
      }));
    }
    std::vector<std::unique_ptr<fabric::Group>> members;
    for (auto& s : starting) members.push_back(s.get());
    return members;
  }

  std::unique_ptr<fabric::rendezvous::Server> server_;
};

TEST_F(ScalarGatherJob, ALongRunKeepsTwoCollectivesKeysInTheStore) {
  constexpr int kSize = 3;
  constexpr int kCalls = 300;
  auto members = start_job(kSize);
  std::vector<std::unique_ptr<ScalarGather>> gathers;
  for (auto& g : members) gathers.push_back(std::make_unique<ScalarGather>(*g, "test/scalars/", 30s));

  // Each member runs `calls` collectives; member r contributes r + 1000 * i
  // to call i. Returns the first wrong value seen, or "".
  const auto run = [&](int calls, int first) {
    std::vector<std::future<std::string>> running;
    for (int r = 0; r < kSize; ++r) {
      running.push_back(std::async(std::launch::async, [&, r]() -> std::string {
        for (int i = first; i < first + calls; ++i) {
          const auto values = gathers[static_cast<std::size_t>(r)]->all(r + 1000.0 * i, "test");
          for (int k = 0; k < kSize; ++k)
            if (values[static_cast<std::size_t>(k)] != k + 1000.0 * i)
              return "rank " + std::to_string(r) + " call " + std::to_string(i) + ": value " + std::to_string(k) +
                     " is " + std::to_string(values[static_cast<std::size_t>(k)]);
        }
        return "";
      }));
    }
    for (auto& f : running) EXPECT_EQ(f.get(), "");
  };

  // Two collectives in: the keys the job keeps from now on (the group's own
  // and at most two collectives').
  run(2, 0);
  const std::size_t after_two = server_->store_bytes();
  run(kCalls, 2);
  const std::size_t after_all = server_->store_bytes();
  // Keys of later collectives have more digits; a few bytes per key, not
  // kCalls collectives' worth (about 40 bytes x 3 keys each).
  EXPECT_LE(after_all, after_two + 2 * kSize * 8) << "store grew from " << after_two << " to " << after_all << " bytes";
  EXPECT_EQ(server_->rejected_count(), 0u);
}

}  // namespace
}  // namespace murmur::peer
