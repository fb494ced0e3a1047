// ScalarGather: every rank's double, exactly, through the rendezvous'
// key/value store. For the few scalars a job agrees on (an accuracy count,
// the scheduler's period): two requests per rank per call to the rendezvous
// (set its key, then one gather that answers with every rank's once all are
// there), no data-plane traffic, and every rank sees the same values in rank
// order, so sums over them are bitwise equal everywhere.
//
// Each call uses fresh keys ("<prefix><sequence>/<rank>"), so all ranks must
// call it the same number of times in the same order (a collective). Values
// arrive from the network: anything but a finite number is refused, naming
// the rank and host that sent it.
// Blocking: until every rank's value is there, or `timeout` (FabricError).
// Thread safety: one caller thread (the sequence number is not shared).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fabric/group.h"

namespace murmur::peer {

// "v1,v2,...": exactly `count` finite numbers (any strtod form, the hex
// floats ScalarGather writes included), nothing else; nullopt otherwise.
std::optional<std::vector<double>> parse_scalar_list(const std::string& text, std::size_t count);

class ScalarGather {
 public:
  // `group` must outlive this object.
  ScalarGather(fabric::Group& group, std::string prefix, std::chrono::milliseconds timeout);

  // `what` names the collective in errors ("average()").
  std::vector<double> all(double value, const std::string& what);
  // Several scalars per rank in one call: every rank's `values`, in rank
  // order. All ranks must pass the same count; another count is refused
  // like a bad number, naming the rank and host.
  std::vector<std::vector<double>> all(std::span<const double> values, const std::string& what);

 private:
  void publish(std::uint64_t sequence, std::span<const double> values);
  std::vector<std::vector<double>> collect(std::uint64_t sequence, std::size_t count, const std::string& what);

  fabric::Group& group_;
  const std::string prefix_;
  const std::chrono::milliseconds timeout_;
  std::uint64_t sequence_ = 0;
};

}  // namespace murmur::peer
