// JSON string literals from arbitrary bytes (log messages, topic names,
// client ids): the result is always valid JSON text in UTF-8.
#pragma once

#include <string>
#include <string_view>

namespace headrace {

// Appends `s` to `out` as a quoted JSON string. `"` and `\` are escaped,
// control characters (U+0000-U+001F, U+007F) become \n, \t, \r, \b, \f or
// \u00XX; valid UTF-8 is copied as is; every byte that does not start a valid
// UTF-8 sequence (stray continuation bytes, truncated sequences, overlong
// forms, UTF-16 surrogates, code points above U+10FFFF, 0xF5-0xFF) becomes
// U+FFFD (written as \ufffd), one per byte.
void AppendJsonString(std::string* out, std::string_view s);

}  // namespace headrace
