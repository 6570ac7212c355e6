// SHA-256 of bytes as lowercase hex (OpenSSL's EVP), for content addresses and setup stamps.
#pragma once

#include <string>
#include <string_view>

namespace podrun {

std::string Sha256Hex(std::string_view data);

}  // namespace podrun
