#include "launcher/base/error.h"

#include <gtest/gtest.h>

#include <string>

namespace podrun {
namespace {

// A class derived from Error, as AgentRefusal and TransportRefused are.
class DerivedError : public Error {
 public:
  explicit DerivedError(const std::string& message) : Error(ExitCode::kUnreachable, message) {}
};

// What a handler that adds context and rethrows lets through: the exception as caught above it.
std::exception_ptr ThroughContextHandler(const std::exception_ptr& thrown) {
  try {
    try {
      std::rethrow_exception(thrown);
    } catch (Error& e) {
      e.AddContext("w3 (10.0.0.5)");
      throw;
    }
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

TEST(Error, ContextKeepsTheCode) {
  auto caught = ThroughContextHandler(std::make_exception_ptr(UsageError("bad spec")));
  try {
    std::rethrow_exception(caught);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    EXPECT_STREQ(e.what(), "w3 (10.0.0.5): bad spec");
  }
}

// The derived class survives: a handler above can still tell it from a plain Error.
TEST(Error, ContextKeepsTheClass) {
  auto caught = ThroughContextHandler(std::make_exception_ptr(DerivedError("refused")));
  try {
    std::rethrow_exception(caught);
  } catch (const DerivedError& e) {
    EXPECT_EQ(e.code(), ExitCode::kUnreachable);
    EXPECT_STREQ(e.what(), "w3 (10.0.0.5): refused");
  } catch (const std::exception& e) {
    ADD_FAILURE() << "sliced to a plain Error: " << e.what();
  }
}

TEST(Error, ContextsNestOutermostFirst) {
  Error e(ExitCode::kFailed, "No space left on device");
  e.AddContext("upload agent");
  e.AddContext("w3");
  EXPECT_STREQ(e.what(), "w3: upload agent: No space left on device");
  EXPECT_EQ(e.code(), ExitCode::kFailed);
}

}  // namespace
}  // namespace podrun
