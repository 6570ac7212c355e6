// The launcher's event-loop thread.
#include "launcher/ssh/event_loop.h"

namespace podrun {

EventLoop::EventLoop() : guard_(context_.get_executor()), thread_([this] { context_.run(); }) {}

EventLoop::~EventLoop() {
  guard_.reset();
  context_.stop();
  thread_.join();
}

}  // namespace podrun
