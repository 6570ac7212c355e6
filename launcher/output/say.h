// Say: podrun's one way of telling the user something on stderr ("podrun: <message>").
#pragma once

#include <string>

namespace podrun {

// Writes "podrun: <message>\n" to stderr, in place of the live line if one is drawn
// (LiveProgress). Thread-safe: one write per message.
void Say(const std::string& message);

// From now on, each message of Say starts with the UTC time to the millisecond
// ("2026-11-28T10:59:13.342Z podrun: ..."): a keeper's log, read days later, says when.
void StampSayings();

}  // namespace podrun
