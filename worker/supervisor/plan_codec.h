// The wire format of the plan the agent hands a job's supervisor (supervisor.h): strings, each
// a 4-byte length (host order: both ends are one machine) and its bytes, back to back.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace podrun::agent {

std::string EncodeStrings(const std::vector<std::string>& strings);
// Throws std::runtime_error if malformed (a length past the end).
std::vector<std::string> DecodeStrings(std::string_view bytes);

}  // namespace podrun::agent
