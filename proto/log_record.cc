// Encoding, appending and reading of sequenced log records (see log_record.h).
#include "proto/log_record.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "proto/crc32.h"
#include "proto/write_all.h"

namespace podrun {
namespace {

constexpr uint8_t kMagic0 = 'P';
constexpr uint8_t kMagic1 = 'R';
constexpr uint8_t kFormatVersion = 1;
constexpr size_t kCrcOffset = 24;

template <typename T>
void PutLe(char* out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) {
    out[i] = static_cast<char>(static_cast<uint64_t>(value) >> (8 * i));
  }
}

template <typename T>
T GetLe(const char* in) {
  uint64_t value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) {
    value |= static_cast<uint64_t>(static_cast<uint8_t>(in[i])) << (8 * i);
  }
  return static_cast<T>(value);
}

// The CRC of a record whose header is at `header`: bytes 0..23, the data, and the flags word
// (bytes 28..31) only when it is not 0, so that a record of an older podrun keeps its CRC.
uint32_t Crc(const char* header, const char* data, size_t data_len) {
  const uint32_t crc = Crc32(Crc32(0, header, kCrcOffset), data, data_len);
  const char* flags = header + kCrcOffset + 4;
  return GetLe<uint32_t>(flags) == 0 ? crc : Crc32(crc, flags, 4);
}

// Reads exactly `len` bytes at `offset` unless the file ends first; returns bytes read.
size_t PreadFull(int fd, char* buf, size_t len, uint64_t offset) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd, buf + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "read log");
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

struct Header {
  LogStream stream;
  uint32_t length;
  uint64_t seq;
  int64_t time_ns;
  uint32_t crc;
  uint32_t flags;
};

// Parses a header; false if it is not a valid one.
bool ParseHeader(const char* h, Header* out) {
  if (static_cast<uint8_t>(h[0]) != kMagic0 || static_cast<uint8_t>(h[1]) != kMagic1 ||
      static_cast<uint8_t>(h[2]) != kFormatVersion || static_cast<uint8_t>(h[3]) > 1) {
    return false;
  }
  out->stream = static_cast<LogStream>(h[3]);
  out->length = GetLe<uint32_t>(h + 4);
  out->seq = GetLe<uint64_t>(h + 8);
  out->time_ns = GetLe<int64_t>(h + 16);
  out->crc = GetLe<uint32_t>(h + kCrcOffset);
  out->flags = GetLe<uint32_t>(h + kCrcOffset + 4);
  return out->length <= kMaxLogRecordDataBytes && out->seq != 0;
}

// Fills the kLogRecordHeaderBytes at `h` for `record` (its CRC included).
void EncodeHeader(const LogRecord& record, char* h) {
  if (record.data.size() > kMaxLogRecordDataBytes) {
    throw std::invalid_argument("log record larger than 16 MiB");
  }
  std::memset(h, 0, kLogRecordHeaderBytes);
  h[0] = static_cast<char>(kMagic0);
  h[1] = static_cast<char>(kMagic1);
  h[2] = static_cast<char>(kFormatVersion);
  h[3] = static_cast<char>(record.stream);
  PutLe<uint32_t>(h + 4, static_cast<uint32_t>(record.data.size()));
  PutLe<uint64_t>(h + 8, record.seq);
  PutLe<int64_t>(h + 16, record.time_ns);
  PutLe<uint32_t>(h + kCrcOffset + 4, record.flags);
  PutLe<uint32_t>(h + kCrcOffset, Crc(h, record.data.data(), record.data.size()));
}

}  // namespace

std::string EncodeLogRecord(const LogRecord& record) {
  std::string out(kLogRecordHeaderBytes, '\0');
  EncodeHeader(record, out.data());
  out += record.data;
  return out;
}

void AppendRecord(int fd, const LogRecord& record) {
  char header[kLogRecordHeaderBytes];
  EncodeHeader(record, header);
  // Header and data in one writev: no copy of the data, one write as before.
  const std::string_view pieces[] = {std::string_view(header, sizeof header), record.data};
  if (!WriteAllOf(fd, pieces)) {
    throw std::system_error(errno, std::generic_category(), "append log record");
  }
}

std::vector<LogRecord> DecodeLogRecords(std::string_view bytes) {
  std::vector<LogRecord> records;
  size_t offset = 0;
  while (offset + kLogRecordHeaderBytes <= bytes.size()) {
    const char* h = bytes.data() + offset;
    Header header;
    if (!ParseHeader(h, &header)) break;
    if (bytes.size() - offset - kLogRecordHeaderBytes < header.length) break;
    const char* data = h + kLogRecordHeaderBytes;
    if (Crc(h, data, header.length) != header.crc) break;
    records.push_back({header.seq, header.time_ns, header.stream, std::string(data, header.length),
                       header.flags});
    offset += kLogRecordHeaderBytes + header.length;
  }
  return records;
}

std::optional<size_t> LogRecordSizeAt(std::string_view bytes) {
  Header header;
  if (bytes.size() < kLogRecordHeaderBytes || !ParseHeader(bytes.data(), &header)) {
    return std::nullopt;
  }
  return kLogRecordHeaderBytes + header.length;
}

LogReader::LogReader(std::filesystem::path path, uint64_t from_seq)
    : path_(std::move(path)), from_seq_(from_seq) {}

bool LogReader::OpenIfPresent() {
  if (fd_) return true;
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    throw std::system_error(errno, std::generic_category(), "open " + path_.string());
  }
  fd_.reset(fd);
  return true;
}

std::vector<LogRecord> LogReader::ReadSome(size_t max_data_bytes) {
  std::vector<LogRecord> records;
  if (!OpenIfPresent()) return records;
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) {
    throw std::system_error(errno, std::generic_category(), "stat " + path_.string());
  }
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  size_t data_bytes = 0;
  char h[kLogRecordHeaderBytes];
  while (data_bytes < max_data_bytes && offset_ + kLogRecordHeaderBytes <= file_size) {
    if (PreadFull(fd_.get(), h, sizeof h, offset_) < sizeof h) break;
    Header header;
    if (!ParseHeader(h, &header)) break;
    const uint64_t end = offset_ + kLogRecordHeaderBytes + header.length;
    if (end > file_size) break;    // not completely written yet
    if (header.seq < from_seq_) {  // skip without reading the data
      offset_ = end;
      last_seq_ = header.seq;
      continue;
    }
    LogRecord record{header.seq, header.time_ns, header.stream, std::string(header.length, '\0'),
                     header.flags};
    if (PreadFull(fd_.get(), record.data.data(), header.length, offset_ + kLogRecordHeaderBytes) <
        header.length) {
      break;
    }
    if (Crc(h, record.data.data(), record.data.size()) != header.crc) break;  // torn
    offset_ = end;
    last_seq_ = header.seq;
    data_bytes += record.data.size();
    records.push_back(std::move(record));
  }
  return records;
}

uint64_t LastSeqInLog(const std::filesystem::path& path) {
  // Skipping reads only headers (complete by length; CRCs are not checked).
  LogReader reader(path, UINT64_MAX);
  while (true) {
    uint64_t before = reader.offset();
    reader.ReadSome();
    if (reader.offset() == before) break;
  }
  return reader.last_seq();
}

}  // namespace podrun
