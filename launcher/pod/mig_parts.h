// The workload policy and the instance template podrun makes for a MIG slice (mig_gcloud.h;
// docs/reference.md, "TPU7x and other Compute Engine slices"), both named MigPartName(group):
// made, or reused only when podrun made them for this very group with the same settings (their
// description says so, MigPartOwnerOf), made again when the settings differ, and deleted only
// when made for this group.
#pragma once

#include <string>

#include "launcher/pod/tpu_create.h"
#include "launcher/pod/tpu_discovery.h"

namespace podrun {

// What MakeMigParts made, or may have made (a create stopped in flight may have reached the API).
struct MigPartsMade {
  bool policy = false;
  bool instance_template = false;
  bool remembered = false;  // nothing was asked: both as this process made or checked them
};

// Makes the workload policy and the instance template of group `mig` for `create`, at once
// (each gcloud is about a second of start-up), or reuses them; returns the policy's URL (its
// selfLink), as the group's create takes it, and sets `made`. Parts this process made or
// checked for the same group and settings within the hour are not asked about again (a keeper
// remaking the group after a preemption: a second less); both are immutable on Compute Engine,
// so they are as they were unless deleted since (ForgetMigParts). Throws as RunGcloud;
// Error(kUsage) when a part of that name is the user's or podrun made it for another group;
// Error(kUnreachable) when the policy shows no selfLink. `what` names the slice in messages.
std::string MakeMigParts(const SliceRef& mig, const std::string& what, const TpuCreate& create,
                         MigPartsMade* made);

// Drops what MakeMigParts remembers of group `mig`'s parts: the next asks gcloud (a group create
// that found one of them missing, after MakeMigParts answered from memory, tries once more).
void ForgetMigParts(const SliceRef& mig);

// Deletes what `made` says MakeMigParts made (the template, then the policy; a group using them
// must be gone). Throws as RunGcloud.
void DeleteMadeMigParts(const SliceRef& mig, const std::string& what, const MigPartsMade& made);

// Deletes the template and the policy podrun made for group `mig` (their description names it),
// at once; one of the user's or of another group stays. True when one was deleted. Throws as
// RunGcloud.
bool DeleteOwnedMigParts(const SliceRef& mig, const std::string& what);

}  // namespace podrun
