// Faults of the world in the fabric layer. (Bugs are MURMUR_CHECK failures,
// see common/check.h.)
//
// PeerError: something went wrong on the link to one peer: it died, stopped
//   answering, left, or sent a message that does not fit. The message always
//   names the peer by rank and host so that an operator can find it.
// FabricError: a local call into the fabric failed (a libfabric call, a
//   socket, a bad option). The message names the call and the reason.
#pragma once

#include <stdexcept>
#include <string>

namespace murmur::fabric {

class FabricError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class PeerError : public FabricError {
 public:
  // what() reads "peer rank <rank> (<host>): <reason>".
  PeerError(int rank, const std::string& host, const std::string& reason)
      : FabricError("peer rank " + std::to_string(rank) + " (" + host + "): " + reason),
        rank_(rank),
        host_(host),
        reason_(reason) {}

  int rank() const { return rank_; }
  const std::string& host() const { return host_; }
  const std::string& reason() const { return reason_; }

 private:
  int rank_;
  std::string host_;
  std::string reason_;
};

}  // namespace murmur::fabric
