// ScalarGather: every rank's double, exactly, through the rendezvous'
// key/value store. For the few scalars a job agrees on (an accuracy count,
// the scheduler's period): two requests per rank per call to the rendezvous
// (set its key, then one gather that answers with every rank's once all are
// there), no data-plane traffic, and every rank sees the same values in rank
// order, so sums over them are bitwise equal everywhere.
//
// Each call uses fresh keys ("<prefix><sequence>/<generation>/<position>"),
// so all ranks must call it the same number of times in the same order (a
// collective); the call's gather retires the previous call's keys
// (Client::gather), so a long run keeps two collectives' keys, not all. Values
// arrive from the network: anything but a finite number is refused, naming
// the rank and host that sent it.
//
// Membership (with a Membership): a call gathers over the members of a view,
// starting from the one the gossip runs in at the call (the same on every
// member at the same step). When a member of it never publishes because it
// was lost, every member moves to the next agreed view, and only then: a
// member moves on only when some member that has not published is outside
// the next view (it can no longer publish: the membership service refuses
// writes from non-members), so every member ends with the same view and the
// same values (the store keeps them).
// Blocking: until every member's value is there, or `timeout` (FabricError
// naming the members that did not publish).
// Thread safety: one caller thread (the sequence number is not shared).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fabric/errors.h"
#include "fabric/group.h"
#include "gossip/algorithm/view.h"

namespace murmur::peer {

// "v1,v2,...": exactly `count` finite numbers (any strtod form, the hex
// floats ScalarGather writes included), nothing else; nullopt otherwise.
std::optional<std::vector<double>> parse_scalar_list(const std::string& text, std::size_t count);

class Membership;

class ScalarGather {
 public:
  // `group` and `membership` (null: every rank, always) must outlive this
  // object.
  ScalarGather(fabric::Group& group, std::string prefix, std::chrono::milliseconds timeout,
               const Membership* membership = nullptr);

  // The view a call made now starts from (caller thread of the gossip).
  gossip::View start_view() const;

  struct Gathered {
    std::vector<std::vector<double>> values;  // in the order of view.members
    gossip::View view;                        // whose members they are
  };
  // Several scalars per member in one call. All must pass the same count;
  // another count is refused like a bad number, naming the rank and host.
  // `what` names the collective in errors ("average()").
  Gathered gather(std::span<const double> values, const std::string& what, const gossip::View& start);
  // The same from start_view(), values only.
  std::vector<double> all(double value, const std::string& what);
  std::vector<std::vector<double>> all(std::span<const double> values, const std::string& what);

  // Calls made so far, and where a member that joins the job continues
  // (its sponsor's count: peer/api/join_exchange.h).
  std::uint64_t sequence() const { return sequence_; }
  void continue_at(std::uint64_t sequence) { sequence_ = sequence; }

 private:
  std::string key_prefix(std::uint64_t sequence, const gossip::View& view) const;
  // The keys of every view of collective `sequence - 1` ("" for the first):
  // the store erases them once collective `sequence` is answered.
  std::string retired_prefix(std::uint64_t sequence) const;
  void publish(std::uint64_t sequence, const gossip::View& view, std::span<const double> values);
  // Whether a member of `view` that has not published is outside `next`.
  bool blocked_by_lost(std::uint64_t sequence, const gossip::View& view, const gossip::View& next) const;
  // After the timeout: a FabricError naming the members of `view` that
  // have not published, and `last`'s message.
  [[noreturn]] void throw_missing(std::uint64_t sequence, const gossip::View& view, const std::string& what,
                                  const fabric::FabricError& last) const;
  std::vector<std::vector<double>> parse(const std::vector<std::string>& replies, const gossip::View& view,
                                         std::size_t count, const std::string& what) const;

  fabric::Group& group_;
  const std::string prefix_;
  const std::chrono::milliseconds timeout_;
  const Membership* membership_;
  std::uint64_t sequence_ = 0;
};

}  // namespace murmur::peer
