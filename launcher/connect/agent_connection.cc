// Connecting to a pod's agents: the links, greeting each agent, its clock offset.
#include "launcher/connect/agent_connection.h"

#include "launcher/connect/clock_sync.h"
#include "launcher/persist/holder_client.h"
#include "launcher/store/podrun_home.h"

namespace podrun {
namespace {

// Hellos per kMeasureClock connection, to measure the agent's clock offset (each narrows what
// the offset can be: clock_sync.h).
constexpr int kClockProbes = 5;

}  // namespace

std::unique_ptr<AgentLink> MakeAgentLink(const Pod& pod, int index, const AgentLinkContext& ctx) {
  if (pod.local > 0) return MakeLocalAgentLink(index, ctx);
  return MakeSshAgentLink(pod.workers.at(index), pod.ssh, ctx);
}

AgentConnection::AgentConnection(int index, std::unique_ptr<AgentLink> link)
    : index_(index), link_(std::move(link)), description_(link_->description()) {}

std::shared_ptr<AgentClient> AgentConnection::Connect(Greeting greeting) {
  std::lock_guard connect(connect_mutex_);
  auto client = std::make_shared<AgentClient>(link_->Connect());
  if (greeting != Greeting::kHello) {
    clock_ =
        MeasureClockOffset(*client, kClockProbes, &hello_, greeting == Greeting::kMeasureClock);
    clock_offset_ns_ = clock_.offset_ns;
    clock_measured_ = true;
  } else {
    hello_ = client->Hello();
  }
  std::lock_guard lock(client_mutex_);
  client_ = client;
  return client;
}

std::shared_ptr<AgentClient> AgentConnection::client() const {
  std::lock_guard lock(client_mutex_);
  return client_;
}

AgentConnections::AgentConnections(const Pod& pod, const std::filesystem::path& local_root,
                                   const std::vector<int>& indexes, bool relay_agent)
    : binary_(AgentBinary::Locate()),
      loop_(std::make_unique<EventLoop>()),
      window_(std::make_unique<FanOutWindow>(loop_->executor(), pod.fanout)),
      jumps_(std::make_unique<JumpHosts>(loop_->executor())) {
  if (relay_agent) relay_.emplace(loop_->executor());
  AgentLinkContext context{loop_.get(), window_.get(), jumps_.get(), &binary_, relay(), local_root,
                           {}};
  if (pod.persist) {
    if (auto holder = HolderClient::Reach(PodrunHome())) context.holder = holder->socket();
  }
  for (int index : indexes) {
    connections_.push_back(
        std::make_unique<AgentConnection>(index, MakeAgentLink(pod, index, context)));
  }
}

AgentConnections::~AgentConnections() {
  EndAgentRelay();  // its lenders' channels belong to the links' sessions
  connections_.clear();
  loop_->Run([this]() -> asio::awaitable<void> {
    jumps_->Close();
    co_return;
  }());
}

void AgentConnections::EndAgentRelay() {
  if (relay_) loop_->Run(relay_->End());
}

}  // namespace podrun
