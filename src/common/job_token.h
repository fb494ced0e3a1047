// The job token: a secret shared by the processes of one job, with which they
// prove to each other, when a connection is set up, that they belong to the
// job (docs/security.md). murmur-run makes one per job and hands it to its
// peers in the environment (MURMUR_JOB_TOKEN), never on a command line, where
// `ps` would show it; a peer started by hand or by another launcher may set
// it too. Without one, the data plane and the rendezvous believe whoever
// speaks their wire format, as they did before tokens existed.
//
// The proofs are HMAC-SHA256 (OpenSSL's libcrypto) over a fresh random nonce
// of the side that checks, so a recorded proof is worth nothing on another
// connection. Nothing here encrypts: see docs/security.md for what is and is
// not protected.
//
// Thread safety: every function is thread-safe. None blocks, except that
// random bytes come from getrandom(2), which waits only until the kernel's
// pool is first seeded at boot.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace murmur::job_token {

inline constexpr const char* kEnvironmentVariable = "MURMUR_JOB_TOKEN";

using Nonce = std::array<unsigned char, 32>;
using Proof = std::array<unsigned char, 32>;  // an HMAC-SHA256 digest

// A fresh 256-bit token from getrandom(2), as 64 lowercase hex digits.
// Throws std::runtime_error if the kernel gives no random bytes.
std::string generate();

// $MURMUR_JOB_TOKEN, or "" when it is unset or empty (no authentication).
std::string from_environment();

// 32 bytes from getrandom(2). Throws std::runtime_error on failure.
Nonce make_nonce();

// HMAC-SHA256 keyed with `token` over `message`. `token` must not be empty
// (checked: an empty key would make every proof forgeable).
Proof prove(std::string_view token, std::string_view message);

// Compares in constant time (CRYPTO_memcmp): how much of a forged proof
// matched must not show in the time a refusal takes.
bool same_proof(const Proof& expected, std::string_view received);

// The bytes of a nonce or proof as a string_view (for messages and wire fields).
inline std::string_view bytes_of(const std::array<unsigned char, 32>& a) {
  return {reinterpret_cast<const char*>(a.data()), a.size()};
}

// Logs (warn, on `subsystem`'s logger) once per process and subsystem that
// `what` is unauthenticated because no job token is set.
void note_unauthenticated(const char* subsystem, const char* what);

}  // namespace murmur::job_token
