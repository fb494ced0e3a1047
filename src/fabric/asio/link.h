// Link: the state of one peer as seen by the asio transport: its socket, the
// queue of sends, the posted receives and the unexpected messages, matched on
// (tag, posting order).
//
// Threading: a Link's socket is read and written on its transport's
// io_context thread, with two ways in from the callers' threads, each
// saving the hand-off to the io thread (a wake-up) that a small message's
// latency is mostly made of:
// - send_from_caller() may write a message to the socket from the caller's
//   thread, so the send queue, the write in flight and the socket's fd for
//   such writes are guarded by send_mutex_ (a leaf lock);
// - post_recv() runs on the caller's thread, so the receive side (posted
//   receives, unexpected messages, the message arriving, the link's error)
//   is guarded by recv_mutex_, taken before send_mutex_ where both are.
// No request completes under either lock: completing runs the request's
// callbacks, which may post more work on this link. Nothing here blocks
// beyond those locks: the caller's write is non-blocking, the io thread's
// reads and writes are asio async operations.
//
// Ownership: the transport owns its Links and their sockets; user buffers
// belong to the caller until their Request is done.
#pragma once

#include <boost/asio/ip/tcp.hpp>

#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fabric/asio/wire.h"
#include "fabric/request.h"
#include "fabric/send_pieces.h"
#include "fabric/transport_options.h"

namespace murmur::fabric::asio {

class Link final {
 public:
  // `local`: the transport's own rank; messages loop back in memory.
  // `max_unexpected_bytes`, `payload_checksum`: see TransportOptions.
  Link(int rank, std::size_t chunk_bytes, std::size_t max_unexpected_bytes, bool local,
       TransportOptions::PayloadChecksum payload_checksum);
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  int rank() const { return rank_; }
  const std::string& host() const { return host_; }
  void set_host(std::string host) { host_ = std::move(host); }
  bool connected() const { return socket_ != nullptr || local_; }
  bool failed() const { return error_ != nullptr; }

  // Takes over a socket whose handshake is done and starts reading and
  // writing on it. Its frames carry payload checksums unless neither this
  // side (wants_payload_checksum) nor the peer (its handshake's flag) wants
  // them, so both ends decide alike whatever each one's setting.
  void attach(std::unique_ptr<boost::asio::ip::tcp::socket> socket, bool peer_wants_payload_checksum);

  // What this side says in its handshake on `socket`: payload checksums
  // unless the option is kOffHost and the connection stays on this host.
  static bool wants_payload_checksum(const boost::asio::ip::tcp::socket& socket,
                                     TransportOptions::PayloadChecksum option);
  // Whether a connection between these two addresses (this side's, the
  // peer's) stays in this machine's kernel: a loopback address at either
  // end, or the same address at both (IPv4-mapped IPv6 read as IPv4). An
  // assumption as much as a fact: a proxy or address translation that
  // relays a loopback connection to another machine defeats it (docs/
  // fabric-performance.md, "asio: checksums where a wire is").
  static bool stays_on_this_host(const boost::asio::ip::address& local, const boost::asio::ip::address& remote);

  // How send_from_caller() went.
  enum class CallerSend {
    kQueued,    // not written: the caller must post post_send (counted as queued)
    kSent,      // written whole; the request is complete
    kRestLeft,  // partly written: the caller must post resume_write()
  };
  // Any thread. Writes the message as one frame from this thread, without
  // blocking, when nothing is queued or being written ahead of it on this
  // link (order is kept) and it fits one chunk in at most 15 pieces
  // (kMaxCallerIov, link.cc). Saves the hand-off to the
  // io thread (a wake-up) that a small message's latency is mostly made of.
  CallerSend send_from_caller(const RequestPtr& request, const SendPieces& pieces);
  // io thread: a send the caller could not write (kQueued above).
  void post_send(RequestPtr request, SendPieces pieces);
  // io thread: goes on writing what a caller's write left (kRestLeft).
  void resume_write() { start_write(); }
  // Any thread. Completes the receive at once from a message already here,
  // or leaves it for the io thread to land the message in.
  void post_recv(RequestPtr request, void* data, std::size_t capacity);

  // io thread. Fails every pending and later request with `error` and
  // closes the socket. Idempotent: the first error wins.
  void fail(std::exception_ptr error);

 private:
  struct SendOp {
    RequestPtr request;
    SendPieces pieces;           // the message
    std::size_t offset = 0;      // payload bytes of finished frames
    std::size_t frame_sent = 0;  // of the current frame (header + chunk), written by a caller; header in send_header_
  };
  struct PostedRecv {
    RequestPtr request;
    unsigned char* data;
    std::size_t capacity;
  };
  // A buffer for a message no receive has claimed yet. Its bytes count
  // against the link's limit for exactly as long as it lives.
  class HeldBuffer {
   public:
    HeldBuffer() = default;
    HeldBuffer(std::size_t bytes, std::size_t* held_total);  // may throw bad_alloc
    HeldBuffer(HeldBuffer&& other) noexcept { *this = std::move(other); }
    HeldBuffer& operator=(HeldBuffer&& other) noexcept;
    ~HeldBuffer() { reset(); }
    unsigned char* get() const { return data_.get(); }
    void reset();

   private:
    std::unique_ptr<unsigned char[]> data_;
    std::size_t bytes_ = 0;
    std::size_t* held_total_ = nullptr;  // null: not counted (local loop)
  };
  struct Unexpected {
    HeldBuffer data;
    std::size_t bytes;
  };
  // The message whose frames are arriving now.
  struct Incoming {
    Tag tag = 0;
    std::uint64_t total = 0;
    std::uint64_t next_offset = 0;
    RequestPtr request;               // null: unexpected or discarded
    unsigned char* target = nullptr;  // user buffer or temp
    HeldBuffer temp;                  // unexpected messages only
    bool discard = false;             // consumed after a size mismatch
  };

  // A request to complete (or fail) once recv_mutex_ is released.
  struct Completion {
    RequestPtr request;
    std::size_t bytes = 0;
    std::exception_ptr error;  // null: completed with `bytes`
    void run();
  };
  // Runs `work` under recv_mutex_, then the completions it left in
  // finished_, without the lock.
  template <class Work>
  void with_recv_lock(Work&& work);

  // io thread, no lock held.
  void start_write();
  void on_write(const boost::system::error_code& ec, std::size_t chunk);
  void start_read_header();
  void on_header(const boost::system::error_code& ec);
  // payload_hash: nullopt for a frame without one (kFramePayloadUnchecked).
  void on_payload(const boost::system::error_code& ec, std::uint64_t chunk, std::optional<std::uint64_t> payload_hash,
                  unsigned char* where);
  // Reads the chunk's bytes from `got` on into `where`, then calls on_payload.
  void read_payload_piece(std::uint64_t chunk, std::optional<std::uint64_t> payload_hash, unsigned char* where,
                          std::uint64_t got);
  void set_receive_low_water(std::size_t bytes);
  void fail_link(const std::string& reason);  // a fault on this link

  // Under recv_mutex_; on the io thread but for post_recv_locked and
  // claim_incoming, which a caller's post_recv runs too.
  void post_recv_locked(RequestPtr request, unsigned char* data, std::size_t capacity);
  // Binds `recv` to the message now arriving; false if that message is not
  // free to take.
  bool claim_incoming(PostedRecv& recv);
  // A new message `tag` of `total` bytes begins: bind it to a posted receive
  // or to a temporary buffer. Returns false if the link failed.
  bool begin_incoming(Tag tag, std::uint64_t total);
  void start_read_payload(std::uint64_t chunk, std::optional<std::uint64_t> payload_hash);
  // Reads and drops the `left` bytes still to come of a discarded
  // message's chunk of `chunk` bytes, through scratch_.
  void discard_payload(std::uint64_t chunk, std::uint64_t left);
  void finish_incoming();
  // A whole message is here (from the network or the local loop).
  void deliver_unexpected(Tag tag, HeldBuffer data, std::size_t bytes);
  void fail_size(RequestPtr request, std::size_t message, std::size_t capacity, Tag tag);
  void fail_link_locked(const std::string& reason);
  void fail_locked(std::exception_ptr error);

  std::exception_ptr peer_error(const std::string& reason) const;

  const int rank_;
  const std::size_t chunk_bytes_;
  const std::size_t max_unexpected_bytes_;
  const bool local_;
  const TransportOptions::PayloadChecksum payload_checksum_;
  std::string host_ = "unknown host";
  std::unique_ptr<boost::asio::ip::tcp::socket> socket_;

  std::mutex send_mutex_;  // guards the members down to send_header_
  std::deque<SendOp> sends_;
  bool writing_ = false;
  int send_fd_ = -1;              // the socket's, while callers may write to it; -1 once failed
  std::size_t queued_sends_ = 0;  // posted by callers, not yet in sends_
  wire::FrameBytes send_header_{};
  // Set by attach() before any frame is written or read: whether this
  // link's frames carry payload checksums (sent and required).
  bool checksum_payloads_ = true;
  // The frame being written (header, then its chunk's pieces); unchanged
  // while writing_.
  std::vector<boost::asio::const_buffer> write_buffers_;

  std::mutex recv_mutex_;  // guards the members down to incoming_
  // Written under recv_mutex_ on the io thread only, so that thread reads
  // it without the lock.
  std::exception_ptr error_;
  std::vector<Completion> finished_;  // to run once recv_mutex_ is released
  std::size_t unexpected_bytes_ = 0;  // held in HeldBuffers now
  std::unordered_map<Tag, std::deque<PostedRecv>> posted_;
  std::unordered_map<Tag, std::deque<Unexpected>> unexpected_;
  bool have_incoming_ = false;
  Incoming incoming_;
  wire::FrameBytes recv_header_{};  // io thread only
  int receive_low_water_ = 1;       // the socket's SO_RCVLOWAT, as last set
  static constexpr std::size_t kLowWaterBytes = 1 << 20;
  static constexpr std::uint64_t kLowWaterMinChunkBytes = 64 * 1024;
  static constexpr std::size_t kDiscardPieceBytes = 64 * 1024;
  std::vector<unsigned char> scratch_;  // payload of discarded messages, a piece at a time
};

}  // namespace murmur::fabric::asio
