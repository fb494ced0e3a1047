// The shaped transport: a Transport decorator that makes every send to a peer
// cost what the ShaperConfig says that link costs, on top of whatever the
// inner transport costs. Used to run topology experiments on loopback or on
// one fast fabric as if the links were 10GbE, a WAN, or changing over time.
// The scheduler never reads the config: it has to measure.
//
// Model, per destination d (a send to self is not shaped):
//   - a send of n bytes queued at time t, with the profile in force at t
//     (time measured from this transport's creation), starts transmitting at
//     start = max(t, link_free_at[d]) and occupies the link for n / bw, so
//     back-to-back messages serialise as on a NIC: link_free_at[d] = start +
//     n / bw;
//   - it is handed to the inner transport at start + n / bw + latency +
//     U[0, jitter] (jitter drawn from `seed` and this rank), but never before
//     the previous send to d was handed over: hand-over times per destination
//     are monotone, so neither jitter nor a profile change reorders messages.
//   - the outer request completes when the inner one completes, with its byte
//     count or its error.
//   - when the profile sets an uplink rate, the send also passes through
//     this rank's one uplink, shared by every edge whose profile sets one:
//     start is no earlier than uplink_free_at either, the message holds both
//     for n / min(bw, uplink), and uplink_free_at moves with link_free_at[d].
//     The uplink sends whole messages one after another (first queued, first
//     sent), as a NIC that does not interleave flows: the last of several
//     concurrent sends finishes when fair sharing would finish them all, the
//     others earlier.
// Links that bypass the uplink are independent of each other. Receives pass
// straight through (a receiver's downlink is not modelled).
//
// Threads: one timer thread per shaped transport sleeps on a condition
// variable until the next hand-over is due (no polling) and calls the inner
// isend from there. isend / irecv / fail_peer never block. The destructor
// wakes the timer at once, fails sends still queued with PeerError
// "transport closed", then destroys the inner transport.
#pragma once

#include <cstdint>
#include <memory>

#include "fabric/shaper/shaper_config.h"
#include "fabric/transport.h"

namespace murmur::fabric::shaper {

// What a shaped transport offers beyond Transport; reach it with
// dynamic_cast<ShapedTransport*> on the result of make_shaped_transport.
class ShapedTransport : public Transport {
 public:
  // Bytes of the sends to `peer` that went through the shaper so far
  // (counted when queued). Thread-safe, never blocks for long.
  virtual std::uint64_t bytes_shaped(int peer) const = 0;
  // The wrapped transport (owned by this one).
  virtual Transport& inner() = 0;
};

// Wraps `inner`. `config` edges name ranks of inner's group; `seed` drives
// the jitter (runs with equal seeds and equal send sequences see the same
// delays). name() reads "shaped(<inner name>)".
std::unique_ptr<Transport> make_shaped_transport(std::unique_ptr<Transport> inner, ShaperConfig config,
                                                 std::uint64_t seed);

}  // namespace murmur::fabric::shaper
