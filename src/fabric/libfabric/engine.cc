#include "fabric/libfabric/engine.h"

#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <sys/uio.h>

#include <algorithm>
#include <limits>
#include <string>

#include "common/check.h"
#include "common/log.h"
#include "fabric/errors.h"
#include "fabric/libfabric/fi_check.h"
#include "fabric/peer_list.h"

namespace murmur::fabric::libfabric {
namespace {

// Errors after which the link to the peer is gone: every request to it fails.
bool link_lost(int err) {
  switch (err) {
    case FI_ECONNREFUSED:
    case FI_ECONNRESET:
    case FI_ECONNABORTED:
    case FI_ENOTCONN:
    case FI_ESHUTDOWN:
    case FI_EHOSTDOWN:
    case FI_EHOSTUNREACH:
    case FI_ENETDOWN:
    case FI_ENETUNREACH:
    case FI_ETIMEDOUT:
    case FI_EIO:
    case FI_EREMOTEIO:
      return true;
    default:
      return false;
  }
}

std::size_t chunk_count(std::size_t total, std::size_t chunk) { return total == 0 ? 1 : (total + chunk - 1) / chunk; }

}  // namespace

Engine::Engine(Endpoint& endpoint, std::size_t chunk_bytes, std::function<void(int, std::exception_ptr)> on_peer_failed)
    : endpoint_(endpoint),
      chunk_bytes_(std::max<std::size_t>(1, std::min(chunk_bytes, endpoint.max_msg_size))),
      on_peer_failed_(std::move(on_peer_failed)) {
  // The total size travels as remote CQ data: with fewer than 8 bytes of it,
  // larger messages cannot be announced and are refused at isend.
  const std::size_t cq_data = endpoint_.cq_data_size;
  if (cq_data >= 8) {
    max_message_bytes_ = std::numeric_limits<std::size_t>::max();
  } else if (cq_data == 0) {
    max_message_bytes_ = chunk_bytes_;
  } else {
    max_message_bytes_ = (std::size_t{1} << (8 * cq_data)) - 1;
  }
}

Engine::~Engine() = default;

void Engine::set_peers(std::vector<PeerInfo> peers, std::vector<fi_addr_t> addresses) {
  peers_ = std::move(peers);
  addresses_ = std::move(addresses);
  failed_.assign(peers_.size(), nullptr);
  doorbells_.clear();
  doorbells_.resize(peers_.size());
  for (const PeerInfo& peer : peers_) open_doorbell(peer);
}

void Engine::open_doorbell(const PeerInfo& peer) {
  if (endpoint_.shm_region.empty() || peer.rank < 0) return;  // not shm, or an absent rank
  if (static_cast<std::size_t>(peer.rank) >= doorbells_.size()) doorbells_.resize(peer.rank + 1);
  // Not this endpoint's own: its progress thread rings it through wake().
  const auto region = Doorbell::region_in(peer.address);
  if (!region || *region == endpoint_.shm_region) return;
  doorbells_[peer.rank] = Doorbell::open(*region);
  if (!doorbells_[peer.rank]) {
    fabric_log().debug("libfabric shm: rank {} ({}) has no doorbell; it finds messages by polling", peer.rank,
                       peer.host);
  }
}

bool Engine::has_doorbell(int peer) const {
  return peer >= 0 && static_cast<std::size_t>(peer) < doorbells_.size() && doorbells_[peer];
}

void Engine::ring(int peer) {
  if (has_doorbell(peer)) doorbells_[peer]->ring();
}

bool Engine::only_rings_bring_work() const {
  // Without single-copy transfers a receive moves by segments, each
  // needing this side's progress, and a busy or spinning sender rings
  // only between its sleeps: poll as before.
  if (endpoint_.shm_region.empty() || !endpoint_.shm_single_copy || !pending_.empty()) return false;
  for (const auto& op : ops_) {
    if (op->is_send() || op->error || !has_doorbell(op->peer)) return false;
  }
  return true;
}

void Engine::ring_receivers_of_sends() {
  rung_.assign(doorbells_.size(), false);
  for (const auto& op : ops_) {
    if (!op->is_send() || op->error || !has_doorbell(op->peer) || rung_[op->peer]) continue;
    rung_[op->peer] = true;
    ring(op->peer);
  }
}

void Engine::add_peer(const PeerInfo& peer) {
  fi_addr_t address = FI_ADDR_NOTAVAIL;
  const int ret = fi_av_insert(endpoint_.av.get(), peer.address.data(), 1, &address, 0, nullptr);
  if (ret != 1) {
    throw PeerError(peer.rank, peer.host, fi_error_text("fi_av_insert", ret < 0 ? ret : -FI_EADDRNOTAVAIL));
  }
  const auto size = static_cast<std::size_t>(peer.rank) + 1;
  for (std::size_t r = peers_.size(); r + 1 < size; ++r) {
    peers_.push_back(PeerInfo{});
    addresses_.push_back(FI_ADDR_NOTAVAIL);
    failed_.push_back(absent_peer_error(static_cast<int>(r), "", skipped_rank_reason(peer.rank)));
  }
  peers_.push_back(peer);
  addresses_.push_back(address);
  failed_.push_back(nullptr);
  open_doorbell(peer);
  MURMUR_CHECK_EQ(peers_.size(), size);
  fabric_log().debug("libfabric: rank {} ({}) inserted at fi_addr {}", peer.rank, peer.host, address);
}

std::exception_ptr Engine::peer_error(int peer, const std::string& reason) const {
  const std::string host = peer >= 0 && static_cast<std::size_t>(peer) < peers_.size() ? peers_[peer].host : "?";
  return std::make_exception_ptr(PeerError(peer, host, reason));
}

Fid<fid_mr> Engine::register_region(const void* data, std::size_t bytes, std::uint64_t access, void** desc) {
  fid_mr* mr = nullptr;
  fi_check(fi_mr_reg(endpoint_.domain.get(), data, bytes, access, 0, endpoint_.mr_prov_key ? 0 : next_mr_key_++, 0, &mr,
                     nullptr),
           "fi_mr_reg");
  Fid<fid_mr> owned(mr, "mr");
  if (endpoint_.mr_endpoint) {
    fi_check(fi_mr_bind(mr, &endpoint_.ep->fid, 0), "fi_mr_bind");
    fi_check(fi_mr_enable(mr), "fi_mr_enable");
  }
  *desc = fi_mr_desc(mr);
  return owned;
}

char* Engine::scratch() {
  if (!scratch_) {
    scratch_ = std::make_unique<char[]>(chunk_bytes_);
    if (endpoint_.register_memory) scratch_mr_ = register_region(scratch_.get(), chunk_bytes_, FI_RECV, &scratch_desc_);
  }
  return scratch_.get();
}

void Engine::register_buffer(Operation& op) {
  if (!endpoint_.register_memory || op.capacity == 0) return;
  // TODO(perf): a small registration cache keyed by (address, length).
  if (!op.is_send()) {
    if (!op.mr) op.mr = register_region(op.data, op.capacity, FI_RECV, &op.desc);
    return;
  }
  if (!op.piece_mrs.empty()) return;
  const auto pieces = op.pieces.pieces();
  op.piece_descs.assign(pieces.size(), nullptr);
  for (std::size_t i = 0; i < pieces.size(); ++i)
    op.piece_mrs.push_back(register_region(pieces[i].data(), pieces[i].size(), FI_SEND, &op.piece_descs[i]));
}

void Engine::submit(std::unique_ptr<Operation> owned) {
  Operation& op = *owned;
  ops_.push_back(std::move(owned));
  op.self = std::prev(ops_.end());
  if (broken_) return fail_op(op, broken_, true);
  if (failed_[op.peer]) return fail_op(op, failed_[op.peer], true);
  try {
    register_buffer(op);
  } catch (...) {
    return fail_op(op, std::current_exception());
  }
  if (op.is_send()) {
    op.total = op.capacity;
    op.chunks = chunk_count(op.total, chunk_bytes_);
    op.contexts.resize(op.chunks);
    enqueue_chunks(op, 0);
    return;
  }
  op.contexts.resize(1);
  receive_queues_[{op.peer, op.tag}].push_back(&op);
  enqueue_chunks(op, 0);
}

void Engine::enqueue_chunks(Operation& op, std::size_t from) {
  for (std::size_t i = from; i < op.contexts.size(); ++i) {
    ChunkContext& ctx = op.contexts[i];
    ctx.op = &op;
    ctx.index = i;
    pending_.push_back(&ctx);
  }
}

bool Engine::post(ChunkContext& ctx) {
  Operation& op = *ctx.op;
  fid_ep* ep = endpoint_.ep.get();
  const fi_addr_t addr = addresses_[op.peer];
  const std::size_t offset = ctx.index * chunk_bytes_;
  const Tag tag = ctx.index == 0 ? op.tag : op.tag | kBackendTagBit;
  ssize_t ret;
  const char* call;
  if (op.is_send()) {
    const std::size_t len = std::min(chunk_bytes_, op.total - std::min(op.total, offset));
    ret = send_chunk(ctx, offset, len, addr, tag, &call);
    return posted(ctx, call, ret);
  } else {
    call = "fi_trecv";
    std::size_t len;
    char* buf;
    void* desc = op.desc;
    if (ctx.index == 0 && op.capacity < chunk_bytes_ && endpoint_.rx_iov_limit >= 2) {
      // Chunk 0 may be a full chunk even when the caller expects less: a
      // scratch tail completes the buffer to chunk_bytes, so the provider
      // never truncates (tcp;ofi_rxm drops the connection on truncation, shm
      // reports it without the size) and the total always arrives as CQ
      // data. Only a message too large for the buffer lands in the tail.
      iovec iov[2];
      void* descs[2] = {op.desc, nullptr};
      std::size_t count = 0;
      if (op.capacity > 0) iov[count++] = iovec{op.data, op.capacity};
      char* tail = scratch();
      descs[count] = scratch_desc_;
      iov[count++] = iovec{tail, chunk_bytes_ - op.capacity};
      ret = fi_trecvv(ep, iov, descs, count, addr, op.tag, 0, &ctx.context);
      call = "fi_trecvv";
      return posted(ctx, call, ret);
    }
    if (ctx.index == 0) {
      len = std::min(op.capacity, chunk_bytes_);
      buf = len == 0 ? nullptr : op.data;
    } else if (op.overflow) {
      len = std::min(chunk_bytes_, op.total - offset);
      buf = scratch();
      desc = scratch_desc_;
    } else {
      len = std::min(chunk_bytes_, op.total - offset);
      buf = op.data + offset;
    }
    ret = fi_trecv(ep, buf, len, desc, addr, tag, 0, &ctx.context);
  }
  return posted(ctx, call, ret);
}

ssize_t Engine::send_chunk(ChunkContext& ctx, std::size_t offset, std::size_t len, fi_addr_t addr, Tag tag,
                           const char** call) {
  Operation& op = *ctx.op;
  fid_ep* ep = endpoint_.ep.get();
  const bool with_size = ctx.index == 0 && endpoint_.cq_data_size > 0;
  const std::size_t count = op.pieces.count_in(offset, len);
  const std::size_t iov_limit = std::min(kMaxSendIov, endpoint_.tx_iov_limit);
  const auto desc_of = [&](std::size_t piece) { return op.piece_descs.empty() ? nullptr : op.piece_descs[piece]; };
  if (count >= 2 && count <= iov_limit) {
    iovec iov[kMaxSendIov];
    void* descs[kMaxSendIov];
    std::size_t n = 0;
    op.pieces.visit(offset, len, [&](std::size_t piece, const std::byte* data, std::size_t bytes) {
      iov[n] = iovec{const_cast<std::byte*>(data), bytes};
      descs[n++] = desc_of(piece);
    });
    fi_msg_tagged msg{};
    msg.msg_iov = iov;
    msg.desc = descs;
    msg.iov_count = n;
    msg.addr = addr;
    msg.tag = tag;
    msg.context = &ctx.context;
    msg.data = op.total;
    *call = "fi_tsendmsg";
    return fi_tsendmsg(ep, &msg, with_size ? FI_REMOTE_CQ_DATA : 0);
  }
  const char* buf = nullptr;
  void* desc = nullptr;
  if (count == 1) {
    op.pieces.visit(offset, len, [&](std::size_t piece, const std::byte* data, std::size_t) {
      buf = reinterpret_cast<const char*>(data);
      desc = desc_of(piece);
    });
  } else if (count > 1) {
    // More pieces than the provider takes: one copy of this chunk, kept
    // until its completion (a retry after -FI_EAGAIN reuses it). The
    // pieces' own registrations go unused for this chunk.
    if (!ctx.bounce) {
      ctx.bounce = std::make_unique<char[]>(len);
      op.pieces.copy_to(offset, len, ctx.bounce.get());
      if (endpoint_.register_memory) ctx.bounce_mr = register_region(ctx.bounce.get(), len, FI_SEND, &ctx.bounce_desc);
    }
    buf = ctx.bounce.get();
    desc = ctx.bounce_desc;
  }
  if (with_size) {
    *call = "fi_tsenddata";
    return fi_tsenddata(ep, buf, len, desc, op.total, addr, tag, &ctx.context);
  }
  *call = "fi_tsend";
  return fi_tsend(ep, buf, len, desc, addr, tag, &ctx.context);
}

void Engine::release_bounce(ChunkContext& ctx) {
  // The provider has handed the chunk back: its copy is not needed again
  // (the registration goes first, then the memory it covers).
  ctx.bounce_mr.reset();
  ctx.bounce_desc = nullptr;
  ctx.bounce.reset();
}

bool Engine::posted(ChunkContext& ctx, const char* call, ssize_t ret) {
  Operation& op = *ctx.op;
  fabric_log().trace("libfabric: {} chunk {} peer {} tag {} -> {}", call, ctx.index, op.peer, op.tag, ret);
  if (ret == -FI_EAGAIN) return false;
  if (ret != 0) {
    fail_op(op, peer_error(op.peer, fi_error_text(call, ret)));
    return true;
  }
  ctx.posted = true;
  ctx.call = call;
  ++op.in_flight;
  if (op.is_send()) ring(op.peer);
  return true;
}

bool Engine::post_pending() {
  bool any = false;
  while (!pending_.empty()) {
    // Taken off the FIFO before posting: a post that fails the operation
    // (fail_op drops its chunks from pending_ and may retire it) must not
    // leave this chunk at the front, nor make us pop another one.
    ChunkContext* ctx = pending_.front();
    pending_.pop_front();
    if (ctx->op->error) continue;  // failed while waiting: never posted
    bool accepted = true;
    try {
      accepted = post(*ctx);
    } catch (...) {
      fail_op(*ctx->op, std::current_exception());
    }
    if (!accepted) {  // -FI_EAGAIN: back to the front; read the CQ, retry next round
      pending_.push_front(ctx);
      break;
    }
    any = true;
  }
  return any;
}

bool Engine::progress() {
  bool any = post_pending();
  any = read_cq() || any;
  // Completions may have freed queue slots or enqueued chunks.
  if (any && !pending_.empty()) post_pending();
  return any;
}

bool Engine::read_cq() {
  constexpr int kBatch = 32;
  fi_cq_tagged_entry entries[kBatch];
  bool any = false;
  for (;;) {
    const ssize_t n = fi_cq_read(endpoint_.cq.get(), entries, kBatch);
    if (n == -FI_EAGAIN) return any;
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      const ssize_t r = fi_cq_readerr(endpoint_.cq.get(), &err, 0);
      if (r == -FI_EAGAIN) return any;
      if (r < 0) {
        fail_everything(std::make_exception_ptr(FabricError(fi_error_text("fi_cq_readerr", r))));
        return true;
      }
      on_error(err);
      any = true;
      continue;
    }
    if (n < 0) {
      fail_everything(std::make_exception_ptr(FabricError(fi_error_text("fi_cq_read", n))));
      return true;
    }
    for (ssize_t i = 0; i < n; ++i) {
      if (is_held_message_claim(entries[i].op_context)) continue;
      on_completion(*static_cast<ChunkContext*>(entries[i].op_context), entries[i].len, entries[i].flags,
                    entries[i].data);
    }
    any = true;
    if (n < kBatch) return any;
  }
}

void Engine::on_completion(ChunkContext& ctx, std::size_t len, std::uint64_t flags, std::uint64_t data) {
  Operation& op = *ctx.op;
  fabric_log().trace("libfabric: completed {} chunk {} peer {} tag {} len {} flags {:#x} data {}",
                     op.is_send() ? "send" : "receive", ctx.index, op.peer, op.tag, len, flags, data);
  ctx.posted = false;
  release_bounce(ctx);
  --op.in_flight;
  ++op.completed;
  // The sender's progress thread learns that its send completed.
  if (!op.is_send()) ring(op.peer);
  if (op.error) return maybe_retire(op);
  if (!op.is_send() && ctx.index == 0) {
    on_first_chunk(op, (flags & FI_REMOTE_CQ_DATA) ? data : len);
    return;
  }
  maybe_retire(op);
}

void Engine::on_first_chunk(Operation& op, std::size_t total) {
  fabric_log().trace("libfabric: first chunk peer {} tag {}: total {}", op.peer, op.tag, total);
  op.total = total;
  op.overflow = total > op.capacity;
  op.chunks = chunk_count(total, chunk_bytes_);
  // Chunk 0 is complete, so no context is in flight and resizing is safe.
  MURMUR_CHECK_EQ(op.in_flight, std::size_t{0});
  op.contexts.resize(op.chunks);
  op.size_known = true;
  post_continuations_in_order(op.peer, op.tag);
  maybe_retire(op);
}

void Engine::post_continuations_in_order(int peer, Tag tag) {
  auto it = receive_queues_.find({peer, tag});
  if (it == receive_queues_.end()) return;
  auto& queue = it->second;
  // A one-chunk message has nothing to order: it leaves the queue at once
  // (and may retire), wherever it stands.
  std::erase_if(queue, [](const Operation* op) { return op->size_known && op->chunks == 1; });
  while (!queue.empty() && queue.front()->size_known) {
    enqueue_chunks(*queue.front(), 1);
    queue.pop_front();
  }
  fabric_log().trace("libfabric: peer {} tag {}: {} receive(s) wait for their size", peer, tag, queue.size());
  if (queue.empty()) receive_queues_.erase(it);
}

void Engine::on_error(const fi_cq_err_entry& entry) {
  if (is_held_message_claim(entry.op_context)) return;
  auto& ctx = *static_cast<ChunkContext*>(entry.op_context);
  Operation& op = *ctx.op;
  ctx.posted = false;
  release_bounce(ctx);
  --op.in_flight;
  ++op.completed;
  fabric_log().debug(
      "libfabric: CQ error on {} chunk {} of peer {} tag {}: {} ({}) (len {} olen {} flags {:#x} data {})",
      op.is_send() ? "send" : "receive", ctx.index, op.peer, op.tag,
      fi_strerror(entry.err < 0 ? -entry.err : entry.err), entry.err, entry.len, entry.olen, entry.flags, entry.data);
  // shm in libfabric 1.17 reports some errors negated (-FI_ETRUNC).
  const int err = entry.err < 0 ? -entry.err : entry.err;
  if (op.error) return maybe_retire(op);  // our own fi_cancel of a failed operation, or a late chunk of one
  if (err == FI_ECANCELED) {
    // This engine cancels only operations it failed first (fail_op), so a
    // cancellation of a live one comes from the provider: tcp;ofi_rxm
    // cancels the receives posted for a peer whose connection it tore down
    // (a SIGKILLed sender). Retired as if done, such a receive "completed"
    // with 0 bytes (chunks is 1 until chunk 0 arrives), and dpsgd and sgp
    // failed their round on a size mismatch ("rank 3 sent 0 bytes")
    // instead of excusing the dead link (chaos kill runs).
    return lose_link(op, peer_error(op.peer, std::string(op.is_send() ? "send" : "receive") +
                                                 " cancelled by the provider: the link to this peer was closed"));
  }
  if (!op.is_send() && ctx.index == 0 && (err == FI_ETRUNC || err == FI_ETOOSMALL)) {
    // Chunk 0 did not fit (only when the rx iov limit is 1, or the sender
    // uses larger chunks): learn the size where the provider tells it
    // (tcp;ofi_rxm fills data without the flag, shm leaves it 0), drain the
    // rest into scratch space and fail once the message is consumed.
    std::size_t total = entry.data != 0 ? entry.data : entry.len + entry.olen;
    on_first_chunk(op, std::max<std::size_t>(total, op.capacity + 1));
    return;
  }
  char text[256] = {};
  const char* what = fi_cq_strerror(endpoint_.cq.get(), entry.prov_errno, entry.err_data, text, sizeof(text));
  const std::string call = ctx.call;
  auto error = peer_error(op.peer, call + ": " + (what ? what : fi_strerror(err)) + " (" + fi_strerror(err) + ")");
  if (link_lost(err)) return lose_link(op, error);
  fail_op(op, error);
}

void Engine::lose_link(Operation& op, std::exception_ptr error) {
  const int peer = op.peer;
  // A peer failed before has failed its operations; one that slipped past
  // (a late completion) fails with the peer's first error.
  if (failed_[static_cast<std::size_t>(peer)]) return fail_op(op, failed_[static_cast<std::size_t>(peer)], true);
  // fail_peer retires `op` (its last chunk just came back): not a field of
  // it may be read afterwards.
  fail_peer(peer, error);
  on_peer_failed_(peer, std::move(error));
}

void Engine::maybe_retire(Operation& op) {
  const bool all_done = op.completed == op.chunks && op.in_flight == 0;
  if (op.error) {
    // A failed receive is reported only when libfabric holds none of its
    // chunks any more, so the buffer is never written after the failure.
    if (op.in_flight != 0) return;
    if (!op.reported) {
      op.reported = true;
      op.request->fail(op.error);
    }
  } else {
    if (!all_done) return;
    op.reported = true;
    if (op.overflow) {
      op.request->fail(peer_error(
          op.peer, "message of " + std::to_string(op.total) + " bytes does not fit the receive buffer of " +
                       std::to_string(op.capacity) + " bytes (tag " + std::to_string(op.tag) + "); it was dropped"));
    } else {
      op.request->complete(op.total);
    }
  }
  // Completed: no chunk of it is queued or in flight any more.
  ops_.erase(op.self);
}

void Engine::fail_op(Operation& op, std::exception_ptr error, bool peer_gone) {
  if (op.error) return;
  op.error = std::move(error);
  // Unposted chunks are dropped by post_pending (it skips failed ops); drop
  // them now so that nothing refers to the operation once it is retired.
  std::erase_if(pending_, [&](ChunkContext* ctx) { return ctx->op == &op; });
  if (!op.is_send()) {
    auto it = receive_queues_.find({op.peer, op.tag});
    if (it != receive_queues_.end()) {
      auto& queue = it->second;
      // Still queued: its later chunks were not queued (no chunk but 0 is
      // posted; cancelled below). Those behind it no longer wait for it.
      if (std::erase(queue, &op) != 0) {
        if (queue.empty()) {
          receive_queues_.erase(it);
        } else {
          post_continuations_in_order(op.peer, op.tag);
        }
      }
    }
    for (auto& ctx : op.contexts) {
      if (!ctx.posted) continue;
      const ssize_t ret = fi_cancel(&endpoint_.ep->fid, &ctx.context);
      if (ret != 0) fabric_log().debug("fi_cancel: {}", fi_error_text("fi_cancel", ret));
    }
    // When the peer is gone the failure is reported now rather than when the
    // cancelled chunks come back: a receive that rxm or shm had already
    // matched cannot be cancelled, fi_cancel still answers 0 for it, and from
    // a dead peer its completion never comes. The record stays until
    // libfabric hands every chunk back or the transport closes (the buffer
    // rule in transport.h). A live peer's chunks do come back, and
    // maybe_retire reports the failure then.
    if (peer_gone && !op.reported) {
      op.reported = true;
      op.request->fail(op.error);
    }
  } else if (!op.reported) {
    // A send cannot be recalled either: report the failure now, and keep the
    // record until libfabric hands back the chunks it holds.
    op.reported = true;
    op.request->fail(op.error);
  }
  maybe_retire(op);
}

void Engine::fail_peer(int peer, std::exception_ptr error) {
  if (peer < 0 || static_cast<std::size_t>(peer) >= failed_.size() || failed_[peer]) return;
  failed_[peer] = error;
  std::vector<Operation*> victims;
  for (auto& op : ops_) {
    if (op->peer == peer && !op->error) victims.push_back(op.get());
  }
  // A peer that left cleanly has nothing pending: not worth a warning.
  if (victims.empty()) {
    fabric_log().debug("libfabric: peer {} failed or left with no request pending", peer);
  } else {
    fabric_log().warn("libfabric: failing {} pending request(s) to peer {}", victims.size(), peer);
  }
  // Later receives of a queue first, so that failing a head does not queue
  // the later chunks of the ones behind it.
  std::reverse(victims.begin(), victims.end());
  for (Operation* op : victims) fail_op(*op, error, /*peer_gone=*/true);
}

void Engine::fail_everything(std::exception_ptr error) {
  if (!broken_) broken_ = error;
  fabric_log().error("libfabric: completion queue failed; failing every request");
  std::vector<Operation*> victims;
  for (auto& op : ops_) victims.push_back(op.get());
  std::reverse(victims.begin(), victims.end());
  for (Operation* op : victims) fail_op(*op, error, /*peer_gone=*/true);
}

void Engine::close() {
  // Closing the endpoint first: libfabric then holds no buffer of ours, and
  // every request can be failed at once.
  claim_held_messages();
  endpoint_.ep.reset();
  pending_.clear();
  receive_queues_.clear();
  for (auto& op : ops_) {
    if (op->reported) continue;
    op->reported = true;
    op->request->fail(peer_error(op->peer, "transport closed"));
  }
  ops_.clear();
  scratch_mr_.reset();
}

}  // namespace murmur::fabric::libfabric
