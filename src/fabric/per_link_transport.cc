#include "fabric/per_link_transport.h"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "common/log.h"
#include "fabric/errors.h"
#include "fabric/peer_list.h"

namespace murmur::fabric {

namespace {

// Layout of a per-link address (little-endian lengths):
//   "MPL1"
//   u16 n, machine identity (n bytes)
//   u8 n, local transport's name;   u32 n, local transport's address
//   u8 n, remote transport's name;  u32 n, remote transport's address
// Bounds: far above any real identity or provider address, low enough that
// a hostile record cannot make a rank allocate much.
constexpr char kMagic[4] = {'M', 'P', 'L', '1'};
constexpr std::size_t kMaxAddressBytes = 4096;

struct PerLinkAddress {
  std::string machine;
  std::string local_name, local_address;
  std::string remote_name, remote_address;
};

void put_length(std::string& out, std::size_t n, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
}

std::string encode(const PerLinkAddress& a) {
  std::string out(kMagic, sizeof(kMagic));
  put_length(out, a.machine.size(), 2);
  out += a.machine;
  put_length(out, a.local_name.size(), 1);
  out += a.local_name;
  put_length(out, a.local_address.size(), 4);
  out += a.local_address;
  put_length(out, a.remote_name.size(), 1);
  out += a.remote_name;
  put_length(out, a.remote_address.size(), 4);
  out += a.remote_address;
  return out;
}

// Reads fields front to back; any read past the end, or a length over
// `most`, makes the whole record invalid.
class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}

  bool field(int length_bytes, std::size_t most, std::string& out) {
    if (bytes_.size() - at_ < static_cast<std::size_t>(length_bytes)) return false;
    std::size_t n = 0;
    for (int i = 0; i < length_bytes; ++i) n |= std::size_t{static_cast<unsigned char>(bytes_[at_ + i])} << (8 * i);
    at_ += length_bytes;
    if (n > most || bytes_.size() - at_ < n) return false;
    out.assign(bytes_, at_, n);
    at_ += n;
    return true;
  }
  bool skip_magic() {
    if (bytes_.size() < sizeof(kMagic) || bytes_.compare(0, sizeof(kMagic), kMagic, sizeof(kMagic)) != 0) return false;
    at_ = sizeof(kMagic);
    return true;
  }
  bool at_end() const { return at_ == bytes_.size(); }

 private:
  const std::string& bytes_;
  std::size_t at_ = 0;
};

std::optional<PerLinkAddress> decode(const std::string& bytes) {
  Reader in(bytes);
  PerLinkAddress a;
  if (!in.skip_magic() || !in.field(2, 0xffff, a.machine) || !in.field(1, 0xff, a.local_name) ||
      !in.field(4, kMaxAddressBytes, a.local_address) || !in.field(1, 0xff, a.remote_name) ||
      !in.field(4, kMaxAddressBytes, a.remote_address) || !in.at_end()) {
    return std::nullopt;
  }
  return a;
}

// "libfabric:tcp" -> "tcp": the part after the backend, for name().
std::string provider_part(const std::string& name) {
  const auto colon = name.find(':');
  return colon == std::string::npos ? name : name.substr(colon + 1);
}

class PerLinkTransportImpl final : public PerLinkTransport {
 public:
  PerLinkTransportImpl(std::unique_ptr<Transport> local, std::unique_ptr<Transport> remote, std::string machine)
      : local_(std::move(local)), remote_(std::move(remote)) {
    own_.machine = std::move(machine);
    own_.local_name = local_->name();
    own_.local_address = local_->address();
    own_.remote_name = remote_->name();
    own_.remote_address = remote_->address();
    address_ = encode(own_);
    if (local_->rank() != remote_->rank() || local_->size() != remote_->size()) {
      throw FabricError("per-link transport: the inner transports disagree on rank or size");
    }
  }

  ~PerLinkTransportImpl() override {
    // Remote first: its connections to other machines may take a while to
    // close; the local one holds no network state.
    remote_.reset();
    local_.reset();
  }

  int rank() const override { return remote_->rank(); }
  int size() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return size_ > 0 ? size_ : remote_->size();
  }
  std::string name() const override { return own_.local_name + "+" + provider_part(own_.remote_name); }
  std::string address() const override { return address_; }

  void connect(const std::vector<PeerInfo>& peers) override {
    check_peer_list(peers, remote_->size(), rank(), "per-link");
    std::vector<PeerInfo> local_peers(peers.size(), PeerInfo{-1, "", ""});
    std::vector<PeerInfo> remote_peers(peers.size(), PeerInfo{-1, "", ""});
    std::vector<Route> routes(peers.size(), Route::kUnknown);
    int local_count = 0;
    for (std::size_t r = 0; r < peers.size(); ++r) {
      local_peers[r].host = remote_peers[r].host = peers[r].host;
      if (is_absent(peers[r])) continue;
      const PerLinkAddress a = parse(peers[r]);
      const bool here = static_cast<int>(r) != rank() && a.machine == own_.machine;
      if (static_cast<int>(r) == rank() || here)
        local_peers[r] = PeerInfo{peers[r].rank, peers[r].host, a.local_address};
      if (!here) remote_peers[r] = PeerInfo{peers[r].rank, peers[r].host, a.remote_address};
      routes[r] = here ? Route::kLocal : Route::kRemote;
      local_count += here ? 1 : 0;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      routes_ = routes;
      size_ = static_cast<int>(peers.size());
    }
    fabric_log().info("rank {}: {} of {} peers on this machine go over {}, the others over {}", rank(), local_count,
                      peers.size() - 1, own_.local_name, own_.remote_name);
    remote_->connect(remote_peers);
    local_->connect(local_peers);
  }

  void add_peer(const PeerInfo& peer) override {
    int known = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      known = size_;
    }
    check_new_peer(peer, known, rank(), known > 0, "per-link");
    const PerLinkAddress a = parse(peer);
    const bool here = a.machine == own_.machine;
    (here ? local_ : remote_)->add_peer(PeerInfo{peer.rank, peer.host, here ? a.local_address : a.remote_address});
    std::lock_guard<std::mutex> lock(mutex_);
    // Ranks the join skips over are absent here, as on a plain transport;
    // the inner transports cannot say so, since neither may know them.
    routes_.resize(static_cast<std::size_t>(peer.rank) + 1, Route::kSkipped);
    routes_[peer.rank] = here ? Route::kLocal : Route::kRemote;
    skipped_by_.resize(routes_.size(), -1);
    for (int r = size_; r < peer.rank; ++r) skipped_by_[r] = peer.rank;
    size_ = std::max(size_, peer.rank + 1);
  }

  RequestPtr isendv(int peer, Tag tag, SendPieces pieces) override {
    if (route_of(peer) == Route::kSkipped) return skipped(Request::Kind::kSend, peer, tag);
    return route(peer).isendv(peer, tag, std::move(pieces));
  }
  RequestPtr irecv(int peer, Tag tag, void* data, std::size_t capacity) override {
    if (route_of(peer) == Route::kSkipped) return skipped(Request::Kind::kRecv, peer, tag);
    return route(peer).irecv(peer, tag, data, capacity);
  }

  void fail_peer(int peer, std::exception_ptr error) override {
    const Route which = route_of(peer);
    if (which == Route::kSkipped) return;  // failed already, for good
    if (which != Route::kRemote) local_->fail_peer(peer, error);
    if (which != Route::kLocal) remote_->fail_peer(peer, error);
  }

  std::string link_name(int peer) const override {
    switch (route_of(peer)) {
      case Route::kLocal:
        return own_.local_name;
      case Route::kRemote:
        return own_.remote_name;
      case Route::kUnknown:
      case Route::kSkipped:
        break;
    }
    return {};
  }

 private:
  // kUnknown: absent at connect() (both inner transports know it absent)
  // or not a rank yet; kSkipped: a rank an add_peer skipped over.
  enum class Route : std::uint8_t { kUnknown, kLocal, kRemote, kSkipped };

  RequestPtr skipped(Request::Kind kind, int peer, Tag tag) const {
    int joined = -1;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      joined = skipped_by_[peer];
    }
    auto request = std::make_shared<Request>(kind, peer, tag);
    request->fail(absent_peer_error(peer, "", skipped_rank_reason(joined)));
    return request;
  }

  Route route_of(int peer) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (peer < 0 || static_cast<std::size_t>(peer) >= routes_.size()) return Route::kUnknown;
    return routes_[peer];
  }
  // A rank not known (yet) goes to `remote`, which fails it with its own
  // words, as a plain transport would.
  Transport& route(int peer) { return route_of(peer) == Route::kLocal ? *local_ : *remote_; }

  PerLinkAddress parse(const PeerInfo& peer) const {
    auto a = decode(peer.address);
    if (!a) {
      throw PeerError(peer.rank, peer.host,
                      "published an address that is not a per-link one (" + std::to_string(peer.address.size()) +
                          " bytes); every rank of a job must use the same provider (this rank: " + name() + ")");
    }
    if (a->local_name != own_.local_name || a->remote_name != own_.remote_name) {
      throw PeerError(peer.rank, peer.host,
                      "uses " + a->local_name + " and " + a->remote_name + " where this rank uses " + own_.local_name +
                          " and " + own_.remote_name + "; every rank of a job must use the same provider");
    }
    return *a;
  }

  std::unique_ptr<Transport> local_;
  std::unique_ptr<Transport> remote_;
  PerLinkAddress own_;
  std::string address_;
  mutable std::mutex mutex_;  // guards routes_ and size_; leaf lock
  std::vector<Route> routes_;
  std::vector<int> skipped_by_;  // by rank: the joiner whose add_peer skipped it, or -1
  int size_ = 0;                 // 0 until connect()
};

}  // namespace

std::unique_ptr<Transport> make_per_link_transport(std::unique_ptr<Transport> local, std::unique_ptr<Transport> remote,
                                                   std::string machine) {
  return std::make_unique<PerLinkTransportImpl>(std::move(local), std::move(remote), std::move(machine));
}

std::optional<std::pair<std::string, std::string>> per_link_inner_names(const std::string& address) {
  auto a = decode(address);
  if (!a) return std::nullopt;
  return std::make_pair(a->local_name, a->remote_name);
}

}  // namespace murmur::fabric
