// Line-labelled output of workers.
#include "launcher/output/labelled_output.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace podrun {

LabelledOutput::LabelledOutput(int out_fd, int err_fd, bool color, bool prefix)
    : fds_{out_fd, err_fd}, color_(color), prefix_(prefix) {}

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

void LabelledOutput::Emit(int worker, Stream stream, std::string_view line) {
  std::string& out = pending_[static_cast<int>(stream)];
  out += CachedLabel(worker, color_);
  out.append(line);
  out += '\n';
  if (tee_fd_ >= 0 && color_) {
    tee_pending_ += CachedLabel(worker, false);
    tee_pending_.append(line);
    tee_pending_ += '\n';
  }
}

void LabelledOutput::Flush(Stream stream) {
  std::string& out = pending_[static_cast<int>(stream)];
  if (out.empty()) return;
  WriteAll(fds_[static_cast<int>(stream)], out);
  if (tee_fd_ >= 0) {
    WriteAll(tee_fd_, color_ ? tee_pending_ : out);
    tee_pending_.clear();
  }
  out.clear();
}

void LabelledOutput::Write(int worker, Stream stream, std::string_view data) {
  splitters_[static_cast<int>(stream)][worker].Feed(
      data, [&](std::string_view line) { Emit(worker, stream, line); });
  Flush(stream);
}

void LabelledOutput::Finish(int worker) {
  for (Stream stream : {Stream::kStdout, Stream::kStderr}) {
    auto& splitters = splitters_[static_cast<int>(stream)];
    auto it = splitters.find(worker);
    if (it == splitters.end()) continue;
    it->second.Finish([&](std::string_view line) { Emit(worker, stream, line); });
    splitters.erase(it);
    Flush(stream);
  }
}

}  // namespace podrun
