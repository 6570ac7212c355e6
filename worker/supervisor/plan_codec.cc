// The plan's wire format (see plan_codec.h).
#include "worker/supervisor/plan_codec.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace podrun::agent {

std::string EncodeStrings(const std::vector<std::string>& strings) {
  std::string out;
  for (const auto& s : strings) {
    const uint32_t n = static_cast<uint32_t>(s.size());
    out.append(reinterpret_cast<const char*>(&n), sizeof n);
    out += s;
  }
  return out;
}

std::vector<std::string> DecodeStrings(std::string_view bytes) {
  std::vector<std::string> out;
  while (!bytes.empty()) {
    uint32_t n = 0;
    if (bytes.size() < sizeof n) throw std::runtime_error("malformed plan");
    std::memcpy(&n, bytes.data(), sizeof n);
    bytes.remove_prefix(sizeof n);
    if (bytes.size() < n) throw std::runtime_error("malformed plan");
    out.emplace_back(bytes.substr(0, n));
    bytes.remove_prefix(n);
  }
  return out;
}

}  // namespace podrun::agent
