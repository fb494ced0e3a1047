#include "common/job_token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>

#include "common/check.h"
#include "common/log.h"

namespace murmur::job_token {

namespace {

void random_bytes(unsigned char* out, std::size_t bytes) {
  std::size_t got = 0;
  while (got < bytes) {
    const ssize_t n = ::getrandom(out + got, bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("getrandom: ") + std::strerror(errno));
    got += static_cast<std::size_t>(n);
  }
}

}  // namespace

std::string generate() {
  std::array<unsigned char, 32> raw{};
  random_bytes(raw.data(), raw.size());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  token.reserve(2 * raw.size());
  for (unsigned char c : raw) {
    token.push_back(kHex[c >> 4]);
    token.push_back(kHex[c & 15]);
  }
  return token;
}

std::string from_environment() {
  const char* value = std::getenv(kEnvironmentVariable);
  return value == nullptr ? std::string() : std::string(value);
}

Nonce make_nonce() {
  Nonce nonce{};
  random_bytes(nonce.data(), nonce.size());
  return nonce;
}

Proof prove(std::string_view token, std::string_view message) {
  MURMUR_CHECK(!token.empty());
  Proof proof{};
  unsigned int length = 0;
  const unsigned char* out =
      HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), proof.data(), &length);
  MURMUR_CHECK(out != nullptr && length == proof.size());
  return proof;
}

bool same_proof(const Proof& expected, std::string_view received) {
  if (received.size() != expected.size()) return false;
  return CRYPTO_memcmp(expected.data(), received.data(), expected.size()) == 0;
}

void note_unauthenticated(const char* subsystem, const char* what) {
  static std::mutex mutex;
  static std::set<std::string> noted;  // one entry per subsystem and what: a handful
  std::lock_guard lock(mutex);
  if (!noted.insert(std::string(subsystem) + "/" + what).second) return;
  logger(subsystem)->warn(
      "{} is unauthenticated: no job token ({} unset); any process that reaches its port is "
      "believed (docs/security.md)",
      what, kEnvironmentVariable);
}

}  // namespace murmur::job_token
