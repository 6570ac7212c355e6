// Line-labelled output of workers.
#include "launcher/output/labelled_output.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "launcher/output/control_escape.h"

namespace podrun {

LabelledOutput::LabelledOutput(int out_fd, int err_fd, LabelledOutputOptions options)
    : fds_{out_fd, err_fd}, color_(options.color), prefix_(options.prefix) {
  for (int s = 0; s < 2; ++s) {
    terminal_[s] = options.terminal ? *options.terminal : ::isatty(fds_[s]) == 1;
    screen_progress_[s].emplace(terminal_[s]
                                    ? std::chrono::steady_clock::duration(kTerminalProgressInterval)
                                    : kFileProgressInterval,
                                options.clock);
    tee_progress_[s].emplace(kFileProgressInterval, options.clock);
  }
}

bool LabelledOutput::ShouldColor(int fd) {
  const char* no_color = std::getenv("NO_COLOR");
  return ::isatty(fd) && (no_color == nullptr || *no_color == '\0');
}

const std::string& LabelledOutput::CachedLabel(int worker, bool color) {
  auto& cache = labels_[color ? 1 : 0];
  auto it = cache.find(worker);
  if (it == cache.end()) it = cache.emplace(worker, MakeLabel(worker, color)).first;
  return it->second;
}

std::string LabelledOutput::MakeLabel(int worker, bool color) const {
  if (!prefix_) return "";
  std::string label = "[w" + std::to_string(worker) + "] ";
  if (!color) return label;
  static constexpr int kColors[] = {36, 32, 33, 35, 34, 31, 96, 92, 93, 95, 94, 91};
  int code = kColors[worker % (sizeof(kColors) / sizeof(kColors[0]))];
  return "\x1b[" + std::to_string(code) + "m[w" + std::to_string(worker) + "]\x1b[0m ";
}

void LabelledOutput::EmitScreen(int worker, Stream stream, std::string_view line) {
  int s = static_cast<int>(stream);
  std::string& out = pending_[s];
  out += screen_label_ ? *screen_label_ : CachedLabel(worker, color_);
  out.append(terminal_[s] ? EscapeControls(line, scratch_) : line);
  out += '\n';
}

void LabelledOutput::EmitTee(int worker, std::string_view line) {
  tee_pending_ += tee_label_ ? *tee_label_ : CachedLabel(worker, false);
  tee_pending_.append(line);
  tee_pending_ += '\n';
}

void LabelledOutput::OnLine(int worker, Stream stream, std::string_view line) {
  int s = static_cast<int>(stream);
  EmitScreen(worker, stream, line);
  screen_progress_[s]->Drop(worker);
  if (tee_fd_ >= 0 && !mirror_) {
    EmitTee(worker, line);
    tee_progress_[s]->Drop(worker);
  }
}

void LabelledOutput::OnProgress(int worker, Stream stream, std::string_view state) {
  int s = static_cast<int>(stream);
  if (screen_progress_[s]->Offer(worker, state)) EmitScreen(worker, stream, state);
  if (tee_fd_ >= 0 && !mirror_ && tee_progress_[s]->Offer(worker, state)) EmitTee(worker, state);
}

void LabelledOutput::Flush() {
  for (int s = 0; s < 2; ++s) {
    if (pending_[s].empty()) continue;
    WriteAll(fds_[s], pending_[s]);
    // Lines written while mirroring are the Tee's too (Write flushes after each call, so
    // pending_ holds only that call's lines, in order with what the Tee has had).
    if (mirror_ && !WriteAll(tee_fd_, pending_[s])) ++tee_failures_;
    pending_[s].clear();
  }
  if (!tee_pending_.empty()) {
    if (!WriteAll(tee_fd_, tee_pending_)) ++tee_failures_;
    tee_pending_.clear();
  }
}

void LabelledOutput::Write(int worker, Stream stream, std::string_view data) {
  const int s = static_cast<int>(stream);
  Flush();  // what Tick or Finish left, before this call's lines
  screen_label_ = &CachedLabel(worker, color_);
  tee_label_ = &CachedLabel(worker, false);
  mirror_ = TeeMirrors(s);
  splitters_[s][worker].Feed(
      data, [&](std::string_view line) { OnLine(worker, stream, line); },
      [&](std::string_view state) { OnProgress(worker, stream, state); });
  Flush();
  screen_label_ = tee_label_ = nullptr;
  mirror_ = false;
}

LineSplitter::Held LabelledOutput::Held(int worker, Stream stream) const {
  const auto& splitters = splitters_[static_cast<int>(stream)];
  auto it = splitters.find(worker);
  return it == splitters.end() ? LineSplitter::Held{} : it->second.held();
}

void LabelledOutput::Restore(int worker, Stream stream, LineSplitter::Held held) {
  splitters_[static_cast<int>(stream)][worker].Restore(std::move(held));
}

void LabelledOutput::Tick() {
  for (Stream stream : {Stream::kStdout, Stream::kStderr}) {
    int s = static_cast<int>(stream);
    // A mirrored Tee had its progress offered to the screen's throttle only (Write).
    const bool mirrored = TeeMirrors(s);
    screen_progress_[s]->TakeDue([&](int worker, std::string_view state) {
      EmitScreen(worker, stream, state);
      if (mirrored) EmitTee(worker, state);
    });
    if (tee_fd_ >= 0 && !mirrored) {
      tee_progress_[s]->TakeDue(
          [&](int worker, std::string_view state) { EmitTee(worker, state); });
    }
  }
  Flush();
}

void LabelledOutput::Finish(int worker) {
  for (Stream stream : {Stream::kStdout, Stream::kStderr}) {
    auto& splitters = splitters_[static_cast<int>(stream)];
    auto it = splitters.find(worker);
    if (it == splitters.end()) continue;
    it->second.Finish([&](std::string_view line) { OnLine(worker, stream, line); });
    splitters.erase(it);
  }
  Flush();
}

}  // namespace podrun
