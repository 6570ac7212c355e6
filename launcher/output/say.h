// Say: podrun's one way of telling the user something on stderr ("podrun: <message>").
#pragma once

#include <string>

namespace podrun {

// Writes "podrun: <message>\n" to stderr, in place of the live line if one is drawn
// (LiveProgress). Thread-safe: one write per message.
void Say(const std::string& message);

}  // namespace podrun
