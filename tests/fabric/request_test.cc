#include "fabric/request.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fabric/errors.h"

namespace murmur::fabric {
namespace {

using namespace std::chrono_literals;

TEST(Request, WaitTimesOutWhilePending) {
  Request request(Request::Kind::kRecv, 1, 7);
  EXPECT_FALSE(request.test());
  EXPECT_FALSE(request.wait_for(20ms));
}

// The libfabric engine sends a message's later chunks with bit 63 set
// (engine.h): a caller's tag with it could match them.
TEST(Request, ATagWithTheBackendsBitIsRefusedNamingTheRankAndTheTag) {
  try {
    Request request(Request::Kind::kSend, 3, kBackendTagBit | 0x2a);
    FAIL() << "a tag with bit 63 must be refused";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("isend to rank 3"), std::string::npos) << what;
    EXPECT_NE(what.find("0x800000000000002a"), std::string::npos) << what;
    EXPECT_NE(what.find("bit 63"), std::string::npos) << what;
  }
  EXPECT_THROW(Request(Request::Kind::kRecv, 0, ~Tag{0}), std::invalid_argument);
  EXPECT_NO_THROW(Request(Request::Kind::kRecv, 0, kBackendTagBit - 1));
}

TEST(Request, CompletionFromAnotherThreadWakesWaiter) {
  auto request = std::make_shared<Request>(Request::Kind::kRecv, 1, 7);
  std::thread completer([&] {
    std::this_thread::sleep_for(10ms);  // not a wait: completes, usually, after the wait began
    request->complete(42);
  });
  EXPECT_TRUE(request->wait_for(5s));
  EXPECT_EQ(request->bytes(), 42u);
  completer.join();
}

TEST(Request, FailureIsRethrownAndFirstOutcomeWins) {
  Request request(Request::Kind::kSend, 3, 0);
  request.fail(std::make_exception_ptr(PeerError(3, "hostc", "connection reset")));
  request.complete(10);  // ignored: the failure came first
  try {
    request.wait_for(1s);
    FAIL() << "expected PeerError";
  } catch (const PeerError& e) {
    EXPECT_EQ(e.rank(), 3);
    EXPECT_EQ(std::string(e.what()), "peer rank 3 (hostc): connection reset");
  }
}

TEST(Request, OnDoneRunsOnceWhetherRegisteredBeforeOrAfter) {
  Request request(Request::Kind::kSend, 0, 0);
  int before = 0, after = 0;
  request.on_done([&](Request& r) { before += static_cast<int>(r.bytes()); });
  request.complete(5);
  request.on_done([&](Request& r) { after += static_cast<int>(r.bytes()); });
  EXPECT_EQ(before, 5);
  EXPECT_EQ(after, 5);
}

// What a callback records is visible to whoever waited: a slow callback
// holds the waiter back (the send timings of a round are all there once its
// wait returns).
TEST(Request, WaitersWakeOnlyAfterTheCallbacksRan) {
  auto request = std::make_shared<Request>(Request::Kind::kSend, 0, 0);
  std::atomic<bool> recorded{false};
  std::atomic<bool> test_inside{true};
  request->on_done([&](Request& r) {
    test_inside = r.test();
    std::this_thread::sleep_for(100ms);  // not a wait: a slow callback, the subject of the test
    recorded = true;
  });
  std::thread completer([&] { request->complete(3); });
  ASSERT_TRUE(request->wait_for(5s));
  EXPECT_TRUE(recorded.load());
  EXPECT_FALSE(test_inside.load());  // inside its callbacks a request is not yet done
  EXPECT_EQ(request->bytes(), 3u);
  completer.join();
}

TEST(Request, RetainKeepsTheOwnerAsLongAsTheRequest) {
  auto owner = std::make_shared<std::vector<char>>(64);
  std::weak_ptr<std::vector<char>> watch = owner;
  auto request = std::make_shared<Request>(Request::Kind::kRecv, 1, 0);
  request->retain(owner);
  owner.reset();
  request->fail(std::make_exception_ptr(PeerError(1, "b", "died")));
  EXPECT_FALSE(watch.expired());  // done, but whoever holds the request holds the buffer
  request.reset();
  EXPECT_TRUE(watch.expired());
}

TEST(WaitAll, RethrowsFailureAfterWaitingForOthers) {
  std::vector<RequestPtr> requests = {std::make_shared<Request>(Request::Kind::kSend, 0, 0),
                                      std::make_shared<Request>(Request::Kind::kSend, 1, 0)};
  requests[0]->fail(std::make_exception_ptr(PeerError(0, "a", "died")));
  requests[1]->complete(1);
  EXPECT_THROW(wait_all(requests, Clock::now() + 1s), PeerError);
}

}  // namespace
}  // namespace murmur::fabric
