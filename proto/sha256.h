// SHA-256 (Nettle's) as lowercase hex: the content addresses of synced files and of the
// agent binary, and setup stamps. Shared by launcher and agent.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace podrun {

std::string Sha256Hex(std::string_view data);

// True for 64 lowercase hex digits (a content address as Sha256Hex writes it).
bool IsSha256Hex(std::string_view text);

// SHA-256 over data given in pieces.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(std::string_view data);
  std::string FinishHex();  // once; the object is spent afterwards

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

}  // namespace podrun
