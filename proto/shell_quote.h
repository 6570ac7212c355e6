// Quoting for a POSIX shell: shared by the launcher (commands sent over SSH) and the agent
// (the setup's stamp command).
#pragma once

#include <string>
#include <string_view>

namespace podrun {

// `text` as one word for a POSIX shell (single quotes; a ' inside becomes '\'').
std::string ShellQuote(std::string_view text);

}  // namespace podrun
