// Escaping control sequences for the terminal.
#include "launcher/output/control_escape.h"

#include <fmt/format.h>

namespace podrun {
namespace {

bool NeedsLook(unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f || c == 0xc2; }

// Length of an SGR sequence (ESC [ params m) at the start of `s`, or 0.
size_t SgrLength(std::string_view s) {
  if (s.size() < 3 || s[0] != '\x1b' || s[1] != '[') return 0;
  for (size_t i = 2; i < s.size(); ++i) {
    char c = s[i];
    if (c == 'm') return i + 1;
    if (!((c >= '0' && c <= '9') || c == ';' || c == ':')) return 0;
  }
  return 0;
}

}  // namespace

std::string_view EscapeControls(std::string_view text, std::string& scratch) {
  size_t i = 0;
  for (; i < text.size(); ++i) {
    if (NeedsLook(static_cast<unsigned char>(text[i]))) break;
  }
  if (i == text.size()) return text;
  scratch.assign(text.substr(0, i));
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\x1b') {
      if (size_t sgr = SgrLength(text.substr(i)); sgr > 0) {
        scratch.append(text.substr(i, sgr));
        i += sgr;
        continue;
      }
    }
    if (!NeedsLook(c)) {
      scratch += static_cast<char>(c);
    } else if (c == 0xc2) {  // U+0080..U+009F are C1 controls
      unsigned char next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
      if (next >= 0x80 && next <= 0x9f) {
        scratch += fmt::format("<U+{:04X}>", next);
        ++i;
      } else {
        scratch += static_cast<char>(c);
      }
    } else {
      scratch += '^';
      scratch += c == 0x7f ? '?' : static_cast<char>(c + 0x40);
    }
    ++i;
  }
  return scratch;
}

}  // namespace podrun
