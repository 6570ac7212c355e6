// A MIG slice's workload policy and instance template (see mig_parts.h).
#include "launcher/pod/mig_parts.h"

#include <fmt/format.h>

#include <chrono>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>

#include "launcher/base/error.h"
#include "launcher/base/parallel_for.h"
#include "launcher/pod/gcloud_run.h"
#include "launcher/pod/mig_gcloud.h"
#include "launcher/pod/mig_reads.h"

namespace podrun {
namespace {

// Runs `part(0)` and `part(1)` at once; rethrows the first one's failure, if any.
template <typename Part>
void BothAtOnce(Part&& part) {
  std::exception_ptr failed[2];
  ParallelFor(2, [&](size_t i) {
    try {
      part(i);
    } catch (...) {
      failed[i] = std::current_exception();
    }
  });
  for (const std::exception_ptr& e : failed) {
    if (e) std::rethrow_exception(e);
  }
}

// The slice's template or policy (`part`): one made by podrun for this group with settings
// whose digest is `digest` (a recreation, a create interrupted before) is used as it is; one
// made for it with other settings (the spec's create: changed; an older podrun wrote none) is
// deleted and made again, so that the change reaches the VMs; else it is created. Returns what
// gcloud printed of it; `made` is set when this call created it (or its create was stopped in
// flight). Throws as RunGcloud, also when one of the user's, or one podrun made for another
// group, has that name.
std::string MakePart(const SliceRef& mig, const std::string& what, const GcloudCommand& create,
                     const char* part, const std::string& digest, bool* made) {
  const bool policy = std::string_view(part) == "policy";
  const GcloudCommand remove =
      policy ? GcloudMigPolicyCommand(mig, "delete") : GcloudMigTemplateCommand(mig, "delete");
  std::optional<std::string> described = ReadMigPart(mig, policy, what);
  for (int tries = 0;; ++tries) {
    if (!described) {
      try {
        std::string printed = RunGcloud(create, what);
        *made = true;
        return printed;
      } catch (const GcloudError& e) {
        *made =
            e.failure() == GcloudFailure::kInterrupted || e.failure() == GcloudFailure::kTimedOut;
        // Made meanwhile (a second podrun): described again below.
        if (e.failure() != GcloudFailure::kExists) throw;
        described = ReadMigPart(mig, policy, what);
        if (!described) throw;  // made and deleted again meanwhile: the error stands
      }
    }
    const std::optional<MigPartOwner> owner = MigPartOwnerOf(*described);
    if (!owner) {
      throw Error(ExitCode::kUsage,
                  fmt::format("{}: a {} named {} exists and podrun did not make it: rename the "
                              "group or delete it",
                              what, part, MigPartName(mig.name)));
    }
    if (owner->mig != mig.name) {
      throw Error(ExitCode::kUsage,
                  fmt::format("{}: a {} named {} exists that podrun made for MIG {}: rename the "
                              "group or delete that one",
                              what, part, MigPartName(mig.name),
                              owner->mig.empty() ? "(not named)" : owner->mig));
    }
    if (owner->settings == digest) return *described;
    // Once: a second podrun making it again with other settings meanwhile is an error, not a
    // loop.
    if (tries > 0) {
      throw Error(ExitCode::kUnreachable,
                  fmt::format("{}: the {} {} was made again meanwhile with other settings (a "
                              "second podrun with another create:?)",
                              what, part, MigPartName(mig.name)));
    }
    RunGcloudUnlessNotFound(remove, what);
    described.reset();
  }
}

// The parts this process made or checked: by group, the settings' digests and the policy's URL.
class RememberedParts {
 public:
  static RememberedParts& Of() {
    static RememberedParts parts;
    return parts;
  }

  std::optional<std::string> PolicyUrl(const SliceRef& mig, const std::string& digests) {
    std::lock_guard lock(mutex_);
    auto it = parts_.find(Key(mig));
    if (it == parts_.end() || it->second.digests != digests ||
        std::chrono::steady_clock::now() - it->second.at > kFor) {
      return std::nullopt;
    }
    return it->second.policy_url;
  }
  void Remember(const SliceRef& mig, const std::string& digests, const std::string& policy_url) {
    std::lock_guard lock(mutex_);
    parts_[Key(mig)] = {digests, policy_url, std::chrono::steady_clock::now()};
  }
  void Forget(const SliceRef& mig) {
    std::lock_guard lock(mutex_);
    parts_.erase(Key(mig));
  }

 private:
  struct Parts {
    std::string digests, policy_url;
    std::chrono::steady_clock::time_point at;
  };
  static constexpr auto kFor = std::chrono::hours(1);
  static std::string Key(const SliceRef& mig) {
    return fmt::format("{}/{}/{}", mig.project.value_or(""), mig.zone, mig.name);
  }

  std::mutex mutex_;
  std::map<std::string, Parts> parts_;  // guarded by mutex_
};

}  // namespace

void ForgetMigParts(const SliceRef& mig) { RememberedParts::Of().Forget(mig); }

std::string MakeMigParts(const SliceRef& mig, const std::string& what, const TpuCreate& create,
                         MigPartsMade* made) {
  const std::string digests = MigPolicyDigest(mig, create) + " " + MigTemplateDigest(create);
  if (std::optional<std::string> url = RememberedParts::Of().PolicyUrl(mig, digests)) {
    made->remembered = true;
    return *url;
  }
  made->remembered = false;
  std::string printed_policy;
  BothAtOnce([&](size_t i) {
    if (i == 0) {
      printed_policy = MakePart(mig, what, GcloudMigPolicyCreateCommand(mig, create), "policy",
                                MigPolicyDigest(mig, create), &made->policy);
    } else {
      MakePart(mig, what, GcloudMigTemplateCreateCommand(mig, create), "template",
               MigTemplateDigest(create), &made->instance_template);
    }
  });
  std::string policy_url = PolicyUrlOf(printed_policy);
  if (policy_url.empty()) {
    throw Error(ExitCode::kUnreachable,
                fmt::format("{}: gcloud's answer for workload policy {} has no selfLink", what,
                            MigPartName(mig.name)));
  }
  RememberedParts::Of().Remember(mig, digests, policy_url);
  return policy_url;
}

void DeleteMadeMigParts(const SliceRef& mig, const std::string& what, const MigPartsMade& made) {
  ForgetMigParts(mig);
  if (made.instance_template)
    RunGcloudUnlessNotFound(GcloudMigTemplateCommand(mig, "delete"), what);
  if (made.policy) RunGcloudUnlessNotFound(GcloudMigPolicyCommand(mig, "delete"), what);
}

bool DeleteOwnedMigParts(const SliceRef& mig, const std::string& what) {
  ForgetMigParts(mig);
  using Command = GcloudCommand (*)(const SliceRef&, const std::string&);
  const Command parts[2] = {&GcloudMigTemplateCommand, &GcloudMigPolicyCommand};
  bool deleted[2] = {false, false};
  BothAtOnce([&](size_t i) {
    const std::optional<std::string> described = ReadMigPart(mig, i == 1, what);
    const std::optional<MigPartOwner> owner = described ? MigPartOwnerOf(*described) : std::nullopt;
    if (!owner || owner->mig != mig.name) return;
    deleted[i] = RunGcloudUnlessNotFound(parts[i](mig, "delete"), what) != std::nullopt;
  });
  return deleted[0] || deleted[1];
}

}  // namespace podrun
