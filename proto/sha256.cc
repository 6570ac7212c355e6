// SHA-256 as hex (see sha256.h).
#include "proto/sha256.h"

#include <nettle/sha2.h>

namespace podrun {
namespace {

std::string Hex(const uint8_t* digest, size_t length) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * length);
  for (size_t i = 0; i < length; ++i) {
    hex += kDigits[digest[i] >> 4];
    hex += kDigits[digest[i] & 15];
  }
  return hex;
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  Sha256 sha;
  sha.Update(data);
  return sha.FinishHex();
}

bool IsSha256Hex(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

struct Sha256::Context {
  sha256_ctx ctx;
};

Sha256::Sha256() : context_(std::make_unique<Context>()) { sha256_init(&context_->ctx); }

Sha256::~Sha256() = default;

void Sha256::Update(std::string_view data) {
  sha256_update(&context_->ctx, data.size(), reinterpret_cast<const uint8_t*>(data.data()));
}

std::string Sha256::FinishHex() {
  uint8_t digest[SHA256_DIGEST_SIZE];
  sha256_digest(&context_->ctx, sizeof digest, digest);
  return Hex(digest, sizeof digest);
}

}  // namespace podrun
