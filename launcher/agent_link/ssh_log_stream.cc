// See ssh_log_stream.h.
#include "launcher/agent_link/ssh_log_stream.h"

#include <fmt/format.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <mutex>
#include <optional>
#include <vector>

#include "launcher/base/error.h"
#include "launcher/persist/held_exec.h"
#include "launcher/ssh/ssh_channel.h"
#include "proto/log_wire.h"
#include "proto/shell_quote.h"

namespace podrun {
namespace {

// More than a channel's window (libssh's WINDOWBASE, 1.28 MB) plus what it may hold: each read
// takes all that libssh holds, whose window it tops up again after every read.
constexpr size_t kReadChunkBytes = size_t{4} << 20;
constexpr size_t kMaxErrorText = 4096;

// The thread on_batch and on_done run on (see the header).
asio::thread_pool& DeliveryThread() {
  static asio::thread_pool pool(1);
  return pool;
}

struct StreamState;

// Undelivered bytes of every stream together, and the streams paused for it (delivery thread
// and loop threads).
std::atomic<size_t> total_undelivered{0};
std::mutex paused_mutex;
std::vector<std::weak_ptr<StreamState>> paused_streams;

struct StreamState {
  StreamState(asio::any_io_executor ex, AgentLogReader::OnBatch batch,
              AgentLogReader::OnStreamDone done)
      : executor(std::move(ex)),
        wake(std::make_shared<asio::steady_timer>(executor)),
        on_batch(std::move(batch)),
        on_done(std::move(done)) {}

  asio::any_io_executor executor;
  std::shared_ptr<asio::steady_timer> wake;  // loop thread
  std::atomic<bool> cancelled{false};
  std::atomic<size_t> undelivered{0};
  std::atomic<bool> paused{false};               // the reader waits for the delivery thread
  bool read_armed = false, write_armed = false;  // loop thread
  AgentLogReader::OnBatch on_batch;
  AgentLogReader::OnStreamDone on_done;
  // Delivery thread only:
  bool stopped_by_reader = false;  // on_batch returned false
  uint64_t next_seq = 1;

  void WakeOnLoop(const std::shared_ptr<StreamState>& self) {
    asio::post(executor, [self] { self->wake->cancel(); });
  }
};

class Handle : public AgentLogStream {
 public:
  explicit Handle(std::shared_ptr<StreamState> state) : state_(std::move(state)) {}
  void Cancel() override {
    state_->cancelled = true;
    state_->WakeOnLoop(state_);
  }

 private:
  std::shared_ptr<StreamState> state_;
};

void Deliver(const std::shared_ptr<StreamState>& s, std::vector<LogRecord>&& records) {
  size_t bytes = 0;
  for (const LogRecord& r : records) bytes += r.data.size();
  s->undelivered += bytes;
  total_undelivered += bytes;
  asio::post(DeliveryThread(), [s, records = std::move(records), bytes]() mutable {
    if (!s->stopped_by_reader) {
      const uint64_t next = records.back().seq + 1;
      if (s->on_batch(std::move(records))) {
        s->next_seq = next;
      } else {
        s->stopped_by_reader = true;
        s->cancelled = true;
      }
    }
    s->undelivered -= bytes;
    total_undelivered -= bytes;
    if ((s->stopped_by_reader || s->undelivered < kMaxUndeliveredBytes / 2) &&
        total_undelivered < kMaxUndeliveredTotal && s->paused.exchange(false)) {
      s->WakeOnLoop(s);
    }
    if (total_undelivered < kMaxUndeliveredTotal / 2) {
      std::vector<std::weak_ptr<StreamState>> paused;
      {
        std::lock_guard lock(paused_mutex);
        paused.swap(paused_streams);
      }
      for (const auto& weak : paused) {
        auto p = weak.lock();
        if (p && p->paused.exchange(false)) p->WakeOnLoop(p);  // it looks again for itself
      }
    }
  });
}

bool TooMuchUndelivered(const StreamState& s) {
  return s.undelivered >= kMaxUndeliveredBytes || total_undelivered >= kMaxUndeliveredTotal;
}

// Hands how the stream ended to on_done, after every batch before it.
void Finish(const std::shared_ptr<StreamState>& s, AgentLogStreamEnd end,
            std::exception_ptr error) {
  asio::post(DeliveryThread(), [s, end, error]() mutable {
    end.next_seq = s->next_seq;
    if (s->stopped_by_reader || (!error && !end.end && s->cancelled)) {
      end = AgentLogStreamEnd{};
      end.next_seq = s->next_seq;
      end.cancelled = true;
      error = nullptr;
    }
    s->on_done(end, error);
  });
}

void Arm(const std::shared_ptr<StreamState>& s, SshSession& session) {
  auto& fd = session.waiter();
  if (!s->read_armed) {
    s->read_armed = true;
    fd.async_wait(asio::posix::stream_descriptor::wait_read, [s](boost::system::error_code) {
      s->read_armed = false;
      s->wake->cancel();
    });
  }
  if (!s->write_armed && (ssh_get_poll_flags(session.raw()) & SSH_WRITE_PENDING)) {
    s->write_armed = true;
    fd.async_wait(asio::posix::stream_descriptor::wait_write, [s](boost::system::error_code) {
      s->write_armed = false;
      s->wake->cancel();
    });
  }
  session.WakeOnIo(s->wake);
}

asio::awaitable<void> Wait(
    const std::shared_ptr<StreamState>& s,
    asio::steady_timer::time_point until = asio::steady_timer::time_point::max()) {
  s->wake->expires_at(until);
  boost::system::error_code ignored;
  co_await s->wake->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
}

// Waits for the delivery thread to catch up with `s` (it wakes the stream): not reading meanwhile
// lets the channel's window close, since libssh (and the holder's copy) tops it up after every
// read whatever it holds already, so reading on would let a buffer grow with the output.
asio::awaitable<void> PauseUntilDelivered(const std::shared_ptr<StreamState>& s) {
  s->paused = true;
  {
    std::lock_guard lock(paused_mutex);
    paused_streams.push_back(s);
  }
  if (TooMuchUndelivered(*s)) co_await Wait(s);
}

// Reads the channel until the end frame, EOF, an error or Cancel; returns how it ended.
asio::awaitable<AgentLogStreamEnd> ReadStream(std::shared_ptr<StreamState> s,
                                              std::shared_ptr<SshSession> session,
                                              SshLogStreamRequest request) {
  auto lost = [&](const std::string& why) {
    return Error(ExitCode::kUnreachable,
                 fmt::format("{}: log stream: {}", request.description, why));
  };
  std::unique_ptr<SshChannel> channel =
      co_await SshChannel::Exec(*session, StreamLogCommand(request));
  ssh_channel c = channel->raw();
  WireDecoder decoder;
  // One buffer for every stream of the loop: it holds nothing across a suspension.
  static thread_local std::string buffer(kReadChunkBytes, '\0');
  std::string error_text;
  // stream-log sends a heartbeat when it has nothing else to send: silence means a dead link.
  auto last_heard = std::chrono::steady_clock::now();
  // Until stream-log's first bytes, the worker's login shell may still be starting (a slow
  // .bashrc, conda's init): a longer limit, or every reconnect would give up the same way.
  bool heard = false;
  auto limit = [&] { return heard ? kWireSilenceLimit : kWireStartLimit; };
  while (!s->cancelled) {
    if (TooMuchUndelivered(*s)) {
      co_await PauseUntilDelivered(s);
      last_heard = std::chrono::steady_clock::now();  // not reading is not silence
      continue;
    }
    // Everything libssh holds for this channel, so that what it buffers stays within the
    // window; records are handed on as they are decoded.
    size_t got = 0;
    const uint64_t bytes_in = session->bytes_in();
    while (!decoder.end() && !TooMuchUndelivered(*s)) {
      try {
        if (decoder.HasUndecoded()) {  // what an earlier read brought comes first
          decoder.Continue();
        } else {
          int n = ssh_channel_read_nonblocking(c, buffer.data(), kReadChunkBytes, 0);
          session->NoteIo();
          if (n == SSH_ERROR) throw lost("connection lost: " + session->LastError());
          if (n <= 0) break;
          got += static_cast<size_t>(n);
          decoder.Feed(std::string_view(buffer.data(), static_cast<size_t>(n)));
        }
      } catch (const Error&) {
        throw;                                 // the connection, said already
      } catch (const std::runtime_error& e) {  // a malformed stream
        throw lost(e.what());
      }
      std::vector<LogRecord> records = decoder.TakeRecords();
      if (!records.empty()) Deliver(s, std::move(records));
    }
    int n = ssh_channel_read_nonblocking(c, buffer.data(), kMaxErrorText, 1);
    session->NoteIo();
    if (n > 0 && error_text.size() < kMaxErrorText) {
      error_text.append(buffer.data(), static_cast<size_t>(n));
    }
    if (got > 0 || n > 0) {
      last_heard = std::chrono::steady_clock::now();
      heard = true;
    }
    if (decoder.end()) {
      auto end = LogStreamEndFromBytes(*decoder.end());
      if (!end) throw lost("a malformed end of the log");
      co_return *end;
    }
    // What the decoder still holds came before the channel's end: it is decoded first.
    const bool undecoded = decoder.HasUndecoded();
    if (!undecoded && (ssh_channel_is_eof(c) || ssh_channel_is_closed(c))) {
      ExitStatus status = co_await channel->WaitExitStatus();
      while (!error_text.empty() && error_text.back() == '\n') error_text.pop_back();
      if (status.exit_code == 0 && !request.follow) co_return AgentLogStreamEnd{};
      if (status.exit_code == kStreamLogRefused) {
        throw AgentRefusal(
            fmt::format("{}: agent stream-log: {}", request.description, error_text));
      }
      throw lost(fmt::format("podrun-agent stream-log ended early ({}){}", status.ToString(),
                             error_text.empty() ? "" : ": " + error_text));
    }
    if (session->lost()) throw lost("connection lost: no answer to keepalives");
    // The stderr read may have brought more of stdout from the socket (SshSession::bytes_in).
    // A pass that stopped at the undelivered limit may have left bytes in libssh's buffer,
    // which no socket wait would see: the top of the loop pauses for the delivery thread.
    if (got > 0 || undecoded || TooMuchUndelivered(*s) || session->bytes_in() != bytes_in ||
        session->ReadyNow()) {
      // More may be there already: look again after the other channels had their turn.
      co_await asio::post(s->executor, asio::use_awaitable);
      continue;
    }
    if (std::chrono::steady_clock::now() - last_heard >= limit()) {
      throw lost(fmt::format("nothing, not even a heartbeat, for {} s",
                             std::chrono::seconds(limit()).count()));
    }
    Arm(s, *session);
    co_await Wait(s, last_heard + limit());
  }
  co_return AgentLogStreamEnd{};  // cancelled (Finish says so)
}

// The same over a channel the connection holder opened on its kept session (held_exec.h): its
// frames in place of the channel's reads. Not reading pauses the holder's copy, and so the channel.
asio::awaitable<AgentLogStreamEnd> ReadHeldStream(std::shared_ptr<StreamState> s, HeldExec held,
                                                  const SshLogStreamRequest& request) {
  auto lost = [&](const std::string& why) {
    return Error(ExitCode::kUnreachable,
                 fmt::format("{}: log stream: {}", request.description, why));
  };
  // How often a silent stream looks whether it was cancelled (Cancel wakes the SSH reader only).
  constexpr auto kCancelCheck = std::chrono::milliseconds(250);
  WireDecoder decoder;
  std::string error_text;
  std::optional<ExitStatus> exited;
  auto last_heard = std::chrono::steady_clock::now();
  bool heard = false;
  while (!s->cancelled) {
    if (TooMuchUndelivered(*s)) {
      co_await PauseUntilDelivered(s);
      last_heard = std::chrono::steady_clock::now();
      continue;
    }
    try {
      if (decoder.HasUndecoded()) decoder.Continue();
    } catch (const std::runtime_error& e) {
      throw lost(e.what());
    }
    std::vector<LogRecord> records = decoder.TakeRecords();
    if (!records.empty()) Deliver(s, std::move(records));
    if (decoder.end()) {
      auto end = LogStreamEndFromBytes(*decoder.end());
      if (!end) throw lost("a malformed end of the log");
      co_return *end;
    }
    if (decoder.HasUndecoded()) continue;
    if (exited) {
      while (!error_text.empty() && error_text.back() == '\n') error_text.pop_back();
      if (exited->exit_code == 0 && !request.follow) co_return AgentLogStreamEnd{};
      if (exited->exit_code == kStreamLogRefused) {
        throw AgentRefusal(
            fmt::format("{}: agent stream-log: {}", request.description, error_text));
      }
      throw lost(fmt::format("podrun-agent stream-log ended early ({}){}", exited->ToString(),
                             error_text.empty() ? "" : ": " + error_text));
    }
    const auto limit = last_heard + (heard ? kWireSilenceLimit : kWireStartLimit);
    const auto now = std::chrono::steady_clock::now();
    if (now >= limit) {
      throw lost(fmt::format("nothing, not even a heartbeat, for {} s",
                             std::chrono::duration_cast<std::chrono::seconds>(
                                 heard ? kWireSilenceLimit : kWireStartLimit)
                                 .count()));
    }
    std::optional<HeldExec::Frame> frame =
        co_await held.NextFrame(std::min(limit, now + kCancelCheck));
    if (!frame) continue;
    last_heard = std::chrono::steady_clock::now();
    heard = true;
    switch (frame->type) {
      case FrameType::kStdout:
        try {
          decoder.Feed(frame->payload);
        } catch (const std::runtime_error& e) {
          throw lost(e.what());
        }
        break;
      case FrameType::kStderr:
        if (error_text.size() < kMaxErrorText) error_text += frame->payload;
        break;
      case FrameType::kExit:
        try {
          exited = DecodeExitStatus(frame->payload);
        } catch (const std::exception& e) {
          throw lost(e.what());
        }
        break;
      case FrameType::kLost:
        throw Error(ExitCode::kUnreachable,
                    fmt::format("{}: log stream: {}", request.description, frame->payload));
    }
  }
  co_return AgentLogStreamEnd{};  // cancelled (Finish says so)
}

asio::awaitable<void> RunHeld(std::shared_ptr<StreamState> s, std::filesystem::path holder,
                              HolderRequest held_request, SshLogStreamRequest request) {
  AgentLogStreamEnd end;
  std::exception_ptr error;
  try {
    std::optional<HeldExec> held = co_await HeldExec::Start(holder, held_request);
    if (!held) {
      throw Error(
          ExitCode::kUnreachable,
          fmt::format("{}: log stream: the connection holder is gone", request.description));
    }
    end = co_await ReadHeldStream(s, std::move(*held), request);
  } catch (...) {
    error = std::current_exception();
  }
  Finish(s, end, error);
}

asio::awaitable<void> Run(std::shared_ptr<StreamState> s,
                          std::function<std::shared_ptr<SshSession>()> get_session,
                          SshLogStreamRequest request) {
  AgentLogStreamEnd end;
  std::exception_ptr error;
  try {
    std::shared_ptr<SshSession> session = get_session();
    if (!session) {
      throw Error(ExitCode::kUnreachable, fmt::format("{}: not connected", request.description));
    }
    end = co_await ReadStream(s, session, std::move(request));
  } catch (...) {
    error = std::current_exception();
  }
  Finish(s, end, error);
}

}  // namespace

std::string StreamLogCommand(const SshLogStreamRequest& r) {
  return "sh -c " +
         ShellQuote(fmt::format(
             "exec \"{}\" stream-log --job {} --attempt {} --from {}{} --compress", r.agent_path,
             ShellQuote(r.job_id), r.attempt, r.from_seq, r.follow ? " --follow" : ""));
}

std::shared_ptr<AgentLogStream> StartHeldLogStream(asio::any_io_executor executor,
                                                   const std::filesystem::path& holder,
                                                   HolderRequest held_request,
                                                   SshLogStreamRequest request,
                                                   AgentLogReader::OnBatch on_batch,
                                                   AgentLogReader::OnStreamDone on_done) {
  auto state = std::make_shared<StreamState>(executor, std::move(on_batch), std::move(on_done));
  state->next_seq = request.from_seq;
  held_request.command = StreamLogCommand(request);
  asio::co_spawn(executor, RunHeld(state, holder, std::move(held_request), std::move(request)),
                 asio::detached);
  return std::make_shared<Handle>(state);
}

std::shared_ptr<AgentLogStream> StartSshLogStream(
    asio::any_io_executor executor, std::function<std::shared_ptr<SshSession>()> session,
    SshLogStreamRequest request, AgentLogReader::OnBatch on_batch,
    AgentLogReader::OnStreamDone on_done) {
  auto state = std::make_shared<StreamState>(executor, std::move(on_batch), std::move(on_done));
  state->next_seq = request.from_seq;
  asio::co_spawn(executor, Run(state, std::move(session), std::move(request)), asio::detached);
  return std::make_shared<Handle>(state);
}

}  // namespace podrun
