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

# 2: the server pushes ViewChanged (an old client cannot decode it), answers
#    heartbeats whose id is not 0, and knows Suspect and rejoining Hellos.
# 3: joining a running job (Hello.join, Request.admit, ViewChanged.joined,
#    Welcome.rank/size) and the JoinRefused push (an old client cannot decode it).
# 4: a server with a job token answers a Hello without a proof with a
#    Challenge, and admits only a Hello whose proof answers it.
const protocolVersion :UInt32 = 4;

struct Hello {
  version @0 :UInt32;     # protocolVersion of the sender
  token @1 :Text;         # cluster token; must match the server's
  rank @2 :Int32;
  size @3 :Int32;         # world size; every member must agree
  host @4 :Text;          # how the others can reach this member
  # Set when a member reconnects after its server was lost (failover): the
  # last view it received. A standby server adopts the highest generation it
  # is told about.
  rejoin @5 :Bool;
  generation @6 :UInt64;
  members @7 :List(Member);
  # Set (with rank -1) by a process that asks to join a running job: the
  # server assigns it a new id (Welcome.rank) as a pending joiner, which
  # becomes a member when it sends Request.admit.
  join @8 :Bool;
  # The job signature ("key=value;key=value"): the first member's is the
  # job's; a joiner whose signature differs is refused.
  signature @9 :Text;
  # HMAC-SHA256, keyed with the job token, of "murmur rendezvous hello v1"
  # followed by the nonce of the server's Challenge on this connection
  # (common/job_token.h, docs/security.md). Empty in the first Hello.
  proof @10 :Data;
  # 32 random bytes from a client with a job token, in its first Hello: the
  # server proves the token over them in its Challenge, so that the client
  # knows it reached the job's server, not a process holding its address.
  nonce @11 :Data;
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
    suspect @9 :Suspect;  # answered with a verdict
    admit @10 :Void;      # a pending joiner asks to become a member: answered once the view admitting it was pushed
  }
}

# A member reports that `rank` looks dead to it.
struct Suspect {
  rank @0 :Int32;
  evidence @1 :Evidence;
  reason @2 :Text;
}

enum Evidence {
  transportError @0;      # its data-plane link to the rank failed: declare at once
  silent @1;              # no completion before the caller's deadline: declare only if heartbeats stopped too
}

enum Verdict {
  declared @0;            # the rank is lost now (a new view follows)
  alreadyLost @1;         # it was not in the current view any more
  alive @2;               # it heartbeats: keep waiting
  notMember @3;           # the asker is not in the current view: ignored
}

# The keys prefix + "0" ... prefix + (count - 1), decimal: one reply with all
# their values in that order, instead of one wait per key.
struct Gather {
  prefix @0 :Text;
  count @1 :UInt32;
  timeoutMs @2 :UInt64;
  # Non-empty: once this gather is answered, the server erases every key
  # that starts with it (the caller's previous collective, which every
  # member has finished once all wrote this one), so that a job's
  # collectives do not grow the store for as long as it runs. It must not
  # be a prefix of `prefix` (the gather's own keys): such a gather is refused.
  retire @3 :Text;
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
  rank @2 :Int32;         # the sender's member id (assigned, for a joiner)
  size @3 :Int32;         # the job's original world size
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
    verdict @7 :Verdict;    # suspect
  }
}

# Pushed, in order, to every live member whenever the membership changes:
# generation 0 once all ranks joined, then one more per change.
struct ViewChanged {
  generation @0 :UInt64;
  members @1 :List(Member);    # ascending rank
  lost @2 :List(MemberLost);   # who left or was lost in this change
  joined @3 :List(Int32);      # who was admitted in this change
}

# Sent by a server that has a job token in answer to a Hello without a proof:
# the client proves the token by sending its Hello again, with `proof`.
struct Challenge {
  nonce @0 :Data;              # 32 random bytes, fresh for this connection
  # HMAC-SHA256, keyed with the job token, of "murmur rendezvous server v1"
  # followed by the Hello's nonce; empty when the Hello had none.
  proof @1 :Data;
}

# Pushed to every member when the server refuses a joiner (its signature
# differs from the job's), so that the job's logs say so too.
struct JoinRefused {
  host @0 :Text;               # the joiner's
  reason @1 :Text;
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
    viewChanged @3 :ViewChanged;
    joinRefused @4 :JoinRefused;
    challenge @5 :Challenge;
  }
}
