// Engine: the progress state machine. It posts chunks, reads the CQ,
// completes and fails requests. Not thread-safe: only the holder of the
// transport's progress role calls it (the progress thread, or a caller
// driving progress; transport.cc), so it needs no locks of its own.
//
// Ordering: chunks are posted from one FIFO, so a message's chunks and
// successive messages to a peer are posted in order. Every receive's chunk
// 0 is posted at once, so that each message finds its receive waiting
// (rxm copies a message that arrives first once more, and a stream of
// messages on one tag then runs a tenth slower: docs/fabric-performance.md).
// A message's later chunks travel on its continuation tag (operation.h),
// which every message of that (peer, tag) shares, so they are posted in
// the order the messages matched: receives on one (peer, tag) wait in a
// queue until the chunk 0 of every receive ahead of them has completed.
// -FI_EAGAIN leaves the FIFO as it is until the CQ has been read again.
#pragma once

#include <rdma/fi_eq.h>

#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "fabric/libfabric/doorbell.h"
#include "fabric/libfabric/endpoint.h"
#include "fabric/libfabric/operation.h"
#include "fabric/transport.h"

namespace murmur::fabric::libfabric {

class Engine {
 public:
  // `on_peer_failed` tells the front that the engine itself declared a peer
  // failed (a broken link), so that later requests fail at once.
  Engine(Endpoint& endpoint, std::size_t chunk_bytes, std::function<void(int, std::exception_ptr)> on_peer_failed);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  ~Engine();

  // connect(): every rank's PeerInfo and AV address (FI_ADDR_NOTAVAIL for
  // an absent rank, which the caller then fails).
  void set_peers(std::vector<PeerInfo> peers, std::vector<fi_addr_t> addresses);
  // A peer joins: inserts its address into the AV (at whatever fi_addr the
  // AV gives; addresses_ maps rank -> fi_addr) and grows the per-peer state
  // to peer.rank + 1, failing the ranks skipped over. Throws PeerError when
  // the provider refuses the address.
  void add_peer(const PeerInfo& peer);
  std::size_t chunk_bytes() const { return chunk_bytes_; }
  std::size_t max_message_bytes() const { return max_message_bytes_; }

  void submit(std::unique_ptr<Operation> op);
  void fail_peer(int peer, std::exception_ptr error);

  // One round: post what can be posted, read the CQ. Returns whether
  // anything happened.
  bool progress();
  // Posts what can be posted; never reads the CQ, so it completes no
  // request and fails only those whose own post fails. Returns whether
  // anything was posted.
  bool post_pending();
  bool idle() const { return ops_.empty(); }
  bool has_pending_posts() const { return !pending_.empty(); }
  // shm with single-copy transfers (Endpoint::shm_single_copy): whether all
  // that is in flight are posted receives from peers that ring this
  // endpoint's doorbell (a peer rings after posting a send to us:
  // doorbell.h; a peer whose own open of our doorbell failed does not, and
  // its messages then wait for the sleep's bound), none failed, nothing
  // waiting to be posted. Then only a ring can bring work, and the progress
  // thread may sleep on the doorbell instead of polling (Waiter::wait).
  // False on other providers.
  bool only_rings_bring_work() const;
  // shm: rings the peers of the sends in flight (once each, not those
  // failed). The progress thread calls it before a polled sleep, so that a
  // receiver sleeping by the rule above looks again at the sender's pace
  // (CMA's response; SAR segments, where the receiver polls as well).
  void ring_receivers_of_sends();

  // Closes the endpoint (so no buffer is touched afterwards), then fails
  // every pending request with PeerError "transport closed" and lets go of
  // the operations. Called by the progress thread as it exits; idempotent.
  // May block inside the provider (fi_close).
  void close();

  std::exception_ptr peer_error(int peer, const std::string& reason) const;

  // The engine cannot go on (a CQ read failed, a broken invariant): fails
  // every pending and later request with `error`.
  void fail_everything(std::exception_ptr error);

 private:
  bool post(ChunkContext& ctx);  // false on -FI_EAGAIN
  // Posts send chunk ctx (message bytes [offset, offset + len)); returns
  // the provider's answer and names the call in *call.
  ssize_t send_chunk(ChunkContext& ctx, std::size_t offset, std::size_t len, fi_addr_t addr, Tag tag,
                     const char** call);
  // Frees a send chunk's bounce copy once the provider handed it back.
  void release_bounce(ChunkContext& ctx);
  // Registers [data, data + bytes) for `access`; *desc is its descriptor.
  Fid<fid_mr> register_region(const void* data, std::size_t bytes, std::uint64_t access, void** desc);
  bool posted(ChunkContext& ctx, const char* call, ssize_t ret);
  bool read_cq();
  void on_completion(ChunkContext& ctx, std::size_t len, std::uint64_t flags, std::uint64_t data);
  void on_error(const fi_cq_err_entry& entry);
  void on_first_chunk(Operation& op, std::size_t total);
  // Posts the later chunks of the receives on (peer, tag) whose chunk 0
  // has completed, front first, up to the first whose chunk 0 has not.
  void post_continuations_in_order(int peer, Tag tag);
  void enqueue_chunks(Operation& op, std::size_t from);
  void register_buffer(Operation& op);
  // `peer_gone`: the peer (or the whole endpoint) failed, so chunks that
  // cannot be recalled will never come back and the request fails at once.
  void fail_op(Operation& op, std::exception_ptr error, bool peer_gone = false);
  // `op`'s link to its peer is gone (a link error, or a cancellation the
  // engine did not ask for): fails the peer and reports it. Retires `op`.
  void lose_link(Operation& op, std::exception_ptr error);
  void maybe_retire(Operation& op);
  // shm: whether `peer`'s doorbell is open here (a rank of this job with one).
  bool has_doorbell(int peer) const;
  // shm: wakes `peer`'s progress thread (doorbell.h), if it has a doorbell.
  void ring(int peer);
  // shm: opens `peer`'s doorbell, named in its address (none: it polls).
  void open_doorbell(const PeerInfo& peer);
  char* scratch();
  // Before the endpoint closes: receives, into scratch space, every message
  // the provider holds because no receive was posted for it
  // (engine_held_messages.cc: libfabric 1.17's rxm leaks them on close).
  void claim_held_messages();
  bool is_held_message_claim(const void* op_context);

  // The most iovecs one send chunk is posted with (the provider's own
  // limit may be lower: tcp;ofi_rxm and shm take 4 in libfabric 1.17).
  static constexpr std::size_t kMaxSendIov = 8;

  Endpoint& endpoint_;
  const std::size_t chunk_bytes_;
  std::size_t max_message_bytes_;
  std::function<void(int, std::exception_ptr)> on_peer_failed_;
  std::vector<PeerInfo> peers_;
  std::vector<fi_addr_t> addresses_;
  std::vector<std::exception_ptr> failed_;            // per peer
  std::vector<std::unique_ptr<Doorbell>> doorbells_;  // per peer (shm; null: none)
  std::vector<bool> rung_;                            // ring_receivers_of_sends' scratch, per peer
  std::exception_ptr broken_;                         // the CQ itself failed

  std::list<std::unique_ptr<Operation>> ops_;
  std::deque<ChunkContext*> pending_;  // chunks waiting to be posted, FIFO
  // Receives per (peer, tag) whose later chunks are not yet queued, in the
  // order their chunk 0 was posted (and so matched).
  std::map<std::pair<int, Tag>, std::deque<Operation*>> receive_queues_;
  std::uint64_t next_mr_key_ = 1;
  std::unique_ptr<char[]> scratch_;  // overflow chunks land here
  Fid<fid_mr> scratch_mr_;
  void* scratch_desc_ = nullptr;
  fi_context2 held_message_context_{};  // the one receive claim_held_messages() posts at a time
  bool held_message_claimed_ = false;   // its completion (or error) was read
};

}  // namespace murmur::fabric::libfabric
