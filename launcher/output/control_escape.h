// Makes a worker's line safe to print on a terminal (docs/reference.md, Output): SGR colour
// sequences (ESC [ digits/;/: m) pass; every other control character is shown visibly in
// caret notation (ESC as "^[", BEL as "^G", DEL as "^?"), so an OSC title or clipboard
// write (ESC ] ...), cursor movement or a bell cannot act. UTF-8 encoded C1 controls
// (U+0080..U+009F) are shown as "<U+009B>". Tabs pass. Only for terminals: files and pipes
// get the bytes unchanged.
#pragma once

#include <string>
#include <string_view>

namespace podrun {

// `text` itself when nothing needs escaping (no copy), else the escaped text in `scratch`.
std::string_view EscapeControls(std::string_view text, std::string& scratch);

}  // namespace podrun
