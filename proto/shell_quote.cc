// Quoting for a POSIX shell (see shell_quote.h).
#include "proto/shell_quote.h"

namespace podrun {

std::string ShellQuote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

}  // namespace podrun
