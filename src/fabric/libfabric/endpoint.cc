#include "fabric/libfabric/endpoint.h"

#include <rdma/fi_cm.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>

#include <rdma/fi_errno.h>

#include <cstring>

#include "common/background_thread.h"
#include "common/host.h"
#include "common/log.h"
#include "fabric/errors.h"
#include "fabric/libfabric/cross_memory_access.h"
#include "fabric/libfabric/environment.h"
#include "fabric/libfabric/fi_check.h"
#include "fabric/libfabric/provider_signal_handlers.h"
#include "fabric/libfabric/transport.h"

namespace murmur::fabric::libfabric {
namespace {

constexpr std::uint32_t kApiVersion = FI_VERSION(1, 17);

// Hints for a tagged RDM endpoint on `provider`. The modes and mr_mode bits
// are the ones this backend can honour; the provider keeps those it needs.
InfoPtr make_hints(const std::string& provider) {
  InfoPtr hints(fi_allocinfo());
  if (!hints) throw FabricError("fi_allocinfo: out of memory");
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_TAGGED | FI_DIRECTED_RECV;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
  hints->domain_attr->control_progress = FI_PROGRESS_MANUAL;
  // Sends between two endpoints match receives in posting order: chunks of a
  // message, and messages on one tag, arrive in order.
  hints->tx_attr->msg_order = FI_ORDER_SAS;
  hints->rx_attr->msg_order = FI_ORDER_SAS;
  hints->fabric_attr->prov_name = strdup(provider.c_str());  // freed by fi_freeinfo
  return hints;
}

std::string bind_host(const TransportOptions& options) {
  if (!options.bind_host.empty()) return options.bind_host;
  if (options.peers_on_this_host) return "127.0.0.1";
  return {};  // any interface: the provider's first
}

bool is_tcp(const std::string& prov_name) { return prov_name == "net" || prov_name.rfind("tcp", 0) == 0; }

// fi_getinfo for libfabric provider `prov_name`. For tcp the provider lists
// one fabric per interface; asking with node = bind host and FI_SOURCE picks
// the one that binds there (the loopback fabric for 127.0.0.1).
InfoPtr get_info(const TransportOptions& options, const std::string& provider) {
  // Done once at load already (provider_signal_handlers.h); calling it here
  // also keeps its object file, and so that constructor, in every program
  // that makes a libfabric endpoint from murmur's static libraries. Again
  // after fi_getinfo, which loads the providers that a libfabric built with
  // them as separate libraries (--enable-psm=dl) keeps apart.
  release_signals_held_by_provider_libraries();
  struct ReleaseAfterwards {
    ~ReleaseAfterwards() { release_signals_held_by_provider_libraries(); }
  } release_afterwards;
  InfoPtr hints = make_hints(provider);
  fi_info* info = nullptr;
  const std::string host = is_tcp(provider) ? bind_host(options) : std::string();
  int ret;
  if (!host.empty()) {
    ret = fi_getinfo(kApiVersion, host.c_str(), nullptr, FI_SOURCE, hints.get(), &info);
    if (ret != 0) {
      throw FabricError("libfabric provider '" + provider + "' cannot bind to '" + host +
                        "': " + fi_error_text("fi_getinfo", ret));
    }
  } else {
    ret = fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints.get(), &info);
    if (ret != 0) {
      throw FabricError("libfabric provider '" + provider + "' is not available: " + fi_error_text("fi_getinfo", ret));
    }
  }
  InfoPtr list(info);
  // Keep the first entry only.
  InfoPtr first(fi_dupinfo(list.get()));
  if (!first) throw FabricError("fi_dupinfo: out of memory");
  return first;
}

// "net": libfabric 1.17's native RDM endpoint over TCP sockets (1.18
// renamed it "tcp"). It receives straight into a posted buffer and leaves a
// message nobody asked for yet in the kernel's socket buffer, as a socket
// does: 0.95-1.2 of a loopback socket where tcp;ofi_rxm, which copies every
// byte twice more through its bounce buffers, reached 0.33-0.7
// (docs/fabric-performance.md; tuned rxm now matches it). It is not the
// default for "tcp" because, in 1.17:
//  - a message that reached a receiver whose sender then closed the
//    connection, before a receive was posted for it, is dropped (the
//    receive fails with FI_ENOTCONN, or never completes) where rxm delivers
//    it: a peer that sends its last message and exits can lose it
//    (PeerJob.ALayoutMismatchFailsEveryRankNamingTheRank failed 1 run in 4
//    to 12 with it). Sends with FI_DELIVERY_COMPLETE do not cure it: net
//    acknowledges a small unexpected message as soon as it keeps it aside
//    in its own memory (FI_NET_MAX_SAVED, default 4), which it frees when
//    the connection closes; with FI_NET_MAX_SAVED=0 they do, but then
//  - an unclaimed message stops net reading its connection, so a later
//    message on another tag waits for it (already beyond 4 unclaimed
//    messages with the default): tags are not independent, which the
//    transport's contract assumes (AnUnclaimedMessageDoesNotHoldUpAnotherTag
//    fails on net, with FI_NET_MAX_SAVED 0 or 4; 2026-12-02).
InfoPtr get_info_for(const TransportOptions& options, const std::string& provider) {
  InfoPtr info = get_info(options, provider);
  if (provider == "net") {
    // Its progress thread blocks in fi_cq_sread while a caller drives
    // progress (waiter.h): the provider's own locks must be on. It keeps
    // an internal lock for RDM endpoints anyway; this adds the CQ's.
    info->domain_attr->threading = FI_THREAD_SAFE;
  }
  return info;
}

}  // namespace

bool verbs_available() { return provider_available("verbs"); }

bool provider_available(const std::string& provider) {
  try {
    InfoPtr hints = make_hints(provider);
    fi_info* info = nullptr;
    const int ret = fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints.get(), &info);
    if (ret == 0) fi_freeinfo(info);
    return ret == 0;
  } catch (const FabricError&) {
    return false;
  }
}

bool rdma_device_listed() {
  std::error_code ec;
  std::filesystem::directory_iterator it("/sys/class/infiniband", ec);
  return !ec && it != std::filesystem::directory_iterator();
}

namespace {

constexpr int kRxmReceivesPerConnection = 128;
// rxm's own buffers (FI_OFI_RXM_BUFFER_SIZE, 16 KiB by default): each
// receive rxm posts on a connection (above) holds one, and they are
// touched in full. With every chunk an eager message landing straight in the user's
// buffer (below), they hold only headers and messages of up to this size.
constexpr int kRxmBufferBytes = 4096;

// How the progress thread sleeps on a CQ that has a wait fd (waiter.h): in
// fi_cq_sread for libfabric 1.17's "net", whose fi_trywait never resets
// the fd (an epoll on it returned at once: a core spun while idle), on the
// fd otherwise. $MURMUR_FABRIC_CQ_WAIT (auto, fd or sread) overrides the
// choice, to check whether a provider, or a newer libfabric, still needs
// it (docs/fabric-performance.md, "A provider that keeps the progress
// thread awake").
enum class CqWait { kAuto, kFd, kSread };

CqWait cq_wait_from_environment() {
  const char* value = std::getenv("MURMUR_FABRIC_CQ_WAIT");
  if (value == nullptr || *value == '\0' || std::strcmp(value, "auto") == 0) return CqWait::kAuto;
  if (std::strcmp(value, "fd") == 0) return CqWait::kFd;
  if (std::strcmp(value, "sread") == 0) return CqWait::kSread;
  throw FabricError(std::string("MURMUR_FABRIC_CQ_WAIT='") + value + "' is not one of auto, fd, sread");
}

bool waits_in_sread(CqWait mode, const std::string& provider_name) {
  if (mode == CqWait::kAuto) return provider_name == "net";
  return mode == CqWait::kSread;
}

// Where no RDMA device is usable, `auto` runs shm for a job whose peers are
// all on this machine, unless it must survive lost peers (a peer that dies
// mid-transfer can stop shm moving the survivors' messages), else tcp.
bool auto_picks_shm(const TransportOptions& options) { return options.peers_on_this_host && !options.loss_tolerant; }

// libfabric 1.17's tcp provider reads each message's header through its
// prefetch buffer, and rxm's dynamic receive buffers (on by default: the
// eager path below relies on them) match a message on that header. With
// FI_TCP_PREFETCH_RBUF_SIZE=0 no tcp message completed: every exchange of
// tests/fabric/libfabric_transport_test.cc hung, and fabric_bench's round
// trip (5 December), while with FI_OFI_RXM_ENABLE_DYN_RBUF=0 as well they
// passed (but chunks then go by rxm's own protocols: the hazard below). A
// job would wait for its peers' deadlines and lose every one; refused here
// instead, naming the variable.
void refuse_tcp_without_prefetch() {
  const std::optional<long> prefetch = environment_integer("FI_TCP_PREFETCH_RBUF_SIZE");
  if (prefetch && *prefetch <= 0 && environment_bool("FI_OFI_RXM_ENABLE_DYN_RBUF").value_or(true)) {
    throw FabricError(std::string("FI_TCP_PREFETCH_RBUF_SIZE=") + std::getenv("FI_TCP_PREFETCH_RBUF_SIZE") +
                      " turns off the tcp provider's prefetch buffer, without which libfabric 1.17's rxm (its "
                      "dynamic receive buffers, FI_OFI_RXM_ENABLE_DYN_RBUF, on by default) completes no message: "
                      "unset it (docs/fabric-performance.md, \"Open\")");
  }
}

// Over tcp every chunk is one eager message of rxm: FI_OFI_RXM_EAGER_LIMIT
// is raised to the chunk size, so no chunk goes by rxm's segmented (SAR) or
// rendezvous protocols. Why not rendezvous: libfabric 1.17's rxm closes a
// connection whose peer has gone (its msg endpoint set to NULL) but keeps
// that peer's unexpected rendezvous requests; a receive posted afterwards
// matches one and reads on the NULL endpoint: SIGSEGV inside fi_trecv
// (reproduced by the test AMessageFromAClosedPeerIsReceivedOrFailsCleanly).
// Why not SAR (murmur's setting until 2026-12-02): its segments are copied
// through rxm's 16 KiB bounce buffers on both sides, and reached 0.2-0.5 of
// a loopback socket. An eager message of any size, with rxm's defaults
// "direct send" (the sender hands the user buffer to tcp) and "dynamic
// receive buffers" (tcp reads the header, rxm matches it, and the payload
// lands straight in the posted buffer), makes no copy of its own when the
// receive is posted first; one that arrives unexpected is held by rxm, as
// before, so it neither blocks later messages on other tags nor is lost
// when its sender closes (the native provider "net" does both: endpoint
// comments above and docs/fabric-performance.md). verbs keeps rxm's
// defaults and rendezvous, where the read is a zero-copy RDMA read (the
// same stale-request hazard may exist there; no RDMA device here to show
// it). rxm reads the variables once, when libfabric first initialises its
// providers, so this runs before any other libfabric call; a value the user
// set is left alone. Every process of a job runs this code, so all agree
// (rxm refuses peers whose limits differ).
//
// rxm also posts receive buffers on every connection, as many as
// FI_OFI_RXM_MSG_RX_SIZE says. Left unset, libfabric 1.17's rxm costs far
// more memory than with the variable set to its documented default, 128
// (why, not traced into rxm's source): an 8-peer MLP
// job's peers (exponential graph) peaked at 189-201 MiB over tcp, against
// 128-136 MiB with the variable at 128 (or anything from 16 to 512) and 99
// MiB over shm (docs/fabric-performance.md, "tcp: memory per connection"), a
// cost that grows with every peer a rank talks to. So murmur names 128.
// The bench's bandwidth and round trip did not move, and a message nobody
// has asked for still does not hold up the others, however many there are
// (rxm copies them out and posts the buffer again; the test
// AnUnclaimedMessageDoesNotHoldUpAnotherTag sends 200). What tcp still held
// beyond shm after that, about 25 MiB per peer of that job, was two of
// rxm's buffer pools of FI_OFI_RXM_BUFFER_SIZE-sized buffers (16.5 MiB
// each, fully resident, in /proc/PID/smaps; gone with the variable at
// 4096): murmur names 4096, which took those peers from 129-134 to 106-111
// MiB, under the budget, with bandwidth and round trip unchanged within the
// bench's noise (docs/fabric-performance.md, "tcp: rxm's buffers").
void tune_rxm_for_tcp(const TransportOptions& options, const std::string& asked) {
  // `auto`'s choice (choose_provider) without asking libfabric: verbs where
  // the kernel lists an RDMA device (rxm over verbs needs its own limits),
  // else tcp unless auto_picks_shm. (Until 3 December this read only
  // peers_on_this_host, so a job on one host that survives lost peers ran
  // tcp untuned: chunks over 16 KiB by rxm's SAR and rendezvous protocols.)
  const bool tcp = is_tcp(asked) || (asked == "auto" && !auto_picks_shm(options) && !rdma_device_listed());
  if (!tcp) return;
  refuse_tcp_without_prefetch();
  ::setenv("FI_OFI_RXM_EAGER_LIMIT", std::to_string(options.chunk_bytes).c_str(), /*overwrite=*/0);
  ::setenv("FI_OFI_RXM_MSG_RX_SIZE", std::to_string(kRxmReceivesPerConnection).c_str(), /*overwrite=*/0);
  ::setenv("FI_OFI_RXM_BUFFER_SIZE", std::to_string(kRxmBufferBytes).c_str(), /*overwrite=*/0);
}

// "murmur-<pid>-<64 random bits>" (common/host.h): unique across processes
// and pid reuse, and found again by remove_shm_regions_of.
std::string unique_shm_name() {
  std::random_device random;
  const std::uint64_t nonce = (std::uint64_t{random()} << 32) ^ random();
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(nonce));
  return shm_region_prefix(static_cast<int>(::getpid())) + hex;
}

}  // namespace

std::string choose_provider(const TransportOptions& options) {
  const std::string& asked = options.provider;
  tune_rxm_for_tcp(options, asked);
  if (asked == "tcp" || asked == "net" || asked == "shm" || asked == "verbs") return asked;
  if (asked != "auto") {
    throw FabricError("unknown libfabric provider '" + asked + "' (expected tcp, net, shm, verbs or auto)");
  }
  if (verbs_available()) return "verbs";
  return auto_picks_shm(options) ? "shm" : "tcp";
}

Endpoint::Endpoint(const TransportOptions& options, const std::string& which)
    : provider(which), info(get_info_for(options, which)) {
  // Threads a provider starts for this endpoint inherit the mask: they are
  // murmur's, not the host program's (common/background_thread.h).
  const AsyncSignalsBlocked blocked;
  const CqWait cq_wait = cq_wait_from_environment();
  provider_name = info->fabric_attr->prov_name ? info->fabric_attr->prov_name : which;
  const auto mr_mode = static_cast<std::uint64_t>(info->domain_attr->mr_mode);
  register_memory = (mr_mode & FI_MR_LOCAL) != 0 || (mr_mode & FI_MR_ALLOCATED) != 0 || (info->mode & FI_LOCAL_MR) != 0;
  mr_prov_key = (mr_mode & FI_MR_PROV_KEY) != 0;
  mr_endpoint = (mr_mode & FI_MR_ENDPOINT) != 0;
  cq_data_size = info->domain_attr->cq_data_size;
  max_msg_size = info->ep_attr->max_msg_size;
  rx_iov_limit = info->rx_attr->iov_limit;
  tx_iov_limit = info->tx_attr->iov_limit;

  fid_fabric* fabric_raw = nullptr;
  fi_check(fi_fabric(info->fabric_attr, &fabric_raw, nullptr), "fi_fabric");
  fabric = Fid<fid_fabric>(fabric_raw, "fabric");

  fid_domain* domain_raw = nullptr;
  fi_check(fi_domain(fabric.get(), info.get(), &domain_raw, nullptr), "fi_domain");
  domain = Fid<fid_domain>(domain_raw, "domain");

  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  fid_av* av_raw = nullptr;
  fi_check(fi_av_open(domain.get(), &av_attr, &av_raw, nullptr), "fi_av_open");
  av = Fid<fid_av>(av_raw, "av");

  // The CQ blocks on a file descriptor when the provider offers one; shm in
  // libfabric 1.17 refuses FI_WAIT_FD (or offers no fd), and then the
  // progress thread polls with a sleeping back-off instead.
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_TAGGED;
  cq_attr.wait_obj = FI_WAIT_FD;
  fid_cq* cq_raw = nullptr;
  int ret = fi_cq_open(domain.get(), &cq_attr, &cq_raw, nullptr);
  if (ret == 0) {
    cq = Fid<fid_cq>(cq_raw, "cq");
    int fd = -1;
    ret = fi_control(&cq->fid, FI_GETWAIT, &fd);
    if (ret == 0 && fd >= 0) {
      wait_fd = fd;
      wait_in_sread = waits_in_sread(cq_wait, provider_name);
    } else {
      fabric_log().info("libfabric {}: CQ offers no wait fd ({}); polling with back-off", provider_name,
                        fi_error_text("fi_control(FI_GETWAIT)", ret));
      cq.reset();
    }
  } else {
    fabric_log().info("libfabric {}: CQ refuses FI_WAIT_FD ({}); polling with back-off", provider_name,
                      fi_error_text("fi_cq_open", ret));
  }
  if (!cq) {
    cq_attr.wait_obj = FI_WAIT_NONE;
    cq_raw = nullptr;
    fi_check(fi_cq_open(domain.get(), &cq_attr, &cq_raw, nullptr), "fi_cq_open");
    cq = Fid<fid_cq>(cq_raw, "cq");
  }

  fid_ep* ep_raw = nullptr;
  fi_check(fi_endpoint(domain.get(), info.get(), &ep_raw, nullptr), "fi_endpoint");
  ep = Fid<fid_ep>(ep_raw, "ep");
  fi_check(fi_ep_bind(ep.get(), &av->fid, 0), "fi_ep_bind(av)");
  fi_check(fi_ep_bind(ep.get(), &cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
  if (which == "shm") {
    // shm names its shared-memory region "<pid>:<domain>:<ep>" by default.
    // A process killed with SIGKILL never unlinks its region, and once the
    // kernel reuses its pid the next endpoint of that pid fails fi_enable
    // with EBUSY. A name no earlier process can have had avoids that.
    const std::string name = unique_shm_name();
    fi_check(fi_setname(&ep->fid, const_cast<char*>(name.c_str()), name.size() + 1), "fi_setname(shm)");
    shm_region = name;
    // Before any peer maps this endpoint: each checks once, as it does,
    // whether it may read this process (cross_memory_access.h).
    shm_single_copy = allow_peers_to_read_this_process() != CrossMemoryAccess::kRefused;
  }
  fi_check(fi_enable(ep.get()), "fi_enable");

  fabric_log().info(
      "libfabric endpoint: provider {} fabric {} domain {} mr_mode {:#x} (register: {}) "
      "cq_data_size {} max_msg_size {} wait {}",
      provider_name, info->fabric_attr->name ? info->fabric_attr->name : "?",
      info->domain_attr->name ? info->domain_attr->name : "?", mr_mode, register_memory, cq_data_size, max_msg_size,
      wait_fd >= 0 ? "fd" : "poll");
}

}  // namespace murmur::fabric::libfabric
