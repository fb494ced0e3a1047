#include "fabric/rendezvous/wire.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <cstring>

#include "rendezvous.capnp.h"

namespace murmur::fabric::rendezvous::wire {
namespace cw = capnp_wire;

static_assert(kProtocolVersion == cw::PROTOCOL_VERSION, "wire.h and rendezvous.capnp disagree");

const char* op_name(Op op) {
  switch (op) {
    case Op::set:
      return "set";
    case Op::get:
      return "get";
    case Op::wait:
      return "wait";
    case Op::barrier:
      return "barrier";
    case Op::members:
      return "members";
    case Op::heartbeat:
      return "heartbeat";
    case Op::leave:
      return "leave";
    case Op::gather:
      return "gather";
    case Op::suspect:
      return "suspect";
    case Op::admit:
      return "admit";
  }
  return "?";
}

namespace {

capnp::Data::Reader as_data(const std::string& s) {
  return capnp::Data::Reader(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}
std::string to_string(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }
std::string to_string(capnp::Data::Reader d) { return std::string(reinterpret_cast<const char*>(d.begin()), d.size()); }

std::vector<std::byte> frame(capnp::MessageBuilder& builder) {
  kj::Array<capnp::word> words = capnp::messageToFlatArray(builder);
  const auto bytes = words.asBytes();
  std::vector<std::byte> out(kPrefixBytes + bytes.size());
  const std::uint32_t n = static_cast<std::uint32_t>(bytes.size());
  for (std::size_t i = 0; i < kPrefixBytes; ++i) out[i] = std::byte((n >> (8 * i)) & 0xff);
  std::memcpy(out.data() + kPrefixBytes, bytes.begin(), bytes.size());
  return out;
}

capnp::ReaderOptions reader_options(std::size_t max_bytes) {
  capnp::ReaderOptions options;
  // A message can legitimately be read about once; amplification attacks
  // (many pointers to one struct) run out of this budget instead of memory.
  options.traversalLimitInWords = max_bytes / sizeof(capnp::word) + 1;
  options.nestingLimit = 16;
  return options;
}

kj::ArrayPtr<const capnp::word> as_words(std::span<const std::uint64_t> body) {
  return kj::ArrayPtr<const capnp::word>(reinterpret_cast<const capnp::word*>(body.data()), body.size());
}

Request read_request(cw::Request::Reader r) {
  Request out;
  out.id = r.getId();
  switch (r.which()) {
    case cw::Request::SET:
      out.op = Op::set;
      out.key = to_string(r.getSet().getKey());
      out.value = to_string(r.getSet().getValue());
      break;
    case cw::Request::GET:
      out.op = Op::get;
      out.key = to_string(r.getGet());
      break;
    case cw::Request::WAIT:
      out.op = Op::wait;
      out.key = to_string(r.getWait().getKey());
      out.timeout_ms = r.getWait().getTimeoutMs();
      break;
    case cw::Request::BARRIER:
      out.op = Op::barrier;
      out.key = to_string(r.getBarrier().getKey());
      out.timeout_ms = r.getBarrier().getTimeoutMs();
      break;
    case cw::Request::GATHER:
      out.op = Op::gather;
      out.key = to_string(r.getGather().getPrefix());
      out.count = r.getGather().getCount();
      out.timeout_ms = r.getGather().getTimeoutMs();
      out.retire = to_string(r.getGather().getRetire());
      break;
    case cw::Request::MEMBERS:
      out.op = Op::members;
      break;
    case cw::Request::HEARTBEAT:
      out.op = Op::heartbeat;
      break;
    case cw::Request::LEAVE:
      out.op = Op::leave;
      break;
    case cw::Request::ADMIT:
      out.op = Op::admit;
      break;
    case cw::Request::SUSPECT: {
      auto q = r.getSuspect();
      out.op = Op::suspect;
      out.rank = q.getRank();
      out.key = to_string(q.getReason());
      switch (q.getEvidence()) {
        case cw::Evidence::TRANSPORT_ERROR:
          out.evidence = Evidence::kTransportError;
          break;
        case cw::Evidence::SILENT:
          out.evidence = Evidence::kSilent;
          break;
        default:
          throw DecodeError("suspect with unknown evidence " + std::to_string(int(q.getEvidence())));
      }
      break;
    }
    default:
      throw DecodeError("request of unknown kind " + std::to_string(int(r.which())));
  }
  return out;
}

void write_members(capnp::List<cw::Member>::Builder list, const std::vector<Member>& members) {
  for (unsigned i = 0; i < members.size(); ++i) {
    list[i].setRank(members[i].rank);
    list[i].setHost(members[i].host);
  }
}

std::vector<Member> read_members(capnp::List<cw::Member>::Reader list) {
  std::vector<Member> out;
  out.reserve(list.size());
  for (auto m : list) out.push_back(Member{m.getRank(), to_string(m.getHost())});
  return out;
}

void write_lost(cw::MemberLost::Builder lost, const MemberLost& m) {
  lost.setRank(m.rank);
  lost.setHost(m.host);
  lost.setReason(m.reason);
  lost.setLeftCleanly(m.left_cleanly);
}

MemberLost read_lost(cw::MemberLost::Reader m) {
  return MemberLost{m.getRank(), to_string(m.getHost()), to_string(m.getReason()), m.getLeftCleanly()};
}

cw::Verdict to_wire(SuspectVerdict v) {
  switch (v) {
    case SuspectVerdict::kDeclared:
      return cw::Verdict::DECLARED;
    case SuspectVerdict::kAlreadyLost:
      return cw::Verdict::ALREADY_LOST;
    case SuspectVerdict::kAlive:
      return cw::Verdict::ALIVE;
    case SuspectVerdict::kNotMember:
    case SuspectVerdict::kUnreachable:
      break;
  }
  return cw::Verdict::NOT_MEMBER;
}

SuspectVerdict from_wire(cw::Verdict v) {
  switch (v) {
    case cw::Verdict::DECLARED:
      return SuspectVerdict::kDeclared;
    case cw::Verdict::ALREADY_LOST:
      return SuspectVerdict::kAlreadyLost;
    case cw::Verdict::ALIVE:
      return SuspectVerdict::kAlive;
    case cw::Verdict::NOT_MEMBER:
      return SuspectVerdict::kNotMember;
  }
  throw DecodeError("unknown suspect verdict " + std::to_string(int(v)));
}

}  // namespace

std::vector<std::byte> encode(const ClientMessage& message) {
  capnp::MallocMessageBuilder builder;
  auto root = builder.initRoot<cw::ClientMessage>();
  if (const auto* h = std::get_if<Hello>(&message)) {
    auto hello = root.initHello();
    hello.setVersion(h->version);
    hello.setToken(h->token);
    hello.setRank(h->rank);
    hello.setSize(h->size);
    hello.setHost(h->host);
    hello.setRejoin(h->rejoin);
    hello.setGeneration(h->generation);
    write_members(hello.initMembers(static_cast<unsigned>(h->members.size())), h->members);
    hello.setJoin(h->join);
    hello.setSignature(h->signature);
    hello.setProof(as_data(h->proof));
    hello.setNonce(as_data(h->nonce));
  } else {
    const auto& q = std::get<Request>(message);
    auto r = root.initRequest();
    r.setId(q.id);
    switch (q.op) {
      case Op::set: {
        auto kv = r.initSet();
        kv.setKey(q.key);
        kv.setValue(as_data(q.value));
        break;
      }
      case Op::get:
        r.setGet(q.key);
        break;
      case Op::wait: {
        auto kt = r.initWait();
        kt.setKey(q.key);
        kt.setTimeoutMs(q.timeout_ms);
        break;
      }
      case Op::barrier: {
        auto kt = r.initBarrier();
        kt.setKey(q.key);
        kt.setTimeoutMs(q.timeout_ms);
        break;
      }
      case Op::gather: {
        auto g = r.initGather();
        g.setPrefix(q.key);
        g.setCount(q.count);
        g.setTimeoutMs(q.timeout_ms);
        if (!q.retire.empty()) g.setRetire(q.retire);
        break;
      }
      case Op::members:
        r.setMembers();
        break;
      case Op::heartbeat:
        r.setHeartbeat();
        break;
      case Op::leave:
        r.setLeave();
        break;
      case Op::admit:
        r.setAdmit();
        break;
      case Op::suspect: {
        auto sq = r.initSuspect();
        sq.setRank(q.rank);
        sq.setReason(q.key);
        sq.setEvidence(q.evidence == Evidence::kSilent ? cw::Evidence::SILENT : cw::Evidence::TRANSPORT_ERROR);
        break;
      }
    }
  }
  return frame(builder);
}

std::vector<std::byte> encode(const ServerMessage& message) {
  capnp::MallocMessageBuilder builder;
  auto root = builder.initRoot<cw::ServerMessage>();
  if (const auto* w = std::get_if<Welcome>(&message)) {
    auto welcome = root.initWelcome();
    if (w->ok) {
      welcome.setOk();
    } else {
      welcome.setRefused(w->refused);
    }
    welcome.setRank(w->rank);
    welcome.setSize(w->size);
  } else if (const auto* q = std::get_if<Response>(&message)) {
    auto r = root.initResponse();
    r.setId(q->id);
    switch (q->kind) {
      case Response::Kind::ok:
        r.setOk();
        break;
      case Response::Kind::value:
        r.setValue(as_data(q->text));
        break;
      case Response::Kind::not_found:
        r.setNotFound();
        break;
      case Response::Kind::error:
        r.setError(q->text);
        break;
      case Response::Kind::members:
        write_members(r.initMembers(static_cast<unsigned>(q->members.size())), q->members);
        break;
      case Response::Kind::verdict:
        r.setVerdict(to_wire(q->verdict));
        break;
      case Response::Kind::values: {
        auto list = r.initValues(static_cast<unsigned>(q->values.size()));
        for (unsigned i = 0; i < q->values.size(); ++i) list.set(i, as_data(q->values[i]));
        break;
      }
    }
  } else if (const auto* m = std::get_if<MemberLost>(&message)) {
    write_lost(root.initMemberLost(), *m);
  } else if (std::holds_alternative<ViewChanged>(message)) {
    const auto& v = std::get<ViewChanged>(message);
    auto changed = root.initViewChanged();
    changed.setGeneration(v.view.generation);
    write_members(changed.initMembers(static_cast<unsigned>(v.view.members.size())), v.view.members);
    auto lost = changed.initLost(static_cast<unsigned>(v.lost.size()));
    for (unsigned i = 0; i < v.lost.size(); ++i) write_lost(lost[i], v.lost[i]);
    auto joined = changed.initJoined(static_cast<unsigned>(v.view.joined.size()));
    for (unsigned i = 0; i < v.view.joined.size(); ++i) joined.set(i, v.view.joined[i]);
  } else if (const auto* j = std::get_if<JoinRefused>(&message)) {
    auto refused = root.initJoinRefused();
    refused.setHost(j->host);
    refused.setReason(j->reason);
  } else {
    const auto& c = std::get<Challenge>(message);
    auto challenge = root.initChallenge();
    challenge.setNonce(as_data(c.nonce));
    challenge.setProof(as_data(c.proof));
  }
  return frame(builder);
}

ClientMessage decode_client(std::span<const std::uint64_t> body, std::size_t max_bytes) {
  try {
    capnp::FlatArrayMessageReader reader(as_words(body), reader_options(max_bytes));
    auto root = reader.getRoot<cw::ClientMessage>();
    switch (root.which()) {
      case cw::ClientMessage::HELLO: {
        auto h = root.getHello();
        return Hello{h.getVersion(),
                     to_string(h.getToken()),
                     h.getRank(),
                     h.getSize(),
                     to_string(h.getHost()),
                     h.getRejoin(),
                     h.getGeneration(),
                     read_members(h.getMembers()),
                     h.getJoin(),
                     to_string(h.getSignature()),
                     to_string(h.getProof()),
                     to_string(h.getNonce())};
      }
      case cw::ClientMessage::REQUEST:
        return read_request(root.getRequest());
      default:
        throw DecodeError("client message of unknown kind " + std::to_string(int(root.which())));
    }
  } catch (const kj::Exception& e) {
    throw DecodeError(std::string("malformed capnp message: ") + e.getDescription().cStr());
  }
}

ServerMessage decode_server(std::span<const std::uint64_t> body, std::size_t max_bytes) {
  try {
    capnp::FlatArrayMessageReader reader(as_words(body), reader_options(max_bytes));
    auto root = reader.getRoot<cw::ServerMessage>();
    switch (root.which()) {
      case cw::ServerMessage::WELCOME: {
        auto w = root.getWelcome();
        if (w.isOk()) return Welcome{true, "", w.getRank(), w.getSize()};
        return Welcome{false, to_string(w.getRefused()), w.getRank(), w.getSize()};
      }
      case cw::ServerMessage::RESPONSE: {
        auto r = root.getResponse();
        Response out;
        out.id = r.getId();
        switch (r.which()) {
          case cw::Response::OK:
            out.kind = Response::Kind::ok;
            break;
          case cw::Response::VALUE:
            out.kind = Response::Kind::value;
            out.text = to_string(r.getValue());
            break;
          case cw::Response::NOT_FOUND:
            out.kind = Response::Kind::not_found;
            break;
          case cw::Response::ERROR:
            out.kind = Response::Kind::error;
            out.text = to_string(r.getError());
            break;
          case cw::Response::MEMBERS:
            out.kind = Response::Kind::members;
            out.members = read_members(r.getMembers());
            break;
          case cw::Response::VERDICT:
            out.kind = Response::Kind::verdict;
            out.verdict = from_wire(r.getVerdict());
            break;
          case cw::Response::VALUES:
            out.kind = Response::Kind::values;
            for (auto v : r.getValues()) out.values.push_back(to_string(v));
            break;
          default:
            throw DecodeError("response of unknown kind " + std::to_string(int(r.which())));
        }
        return out;
      }
      case cw::ServerMessage::MEMBER_LOST:
        return read_lost(root.getMemberLost());
      case cw::ServerMessage::VIEW_CHANGED: {
        auto v = root.getViewChanged();
        ViewChanged out;
        out.view.generation = v.getGeneration();
        out.view.members = read_members(v.getMembers());
        for (auto m : v.getLost()) out.lost.push_back(read_lost(m));
        for (auto r : v.getJoined()) out.view.joined.push_back(r);
        return out;
      }
      case cw::ServerMessage::JOIN_REFUSED: {
        auto j = root.getJoinRefused();
        return JoinRefused{to_string(j.getHost()), to_string(j.getReason())};
      }
      case cw::ServerMessage::CHALLENGE:
        return Challenge{to_string(root.getChallenge().getNonce()), to_string(root.getChallenge().getProof())};
      default:
        throw DecodeError("server message of unknown kind " + std::to_string(int(root.which())));
    }
  } catch (const kj::Exception& e) {
    throw DecodeError(std::string("malformed capnp message: ") + e.getDescription().cStr());
  }
}

}  // namespace murmur::fabric::rendezvous::wire
