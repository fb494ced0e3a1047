#include "sim/runtime/sim_communicator.h"

#include <cstring>
#include <memory>
#include <sstream>

#include "common/check.h"
#include "fabric/errors.h"

namespace murmur::sim::runtime {

// ---- SimNetwork -------------------------------------------------------------

SimNetwork::SimNetwork(VirtualRuntime& runtime, NetworkModel& model, double byte_scale)
    : runtime_(runtime),
      model_(model),
      byte_scale_(byte_scale),
      channels_(static_cast<std::size_t>(size())),
      in_flight_(static_cast<std::size_t>(size())),
      failed_(static_cast<std::size_t>(size())) {
  MURMUR_CHECK_GT(byte_scale, 0.0);
}

std::string SimNetwork::host(int rank) const {
  if (rank < 0 || rank >= size()) return "?";
  return "sim-node-" + std::to_string(model_.cluster().node_of(rank));
}

bool SimNetwork::failed(int rank, int peer) const { return failed_[rank].count(peer) != 0; }

std::exception_ptr SimNetwork::refused(int rank, int peer) const {
  return std::make_exception_ptr(
      fabric::PeerError(peer, host(peer), "declared failed earlier by rank " + std::to_string(rank)));
}

fabric::RequestPtr SimNetwork::isend(int src, int dst, fabric::Tag tag, const fabric::SendPieces& pieces) {
  MURMUR_CHECK(dst >= 0 && dst < size());
  auto request = std::make_shared<fabric::Request>(fabric::Request::Kind::kSend, dst, tag);
  if (failed(src, dst)) {
    request->fail(refused(src, dst));
    return request;
  }
  // A receipt (gossip/algorithm/receipt.h) is a fixed 24 bytes whatever
  // the proxy stands for: not scaled.
  const double simulated = static_cast<double>(pieces.bytes()) * (gossip::is_receipt_tag(tag) ? 1.0 : byte_scale_);
  const double tx_end = model_.depart(src, dst, simulated, runtime_.now());
  in_flight_[src][dst].push_back(request);
  std::vector<std::byte> copy;
  copy.reserve(pieces.bytes());
  for (const fabric::SendPiece& piece : pieces.pieces()) copy.insert(copy.end(), piece.begin(), piece.end());
  // The stages run at their own times (in time order across all senders):
  // a link episode's at tx_end, the receiver's queue once the message is
  // through it, then it lands.
  auto land = [this, src, dst, tag, copy = std::move(copy), request]() mutable {
    deliver(src, dst, tag, copy, request);
  };
  runtime_.at(tx_end, [this, src, dst, simulated, tx_end, land = std::move(land)]() mutable {
    const NetworkModel::Hop hop = model_.through_episode(src, dst, simulated, tx_end);
    runtime_.at(hop.ready_s, [this, src, dst, simulated, hop, land = std::move(land)]() mutable {
      runtime_.at(model_.arrive(src, dst, simulated, hop), std::move(land));
    });
  });
  return request;
}

void SimNetwork::deliver(int src, int dst, fabric::Tag tag, std::vector<std::byte>& data,
                         const fabric::RequestPtr& send) {
  auto& flight = in_flight_[src][dst];
  MURMUR_CHECK(!flight.empty() && flight.front() == send);  // FIFO queues: arrivals keep posting order
  flight.pop_front();
  const std::size_t bytes = data.size();

  // The receiver dropped this sender: nobody will take the message.
  if (!failed(dst, src)) {
    auto& inbox = channels_[dst];
    auto it = inbox.find({src, tag});
    if (it != inbox.end() && !it->second.receives.empty()) {
      PostedRecv recv = std::move(it->second.receives.front());
      it->second.receives.pop_front();
      if (it->second.receives.empty()) inbox.erase(it);
      fill(recv, src, tag, data);
    } else {
      inbox[{src, tag}].arrived.push_back(std::move(data));
    }
  }
  send->complete(bytes);  // ignored when the sender failed it meanwhile
}

void SimNetwork::fill(const PostedRecv& recv, int src, fabric::Tag tag, const std::vector<std::byte>& data) {
  if (data.size() > recv.buffer.size()) {
    recv.request->fail(std::make_exception_ptr(
        fabric::PeerError(src, host(src),
                          "message of " + std::to_string(data.size()) + " bytes with tag " + std::to_string(tag) +
                              " does not fit the receive buffer of " + std::to_string(recv.buffer.size()) +
                              " bytes; the message was dropped")));
    return;
  }
  if (!data.empty()) std::memcpy(recv.buffer.data(), data.data(), data.size());
  recv.request->complete(data.size());
}

fabric::RequestPtr SimNetwork::irecv(int dst, int src, fabric::Tag tag, std::span<std::byte> buffer) {
  MURMUR_CHECK(src >= 0 && src < size());
  auto request = std::make_shared<fabric::Request>(fabric::Request::Kind::kRecv, src, tag);
  if (failed(dst, src)) {
    request->fail(refused(dst, src));
    return request;
  }
  PostedRecv recv{request, buffer};
  auto& inbox = channels_[dst];
  auto it = inbox.find({src, tag});
  if (it != inbox.end() && !it->second.arrived.empty()) {
    std::vector<std::byte> data = std::move(it->second.arrived.front());
    it->second.arrived.pop_front();
    if (it->second.arrived.empty()) inbox.erase(it);
    fill(recv, src, tag, data);
  } else {
    inbox[{src, tag}].receives.push_back(std::move(recv));
  }
  return request;
}

void SimNetwork::fail_peer(int rank, int peer, std::exception_ptr error) {
  failed_[rank].insert(peer);
  // Receives of `rank` from `peer`, every tag; messages from it that wait
  // for a receive are dropped with them.
  std::vector<fabric::RequestPtr> doomed;
  auto& inbox = channels_[rank];
  for (auto it = inbox.begin(); it != inbox.end();) {
    if (it->first.first != peer) {
      ++it;
      continue;
    }
    for (auto& r : it->second.receives) doomed.push_back(r.request);
    it = inbox.erase(it);
  }
  // Sends still on the wire stay queued (they arrive in order); only their
  // requests fail now.
  if (auto it = in_flight_[rank].find(peer); it != in_flight_[rank].end())
    for (auto& r : it->second) doomed.push_back(r);
  for (auto& r : doomed) r->fail(error);
}

// ---- SimCommunicator ----------------------------------------------------------

SimCommunicator::SimCommunicator(SimNetwork& network, int rank) : network_(network), rank_(rank) {
  MURMUR_CHECK(rank >= 0 && rank < network.size());
}

fabric::RequestPtr SimCommunicator::isendv(int peer, fabric::Tag tag, fabric::SendPieces pieces) {
  return network_.isend(rank_, peer, tag, pieces);
}

fabric::RequestPtr SimCommunicator::irecv(int peer, fabric::Tag tag, std::span<std::byte> buffer) {
  return network_.irecv(rank_, peer, tag, buffer);
}

void SimCommunicator::wait_all(std::span<const fabric::RequestPtr> requests, double timeout_s) {
  VirtualRuntime& runtime = network_.runtime();
  struct Waiting {
    std::size_t pending = 0;
    bool timed_out = false;
  };
  auto waiting = std::make_shared<Waiting>();
  std::set<int> peers;
  for (const auto& r : requests) {
    if (r->test()) continue;
    ++waiting->pending;
    peers.insert(r->peer());
    r->on_done([waiting, rt = &runtime](fabric::Request&) {
      if (--waiting->pending == 0) rt->notify_all(waiting.get());
    });
  }
  if (waiting->pending > 0) {
    const auto timer = runtime.at(runtime.now() + timeout_s, [waiting, rt = &runtime] {
      waiting->timed_out = true;
      rt->notify_all(waiting.get());
    });
    struct CancelTimer {
      VirtualRuntime& rt;
      VirtualRuntime::EventId id;
      ~CancelTimer() { rt.cancel(id); }
    } cancel_timer{runtime, timer};
    std::ostringstream what;
    what << "wait_all of rank " << rank_ << " (" << waiting->pending << " of " << requests.size()
         << " requests pending; peers";
    for (int p : peers) what << ' ' << p;
    what << ")";
    try {
      while (waiting->pending > 0 && !waiting->timed_out) runtime.wait(waiting.get(), what.str());
    } catch (const SimCancelled&) {
      // Unwinding after another thread's failure: no receive may keep
      // writing into buffers that are about to be freed.
      for (const auto& r : requests)
        if (!r->test()) network_.fail_peer(rank_, r->peer(), std::current_exception());
      throw;
    }
  }
  if (waiting->pending > 0) {
    gossip::fail_stalled_peers(*this, requests, timeout_s,
                               [&](int peer, std::exception_ptr e) { network_.fail_peer(rank_, peer, std::move(e)); });
    MURMUR_CHECK_EQ(waiting->pending, std::size_t{0});
  }
  for (const auto& r : requests)
    if (auto error = r->error()) std::rethrow_exception(error);
}

std::thread SimCommunicator::start_thread(std::function<void()> body) {
  return network_.runtime().start_thread(
      "rank " + std::to_string(rank_) + " thread " + std::to_string(++threads_started_), std::move(body));
}

void SimCommunicator::join_thread(std::thread& thread) { network_.runtime().join(thread); }

void SimCommunicator::wait_local(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                                 const std::function<bool()>& ready) {
  // Safe to release the lock and block: only the baton holder runs, so no
  // notify can slip in between the check and the block.
  while (!ready()) {
    lock.unlock();
    network_.runtime().wait_handoff(&cv, "rank " + std::to_string(rank_) + ": a local hand-off (wait_local)");
    lock.lock();
  }
}

void SimCommunicator::notify_local(std::condition_variable& cv) { network_.runtime().notify_all(&cv); }

}  // namespace murmur::sim::runtime
