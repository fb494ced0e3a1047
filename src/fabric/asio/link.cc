#include "fabric/asio/link.h"

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <new>

#include <sys/socket.h>
#include <sys/uio.h>

#include "common/log.h"
#include "fabric/errors.h"

namespace murmur::fabric::asio {

namespace net = boost::asio;

namespace {

// async_write's completion condition: the whole rest of the frame in every
// write. asio's transfer_all() caps each write at 64 KiB
// (default_max_transfer_size), so a 4 MiB frame took 64 sendmsg calls,
// each completion queued through the io_context before the next; the
// kernel takes as much of one writev as the socket's buffer holds.
std::size_t whole_frame(const boost::system::error_code& ec, std::size_t /*written*/) {
  return ec ? 0 : std::numeric_limits<std::size_t>::max();
}

}  // namespace

bool Link::stays_on_this_host(const net::ip::address& local, const net::ip::address& remote) {
  const auto unmapped = [](const net::ip::address& address) {
    if (address.is_v6() && address.to_v6().is_v4_mapped())
      return net::ip::address(net::ip::make_address_v4(net::ip::v4_mapped, address.to_v6()));
    return address;
  };
  const auto ours = unmapped(local);
  const auto theirs = unmapped(remote);
  return ours.is_loopback() || theirs.is_loopback() || ours == theirs;
}

bool Link::wants_payload_checksum(const net::ip::tcp::socket& socket, TransportOptions::PayloadChecksum option) {
  if (option == TransportOptions::PayloadChecksum::kAlways) return true;
  boost::system::error_code local_error, remote_error;
  const auto local = socket.local_endpoint(local_error);
  const auto remote = socket.remote_endpoint(remote_error);
  // Addresses unknown (a socket already closed): checked.
  if (local_error || remote_error) return true;
  return !stays_on_this_host(local.address(), remote.address());
}

Link::Link(int rank, std::size_t chunk_bytes, std::size_t max_unexpected_bytes, bool local,
           TransportOptions::PayloadChecksum payload_checksum)
    : rank_(rank),
      chunk_bytes_(chunk_bytes),
      max_unexpected_bytes_(max_unexpected_bytes),
      local_(local),
      payload_checksum_(payload_checksum) {}

Link::HeldBuffer::HeldBuffer(std::size_t bytes, std::size_t* held_total)
    : data_(std::make_unique_for_overwrite<unsigned char[]>(std::max<std::size_t>(bytes, 1))),
      bytes_(bytes),
      held_total_(held_total) {
  if (held_total_) *held_total_ += bytes_;
}

Link::HeldBuffer& Link::HeldBuffer::operator=(HeldBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::move(other.data_);
    bytes_ = other.bytes_;
    held_total_ = other.held_total_;
    other.held_total_ = nullptr;
  }
  return *this;
}

void Link::HeldBuffer::reset() {
  if (held_total_ && data_) *held_total_ -= bytes_;
  data_.reset();
  held_total_ = nullptr;
}

std::exception_ptr Link::peer_error(const std::string& reason) const {
  return std::make_exception_ptr(PeerError(rank_, host_, reason));
}

void Link::attach(std::unique_ptr<net::ip::tcp::socket> socket, bool peer_wants_payload_checksum) {
  if (error_) {
    boost::system::error_code ignored;
    socket->close(ignored);
    return;
  }
  socket_ = std::move(socket);
  {
    std::lock_guard<std::mutex> lock(send_mutex_);
    checksum_payloads_ = peer_wants_payload_checksum || wants_payload_checksum(*socket_, payload_checksum_);
    send_fd_ = socket_->native_handle();
  }
  fabric_log().debug("asio link to rank {} ({}): payload checksums {}", rank_, host_,
                     checksum_payloads_ ? "on" : "off (the connection stays on this host, and neither side asks)");
  start_read_header();
  start_write();
}

// ---- sending ---------------------------------------------------------------

namespace {

// `checked`: with the payload's checksum (else flag kFramePayloadUnchecked).
wire::FrameBytes frame_header(Tag tag, const SendPieces& pieces, std::size_t offset, std::size_t chunk, bool checked) {
  wire::FrameHeader header;
  header.tag = tag;
  header.total = pieces.bytes();
  header.offset = offset;
  header.chunk = chunk;
  header.payload_checked = checked;
  if (checked) header.payload_hash = wire::checksum_payload(pieces, offset, chunk);
  return wire::encode_frame(header);
}

// The most iovecs of a caller's write: the frame's header and up to 15
// pieces; a message of more pieces goes through the io thread.
constexpr std::size_t kMaxCallerIov = 16;

}  // namespace

Link::CallerSend Link::send_from_caller(const RequestPtr& request, const SendPieces& pieces) {
  const std::size_t bytes = pieces.bytes();
  std::unique_lock<std::mutex> lock(send_mutex_);
  if (local_ || send_fd_ < 0 || writing_ || !sends_.empty() || queued_sends_ > 0 || bytes > chunk_bytes_ ||
      pieces.count() + 1 > kMaxCallerIov) {
    ++queued_sends_;
    return CallerSend::kQueued;
  }
  const wire::FrameBytes header = frame_header(request->tag(), pieces, 0, bytes, checksum_payloads_);
  iovec parts[kMaxCallerIov];
  std::size_t count = 0;
  parts[count++] = {const_cast<unsigned char*>(header.data()), header.size()};
  pieces.visit(0, bytes, [&](std::size_t, const std::byte* data, std::size_t length) {
    parts[count++] = {const_cast<std::byte*>(data), length};
  });
  msghdr message{};
  message.msg_iov = parts;
  message.msg_iovlen = count;
  const ssize_t written = ::sendmsg(send_fd_, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (written == static_cast<ssize_t>(header.size() + bytes)) {
    lock.unlock();
    request->complete(bytes);  // no callback yet: the caller has not had the request
    return CallerSend::kSent;
  }
  if (written <= 0) {
    // Nothing written (a full socket buffer, or an error the io thread's
    // own write will report): the io thread sends it all.
    ++queued_sends_;
    return CallerSend::kQueued;
  }
  // Part of the frame is on the wire: no other frame may go before its
  // rest, which the io thread writes next.
  send_header_ = header;
  sends_.push_back(SendOp{request, pieces, 0, static_cast<std::size_t>(written)});
  return CallerSend::kRestLeft;
}

void Link::post_send(RequestPtr request, SendPieces pieces) {
  bool queued = false;
  {
    std::lock_guard<std::mutex> lock(send_mutex_);
    --queued_sends_;
    // In the same hold as the count: a caller must not slip in between.
    if (!error_ && !local_) {
      sends_.push_back(SendOp{std::move(request), std::move(pieces)});
      queued = true;
    }
  }
  if (queued) return start_write();
  if (error_) return request->fail(error_);
  // Loop back in memory: the message is complete as soon as it is copied.
  const std::size_t bytes = pieces.bytes();
  HeldBuffer copy(bytes, nullptr);  // our own bytes: not counted
  pieces.copy_to(0, bytes, copy.get());
  with_recv_lock([&] { deliver_unexpected(request->tag(), std::move(copy), bytes); });
  request->complete(bytes);
}

void Link::start_write() {
  std::lock_guard<std::mutex> lock(send_mutex_);
  if (writing_ || error_ || !socket_ || sends_.empty()) return;
  SendOp& op = sends_.front();
  const std::size_t chunk = std::min(op.pieces.bytes() - op.offset, chunk_bytes_);
  if (op.frame_sent == 0)
    send_header_ = frame_header(op.request->tag(), op.pieces, op.offset, chunk, checksum_payloads_);
  writing_ = true;
  // A frame a caller began goes on where it stopped (its header is in
  // send_header_ already).
  write_buffers_.clear();
  write_buffers_.push_back(net::buffer(send_header_));
  op.pieces.visit(op.offset, chunk, [&](std::size_t, const std::byte* data, std::size_t length) {
    write_buffers_.push_back(net::buffer(data, length));
  });
  std::size_t skip = op.frame_sent;
  for (auto& buffer : write_buffers_) {
    const std::size_t n = std::min(skip, buffer.size());
    buffer += n;
    skip -= n;
  }
  // A view of the member: no copy of the list per frame.
  net::async_write(*socket_, std::span<const net::const_buffer>(write_buffers_), whole_frame,
                   [this, chunk](const boost::system::error_code& ec, std::size_t) { on_write(ec, chunk); });
}

void Link::on_write(const boost::system::error_code& ec, std::size_t chunk) {
  RequestPtr done;
  std::size_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(send_mutex_);
    writing_ = false;
    if (error_ || ec) {
      // fail() below (or before) takes the queue.
    } else {
      SendOp& op = sends_.front();
      op.offset += chunk;
      op.frame_sent = 0;
      if (op.offset == op.pieces.bytes()) {
        done = std::move(op.request);
        bytes = op.pieces.bytes();
        sends_.pop_front();
      }
    }
  }
  if (error_) return;
  if (ec) return fail_link("connection closed: " + ec.message());
  if (done) done->complete(bytes);
  start_write();
}

// ---- receiving -------------------------------------------------------------

void Link::Completion::run() {
  if (!request) return;
  if (error) return request->fail(error);
  request->complete(bytes);
}

template <class Work>
void Link::with_recv_lock(Work&& work) {
  std::vector<Completion> done;
  {
    std::lock_guard<std::mutex> lock(recv_mutex_);
    work();
    done.swap(finished_);
  }
  for (auto& completion : done) completion.run();
}

void Link::post_recv(RequestPtr request, void* data, std::size_t capacity) {
  with_recv_lock([&] { post_recv_locked(std::move(request), static_cast<unsigned char*>(data), capacity); });
}

void Link::post_recv_locked(RequestPtr request, unsigned char* data, std::size_t capacity) {
  if (error_) return finished_.push_back({std::move(request), 0, error_});
  const Tag tag = request->tag();
  // Oldest first: completed unexpected messages, then the one arriving now.
  if (auto it = unexpected_.find(tag); it != unexpected_.end() && !it->second.empty()) {
    // Copied and freed under the lock: the held bytes' count is the io
    // thread's too.
    Unexpected message = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) unexpected_.erase(it);
    if (message.bytes > capacity) return fail_size(std::move(request), message.bytes, capacity, tag);
    if (message.bytes > 0) std::memcpy(data, message.data.get(), message.bytes);
    return finished_.push_back({std::move(request), message.bytes, nullptr});
  }
  PostedRecv recv{std::move(request), data, capacity};
  // Only a receive with none older of its tag may take the message arriving
  // now. (Never leave an empty queue in posted_: lookups assume non-empty.)
  const auto it = posted_.find(tag);
  if (it == posted_.end() && claim_incoming(recv)) return;
  posted_[tag].push_back(std::move(recv));
}

bool Link::claim_incoming(PostedRecv& recv) {
  if (!have_incoming_ || incoming_.tag != recv.request->tag() || incoming_.request || incoming_.discard) {
    return false;
  }
  if (incoming_.total > recv.capacity) {
    incoming_.discard = true;  // temp stays alive: a read may be landing in it
    fail_size(std::move(recv.request), incoming_.total, recv.capacity, incoming_.tag);
    return true;
  }
  // Move what has arrived so far into the user's buffer and land the rest
  // there directly. temp stays alive until the chunk now landing in it is
  // copied (on_payload); that chunk lies past next_offset, so the io
  // thread's read and this copy never touch the same bytes.
  if (incoming_.next_offset > 0) std::memcpy(recv.data, incoming_.temp.get(), incoming_.next_offset);
  incoming_.target = recv.data;
  incoming_.request = std::move(recv.request);
  return true;
}

void Link::start_read_header() {
  net::async_read(*socket_, net::buffer(recv_header_),
                  [this](const boost::system::error_code& ec, std::size_t) { on_header(ec); });
}

void Link::on_header(const boost::system::error_code& ec) {
  if (error_) return;
  if (ec) return fail_link("connection closed: " + ec.message());
  std::string why;
  const auto header = wire::decode_frame(recv_header_, &why);
  if (!header) return fail_link("bad message: " + why);
  if (!header->payload_checked && checksum_payloads_) {
    return fail_link("bad message: a frame without a payload checksum (tag " + std::to_string(header->tag) +
                     ") on a link that checks payloads (its bytes leave this host, or one side's "
                     "MURMUR_ASIO_PAYLOAD_CHECKSUM is always)");
  }
  with_recv_lock([&] {
    if (!have_incoming_) {
      if (header->offset != 0) {
        return fail_link_locked("bad message: first frame of tag " + std::to_string(header->tag) +
                                " starts at offset " + std::to_string(header->offset));
      }
      if (!begin_incoming(header->tag, header->total)) return;
    } else if (header->tag != incoming_.tag || header->total != incoming_.total ||
               header->offset != incoming_.next_offset) {
      return fail_link_locked("bad message: frame (tag " + std::to_string(header->tag) + ", offset " +
                              std::to_string(header->offset) + " of " + std::to_string(header->total) +
                              ") does not continue the message in progress (tag " + std::to_string(incoming_.tag) +
                              ", offset " + std::to_string(incoming_.next_offset) + " of " +
                              std::to_string(incoming_.total) + ")");
    }
    if (header->chunk == 0) return finish_incoming();  // a 0-byte message
    start_read_payload(header->chunk,
                       header->payload_checked ? std::optional<std::uint64_t>(header->payload_hash) : std::nullopt);
  });
}

bool Link::begin_incoming(Tag tag, std::uint64_t total) {
  incoming_ = Incoming{};
  incoming_.tag = tag;
  incoming_.total = total;
  have_incoming_ = true;
  if (auto it = posted_.find(tag); it != posted_.end()) {
    PostedRecv recv = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) posted_.erase(it);
    if (total > recv.capacity) {
      incoming_.discard = true;
      fail_size(std::move(recv.request), total, recv.capacity, tag);
    } else {
      incoming_.request = std::move(recv.request);
      incoming_.target = recv.data;
    }
    return true;
  }
  if (total > max_unexpected_bytes_ - std::min(unexpected_bytes_, max_unexpected_bytes_)) {
    fail_link_locked("sent a message of " + std::to_string(total) + " bytes (tag " + std::to_string(tag) +
                     ") that no receive asked for while " + std::to_string(unexpected_bytes_) +
                     " such bytes are held; the limit is " + std::to_string(max_unexpected_bytes_) +
                     " (TransportOptions::max_unexpected_bytes)");
    return false;
  }
  try {
    incoming_.temp = HeldBuffer(total, &unexpected_bytes_);
  } catch (const std::bad_alloc&) {
    fail_link_locked("cannot hold an unexpected message of " + std::to_string(total) + " bytes (out of memory)");
    return false;
  }
  incoming_.target = incoming_.temp.get();
  return true;
}

void Link::start_read_payload(std::uint64_t chunk, std::optional<std::uint64_t> payload_hash) {
  if (incoming_.discard) return discard_payload(chunk, chunk);
  read_payload_piece(chunk, payload_hash, incoming_.target + incoming_.next_offset, 0);
}

void Link::set_receive_low_water(std::size_t bytes) {
  const int value = static_cast<int>(bytes);
  if (value == receive_low_water_) return;
  receive_low_water_ = value;
  // Only a hint: where the kernel refuses it, reads wake as they did.
  ::setsockopt(socket_->native_handle(), SOL_SOCKET, SO_RCVLOWAT, &value, sizeof value);
}

// A large chunk is read with the socket's low-water mark raised to what is
// left of it (at most kLowWaterBytes): the io thread then wakes when that
// much has arrived, not at every segment, and each wake-up moves up to a
// MiB instead of tens of KiB (4 MiB messages went from 0.55-0.65 of a
// plain socket to 0.77-0.93; docs/fabric-performance.md). The mark never
// exceeds what this chunk still owes, so the last bytes of a stream always
// wake the reader; it is set back to 1 for the next header. Small chunks
// leave it alone: two more system calls would cost a round trip more than
// the wake-ups they save.
void Link::read_payload_piece(std::uint64_t chunk, std::optional<std::uint64_t> payload_hash, unsigned char* where,
                              std::uint64_t got) {
  const std::uint64_t left = chunk - got;
  const bool large = chunk >= kLowWaterMinChunkBytes;
  if (large) set_receive_low_water(static_cast<std::size_t>(std::min<std::uint64_t>(left, kLowWaterBytes)));
  socket_->async_read_some(net::buffer(where + got, left), [this, chunk, payload_hash, where, got, large](
                                                               const boost::system::error_code& ec, std::size_t n) {
    if (!ec && !error_ && got + n < chunk) return read_payload_piece(chunk, payload_hash, where, got + n);
    if (large && !ec && !error_) set_receive_low_water(1);
    on_payload(ec, chunk, payload_hash, where);
  });
}

// A discarded message's chunk is read and dropped in pieces of at most
// kDiscardPieceBytes. A header may announce a chunk of up to
// wire::kMaxChunkBytes (1 GiB): a scratch buffer of the chunk's size made
// every message too large for its receive cost that much memory, zeroed
// (the fuzzer found a second spent per such frame). The dropped bytes'
// checksum is not checked, since they go nowhere; the next frame's header
// hash still catches a stream out of step.
void Link::discard_payload(std::uint64_t chunk, std::uint64_t left) {
  incoming_.temp.reset();
  if (left == 0) {
    incoming_.next_offset += chunk;
    if (incoming_.next_offset == incoming_.total) return finish_incoming();
    return start_read_header();
  }
  if (scratch_.empty()) scratch_.resize(kDiscardPieceBytes);
  const std::size_t piece = static_cast<std::size_t>(std::min<std::uint64_t>(left, scratch_.size()));
  net::async_read(*socket_, net::buffer(scratch_.data(), piece),
                  [this, chunk, left, piece](const boost::system::error_code& ec, std::size_t) {
                    if (error_) return;
                    if (ec) return fail_link("connection closed: " + ec.message());
                    with_recv_lock([&] { discard_payload(chunk, left - piece); });
                  });
}

void Link::on_payload(const boost::system::error_code& ec, std::uint64_t chunk,
                      std::optional<std::uint64_t> payload_hash, unsigned char* where) {
  if (error_) return;
  if (ec) return fail_link("connection closed: " + ec.message());
  with_recv_lock([&] {
    // A receive posted while this chunk was landing may have moved the
    // message from a temporary buffer into the user's: check the bytes where
    // they are now.
    const unsigned char* landed = where;
    if (!incoming_.discard && where != incoming_.target + incoming_.next_offset) {
      std::memcpy(incoming_.target + incoming_.next_offset, where, chunk);
      landed = incoming_.target + incoming_.next_offset;
    }
    if (incoming_.request || incoming_.discard) incoming_.temp.reset();
    if (payload_hash && wire::checksum_payload(landed, chunk) != *payload_hash) {
      return fail_link_locked("bad message: payload checksum mismatch in tag " + std::to_string(incoming_.tag) +
                              " at offset " + std::to_string(incoming_.next_offset) + " (" + std::to_string(chunk) +
                              " bytes)");
    }
    incoming_.next_offset += chunk;
    if (incoming_.next_offset == incoming_.total) return finish_incoming();
    start_read_header();
  });
}

void Link::finish_incoming() {
  Incoming done = std::move(incoming_);
  have_incoming_ = false;
  incoming_ = Incoming{};
  if (done.request) {
    finished_.push_back({std::move(done.request), done.total, nullptr});
  } else if (!done.discard) {
    deliver_unexpected(done.tag, std::move(done.temp), done.total);
  }
  if (!error_ && socket_) start_read_header();
}

void Link::deliver_unexpected(Tag tag, HeldBuffer data, std::size_t bytes) {
  if (auto it = posted_.find(tag); it != posted_.end()) {
    PostedRecv recv = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) posted_.erase(it);
    if (bytes > recv.capacity) return fail_size(std::move(recv.request), bytes, recv.capacity, tag);
    if (bytes > 0) std::memcpy(recv.data, data.get(), bytes);
    return finished_.push_back({std::move(recv.request), bytes, nullptr});
  }
  unexpected_[tag].push_back(Unexpected{std::move(data), bytes});
}

void Link::fail_size(RequestPtr request, std::size_t message, std::size_t capacity, Tag tag) {
  finished_.push_back({std::move(request), 0,
                       peer_error("message of " + std::to_string(message) + " bytes with tag " + std::to_string(tag) +
                                  " does not fit the receive buffer of " + std::to_string(capacity) +
                                  " bytes; the message was dropped")});
}

// ---- failure ---------------------------------------------------------------

void Link::fail_link(const std::string& reason) {
  with_recv_lock([&] { fail_link_locked(reason); });
}

void Link::fail_link_locked(const std::string& reason) {
  fabric_log().warn("link to peer rank {} ({}) failed: {}", rank_, host_, reason);
  fail_locked(peer_error(reason));
}

void Link::fail(std::exception_ptr error) {
  with_recv_lock([&] { fail_locked(std::move(error)); });
}

void Link::fail_locked(std::exception_ptr error) {
  if (error_) return;
  error_ = std::move(error);
  std::deque<SendOp> sends;
  {
    // Before the socket closes: no caller writes to its fd from here on
    // (the number could be reused by then).
    std::lock_guard<std::mutex> lock(send_mutex_);
    send_fd_ = -1;
    sends.swap(sends_);
  }
  if (socket_) {
    boost::system::error_code ignored;
    socket_->shutdown(net::ip::tcp::socket::shutdown_both, ignored);
    socket_->close(ignored);
  }
  // Failed once the lock is released: a request's on_done callback may post
  // more work.
  for (auto& op : sends) finished_.push_back({std::move(op.request), 0, error_});
  for (auto& [tag, queue] : posted_) {
    for (auto& recv : queue) finished_.push_back({std::move(recv.request), 0, error_});
  }
  posted_.clear();
  unexpected_.clear();
  if (have_incoming_ && incoming_.request) finished_.push_back({std::move(incoming_.request), 0, error_});
}

}  // namespace murmur::fabric::asio
