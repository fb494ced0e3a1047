// Transport: the data plane. One endpoint per process, reaching every peer of
// a group of `size()` ranks; backends (libfabric/, asio/) implement it with the
// same file names, and shaper/ wraps any of them to emulate links. The
// backends, Request's completion order and the history of the buffer rule:
// docs/architecture.md, "Data plane: Transport". This header is the
// contract every backend keeps and every caller may rely on.
//
// Life cycle:
//   1. make_transport(options) opens the local endpoint; address() is then
//      valid and is published through the rendezvous.
//   2. connect(peers) is called once, with peers.size() == size() and
//      peers[r] describing rank r: either a live member (peers[r].rank == r,
//      its address and host) or an absent one (peers[r].rank == -1; its host
//      may still be given, for messages). Absent ranks are members the job
//      lost before this process joined: they are failed at once, so every
//      request to them fails with a PeerError at once instead of hanging.
//      The own rank must be live. It may block until the connections it
//      needs are up, and throws FabricError / PeerError if they cannot be
//      made within options.connect_timeout.
//   3. isend / isendv / irecv, from any thread.
//   4. The destructor fails what is still pending (PeerError "transport
//      closed"), joins the progress thread, closes the endpoint and then
//      lets go of every request it held. A backend whose progress thread is
//      stuck inside a provider (libfabric/transport.cc) keeps its requests,
//      and so their buffers, to the end of the process instead.
//
// Contract of isend / irecv (NCCL net-plugin style):
//   - Neither blocks: they queue the operation and return a Request at once.
//   - The buffer must stay valid, and a send buffer unchanged, until the
//     request is done.
//   - isendv sends the concatenation of its pieces (send_pieces.h) as one
//     message: the receiver cannot tell it from an isend of the same bytes.
//     Every piece's buffer falls under the buffer rule below.
//   - Messages between a (source, destination, tag) triple are matched in the
//     order they were posted on each side. Any size from 0 bytes up is
//     allowed; backends chunk large messages and pipeline the chunks.
//   - Tags are the caller's in bits 0..62; a tag with bit 63 set
//     (kBackendTagBit, request.h) throws std::invalid_argument.
//   - A receive whose `capacity` is smaller than the arriving message fails
//     with PeerError naming both sizes; the message is consumed and dropped.
//   - A peer that dies or is declared dead (fail_peer) fails every pending
//     and later request to it with a PeerError naming its rank and host.
//     Requests to other peers are unaffected.
//   - Buffer rule. A backend holds each request (a shared reference) for
//     as long as it may read or write the request's buffer, and lets go of
//     it only once it never will again: when the provider has handed the
//     buffer back, or when the transport is destroyed (its endpoint closed
//     first). A request fails as soon as its peer is declared failed,
//     without waiting for that (a receive libfabric has already matched to
//     a message cannot be recalled, and from a dead peer it never
//     completes), so after a failure the backend may still touch the buffer
//     of a request that is done. A caller whose buffer can be freed before
//     the transport is destroyed therefore hands the request a share of the
//     buffer's ownership (Request::retain) right after posting; the
//     backend's reference keeps it alive exactly as long as needed. Gossip
//     algorithms always do (gossip/algorithm/message_buffer.h).
//
// Joining a running job. Members are numbered by rank ("member id"); an id
// is never reused: a new or restarted process joins with a new id >= the
// job's original size. The joiner is created with options.size = its id + 1
// (or more) and connect()s with the live members (a list with holes, see 2.
// above). Every live member calls add_peer with the joiner's PeerInfo. The
// joiner's connect() and the members' add_peer may run in any order and
// concurrently (both endpoints listen from creation), but, as after the
// first connect() (Group's "murmur/connected" barrier), no message may flow
// between a member and the joiner until both sides have returned: libfabric
// matches receives by source address, and a message that arrives before
// its sender's address was inserted may never match a receive. The control
// plane orders this; the transport does not. Tags and the ordering rules
// above are unchanged for a joined peer.
//
// Thread safety: all methods are thread-safe. Backends make progress on one
// internal thread that blocks on the provider's wait object, in epoll, or
// (libfabric shm) on a futex its peers ring: no method and no idle state
// busy-polls a core.
#pragma once

#include <chrono>
#include <cstddef>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "fabric/request.h"
#include "fabric/send_pieces.h"

namespace murmur::fabric {

struct PeerInfo {
  int rank = -1;
  std::string host;     // for messages and logs: host name or IP
  std::string address;  // the peer's Transport::address(), opaque bytes
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  // Ranks known so far (live, failed or absent); grows with add_peer.
  virtual int size() const = 0;
  // Backend and provider, e.g. "libfabric:tcp", "libfabric:shm", "asio".
  virtual std::string name() const = 0;

  // This endpoint's address as opaque bytes (may contain NULs).
  virtual std::string address() const = 0;
  // See "Life cycle" above: peers.size() == size(); peers[r].rank is r
  // (live) or -1 (absent).
  virtual void connect(const std::vector<PeerInfo>& peers) = 0;

  // After connect(): makes `peer.rank`, a process that joins the running
  // job, reachable, and grows size() to peer.rank + 1. Only new ranks are
  // accepted (peer.rank >= size()): ids are never reused, so a rank that is
  // or was a member (live, failed, or absent) is refused with FabricError,
  // and so is a call before connect(). Ranks skipped over (size() <= r <
  // peer.rank) become absent, as in connect(). Safe to call concurrently
  // with isend / irecv to other peers; requests to peer.rank may be posted
  // once it returns. Blocks until the link can carry messages: the asio
  // backend dials the new peer and waits up to options.connect_timeout
  // (then fails the rank and throws PeerError); libfabric inserts its
  // address on the progress thread and returns (the connection is made by
  // the provider on first use).
  virtual void add_peer(const PeerInfo& peer) = 0;

  // One buffer: isendv with one piece.
  RequestPtr isend(int peer, Tag tag, const void* data, std::size_t bytes) {
    return isendv(peer, tag, SendPieces(data, bytes));
  }
  // Gathered send: one message made of the pieces back to back, sent
  // without packing them (libfabric: iovecs, up to the provider's limit
  // per chunk; asio: one vectored write per frame).
  virtual RequestPtr isendv(int peer, Tag tag, SendPieces pieces) = 0;
  virtual RequestPtr irecv(int peer, Tag tag, void* data, std::size_t capacity) = 0;

  // Declares `peer` failed: every pending and later request to it fails with
  // `error`. Called by the backend itself when a link breaks, and by the
  // control plane's failure detector (heartbeats). Idempotent; never blocks.
  virtual void fail_peer(int peer, std::exception_ptr error) = 0;
};

}  // namespace murmur::fabric
