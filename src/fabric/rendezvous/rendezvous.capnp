# Wire format of the rendezvous control plane (server.h, client.h).
#
# Every message travels as a 4-byte little-endian length prefix followed by
# one unpacked, flat-array Cap'n Proto message of that many bytes (a whole
# number of 8-byte words). A client sends ClientMessage, the server sends
# ServerMessage. The first ClientMessage on a connection must be a Hello; the
# server answers it with a Welcome (accepted, or refused with a reason) and
# closes the connection after a refusal.
#
# Versioning: fields are only ever added, never renumbered; protocolVersion
# changes when the meaning of an existing field changes.
@0xf00b59ec397deec0;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("murmur::fabric::rendezvous::capnp_wire");

const protocolVersion :UInt32 = 1;

struct Hello {
  version @0 :UInt32;     # protocolVersion of the sender
  token @1 :Text;         # cluster token; must match the server's
  rank @2 :Int32;
  size @3 :Int32;         # world size; every member must agree
  host @4 :Text;          # how the others can reach this member
}

struct Request {
  id @0 :UInt64;          # echoed in the Response; 0 when no answer is wanted
  union {
    set @1 :KeyValue;
    get @2 :Text;         # key
    wait @3 :KeyTimeout;  # answered when the key is set, or with an error at timeout
    barrier @4 :KeyTimeout;  # key is the barrier's name
    members @5 :Void;
    heartbeat @6 :Void;   # never answered
    leave @7 :Void;       # answered with ok, then the server closes
    gather @8 :Gather;    # answered with values once every key of the gather is set, or an error at timeout
  }
}

# The keys prefix + "0" ... prefix + (count - 1), decimal: one reply with all
# their values in that order, instead of one wait per key.
struct Gather {
  prefix @0 :Text;
  count @1 :UInt32;
  timeoutMs @2 :UInt64;
}

struct KeyValue {
  key @0 :Text;
  value @1 :Data;         # arbitrary bytes
}

struct KeyTimeout {
  key @0 :Text;
  timeoutMs @1 :UInt64;
}

struct Member {
  rank @0 :Int32;
  host @1 :Text;
}

struct Welcome {
  union {
    ok @0 :Void;
    refused @1 :Text;     # why the Hello was refused
  }
}

struct Response {
  id @0 :UInt64;
  union {
    ok @1 :Void;
    value @2 :Data;
    notFound @3 :Void;
    error @4 :Text;
    members @5 :List(Member);
    values @6 :List(Data);  # gather
  }
}

# Pushed, unasked, to every remaining member when one leaves or is lost.
struct MemberLost {
  rank @0 :Int32;
  host @1 :Text;
  reason @2 :Text;
  leftCleanly @3 :Bool;
}

struct ClientMessage {
  union {
    hello @0 :Hello;
    request @1 :Request;
  }
}

struct ServerMessage {
  union {
    welcome @0 :Welcome;
    response @1 :Response;
    memberLost @2 :MemberLost;
  }
}
