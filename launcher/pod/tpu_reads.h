// The reads of a Cloud TPU node: its description, its queued resource's and its workers' guest
// attributes. Through the Cloud TPU API with gcloud's token where podrun may use it
// (cloud_api_get.h: tens of milliseconds, where each gcloud is a second of Python start-up, on
// every poll of a recovery), else through gcloud (tpu_gcloud.h). Either way the answer is JSON
// that tpu_node.h and tpu_host_keys.h read (the API's resource, as gcloud prints it).
#pragma once

#include <optional>
#include <string>

#include "launcher/pod/slice_ref.h"

namespace podrun {

// `tpu-vm describe`: the node; nullopt when it does not exist. Throws GcloudError as RunGcloud.
std::optional<std::string> ReadTpuNode(const SliceRef& node, const std::string& what);

// The same for a node that must be there: throws GcloudError kNotFound naming it when it is not
// (gcloud's own words when gcloud was asked).
std::string ReadExistingTpuNode(const SliceRef& node, const std::string& what);

// `queued-resources describe`: the queued resource named as the node; nullopt when none.
std::optional<std::string> ReadQueuedResource(const SliceRef& node, const std::string& what);

// `tpu-vm get-guest-attributes`: every worker's guest attributes. Throws GcloudError (kNotFound
// when the node does not exist).
std::string ReadTpuGuestAttributes(const SliceRef& node, const std::string& what);

}  // namespace podrun
