// Splits a byte stream into lines, holding a partial line until its newline arrives.
#pragma once

#include <cstring>
#include <string>
#include <string_view>

namespace podrun {

class LineSplitter {
 public:
  // Calls on_line(std::string_view) for each complete line in `data` (without its '\n'),
  // prepending whatever partial line was held from earlier calls.
  template <class OnLine>
  void Feed(std::string_view data, OnLine&& on_line) {
    while (!data.empty()) {
      const void* nl = std::memchr(data.data(), '\n', data.size());
      if (nl == nullptr) {
        partial_.append(data);
        return;
      }
      size_t len = static_cast<const char*>(nl) - data.data();
      if (partial_.empty()) {
        on_line(data.substr(0, len));
      } else {
        partial_.append(data.substr(0, len));
        on_line(std::string_view(partial_));
        partial_.clear();
      }
      data.remove_prefix(len + 1);
    }
  }

  // Emits a final line that had no newline, if any.
  template <class OnLine>
  void Finish(OnLine&& on_line) {
    if (!partial_.empty()) {
      on_line(std::string_view(partial_));
      partial_.clear();
    }
  }

  bool has_partial() const { return !partial_.empty(); }

 private:
  std::string partial_;
};

}  // namespace podrun
