// Reading the end of a job's log for `podrun top` (see log_tail.h).
#include "worker/job/log_tail.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "proto/unique_fd.h"

namespace podrun::agent {
namespace {

// Candidate offsets whose header chain holds are CRC-checked; a job whose output imitates record
// headers could otherwise make every offset a candidate. The real first record follows at most
// the tail of one record, so a few false candidates at most come before it.
constexpr int kMaxCrcCandidates = 16;

// True if records chain from `offset` by their headers alone to the window's end or to a torn
// last record (a header, or data, cut off by the window's end); `complete` counts whole records.
bool HeadersChain(std::string_view window, size_t offset, size_t* complete) {
  *complete = 0;
  while (offset < window.size()) {
    const std::string_view rest = window.substr(offset);
    if (rest.size() < kLogRecordHeaderBytes) return true;  // a torn header
    const std::optional<size_t> size = LogRecordSizeAt(rest);
    if (!size) return false;
    if (*size > rest.size()) return true;  // torn data
    offset += *size;
    ++*complete;
  }
  return true;
}

// Reads up to `len` bytes at `offset`; returns how many there were.
size_t ReadFully(int fd, char* buf, size_t len, uint64_t offset,
                 const std::filesystem::path& path) {
  size_t done = 0;
  while (done < len) {
    const ssize_t n = ::pread(fd, buf + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::system_error(errno, std::generic_category(), "read " + path.string());
    if (n == 0) break;  // truncated meanwhile
    done += static_cast<size_t>(n);
  }
  return done;
}

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// `text` without leading and trailing whitespace, cut to at most `max` bytes without splitting a
// UTF-8 character.
std::string Trimmed(std::string_view text, size_t max) {
  while (!text.empty() && IsBlank(text.back())) text.remove_suffix(1);
  while (!text.empty() && IsBlank(text.front())) text.remove_prefix(1);
  if (text.size() > max) {
    size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text = text.substr(0, cut);
  }
  return std::string(text);
}

// The last line with text in `out`, as LastLine describes; "" if none.
std::string LastLineOf(std::string_view out) {
  while (!out.empty()) {
    size_t begin = out.rfind('\n', out.size() - 1);
    begin = begin == std::string_view::npos ? 0 : begin + 1;
    std::string_view line = out.substr(begin);
    out = out.substr(0, begin == 0 ? 0 : begin - 1);
    // A progress bar redraws with '\r': its latest state is the last part with text.
    while (!line.empty()) {
      const size_t cr = line.rfind('\r');
      const std::string_view part = cr == std::string_view::npos ? line : line.substr(cr + 1);
      std::string text = Trimmed(part, kLastLineMaxBytes);
      if (!text.empty()) return text;
      if (cr == std::string_view::npos) break;
      line = line.substr(0, cr);
    }
  }
  return "";
}

}  // namespace

WindowRecords TailRecords(std::string_view window) {
  int crc_checks = 0;
  for (size_t offset = 0; offset + kLogRecordHeaderBytes <= window.size(); ++offset) {
    size_t complete = 0;
    if (!LogRecordSizeAt(window.substr(offset)) || !HeadersChain(window, offset, &complete) ||
        complete == 0) {
      continue;
    }
    std::vector<LogRecord> records = DecodeLogRecords(window.substr(offset));
    if (records.size() == complete) return {offset, std::move(records)};
    if (++crc_checks == kMaxCrcCandidates) break;
  }
  return {};
}

std::string LastLine(const std::vector<LogRecord>& records) {
  if (records.empty()) return "";
  const LogStream last = records.back().stream;
  for (const LogStream stream :
       {last, last == LogStream::kStdout ? LogStream::kStderr : LogStream::kStdout}) {
    std::string out;
    for (const LogRecord& r : records) {
      if (r.stream == stream) out += r.data;
    }
    if (std::string line = LastLineOf(out); !line.empty()) return line;
  }
  return "";
}

LogTail ReadLogTail(const std::filesystem::path& path) {
  LogTail tail;
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return tail;
    throw std::system_error(errno, std::generic_category(), "open " + path.string());
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    throw std::system_error(errno, std::generic_category(), "stat " + path.string());
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  const uint64_t start = size > kLogTailWindowBytes ? size - kLogTailWindowBytes : 0;
  std::string window(size - start, '\0');
  window.resize(ReadFully(fd.get(), window.data(), window.size(), start, path));
  const auto [begin, records] = TailRecords(window);
  if (records.empty()) return tail;
  uint64_t end = start + begin;  // where the last complete record ends in the file
  for (const LogRecord& r : records) end += kLogRecordHeaderBytes + r.data.size();
  tail.last_seq = records.back().seq;
  const uint64_t framing = kLogRecordHeaderBytes * tail.last_seq;
  tail.output_bytes = end > framing ? end - framing : 0;
  tail.last_output_ns = records.back().time_ns;
  tail.last_line = LastLine(records);
  return tail;
}

}  // namespace podrun::agent
