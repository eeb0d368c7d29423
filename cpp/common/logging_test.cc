// The log line formats, JSON string escaping (with a fuzz-style round trip
// over random bytes) and the repeat limiter.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

#include "common/json_escape.h"
#include "common/log_limiter.h"
#include "common/logging.h"

namespace headrace {
namespace {

// A strict decoder of one JSON string literal (RFC 8259), independent of the
// encoder: rejects raw control characters, unknown escapes, bad \u digits
// and invalid UTF-8 in the literal bytes. Returns false on any violation.
bool IsValidUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<uint8_t>(s[i]);
    uint32_t cp;
    size_t n;
    if (c < 0x80) { cp = c; n = 1; }
    else if ((c & 0xE0) == 0xC0) { cp = c & 0x1F; n = 2; }
    else if ((c & 0xF0) == 0xE0) { cp = c & 0x0F; n = 3; }
    else if ((c & 0xF8) == 0xF0) { cp = c & 0x07; n = 4; }
    else return false;
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      const auto d = static_cast<uint8_t>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

void AppendUtf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool DecodeJsonString(const std::string& lit, std::string* out) {
  if (lit.size() < 2 || lit.front() != '"' || lit.back() != '"') return false;
  if (!IsValidUtf8(lit)) return false;
  out->clear();
  for (size_t i = 1; i + 1 < lit.size(); ++i) {
    const auto c = static_cast<uint8_t>(lit[i]);
    if (c < 0x20) return false;
    if (c == '"') return false;
    if (c != '\\') { out->push_back(static_cast<char>(c)); continue; }
    if (++i + 1 >= lit.size() + 1) return false;
    switch (lit[i]) {
      case '"': out->push_back('"'); break;
      case '\\': out->push_back('\\'); break;
      case '/': out->push_back('/'); break;
      case 'n': out->push_back('\n'); break;
      case 'r': out->push_back('\r'); break;
      case 't': out->push_back('\t'); break;
      case 'b': out->push_back('\b'); break;
      case 'f': out->push_back('\f'); break;
      case 'u': {
        if (i + 4 >= lit.size()) return false;
        uint32_t cp = 0;
        for (int k = 1; k <= 4; ++k) {
          const char h = lit[i + k];
          cp <<= 4;
          if (h >= '0' && h <= '9') cp |= h - '0';
          else if (h >= 'a' && h <= 'f') cp |= h - 'a' + 10;
          else if (h >= 'A' && h <= 'F') cp |= h - 'A' + 10;
          else return false;
        }
        if (cp >= 0xD800 && cp <= 0xDFFF) return false;  // never written by the encoder
        AppendUtf8(out, cp);
        i += 4;
        break;
      }
      default: return false;
    }
  }
  return true;
}

std::string Escaped(std::string_view s) {
  std::string out;
  AppendJsonString(&out, s);
  return out;
}

TEST(JsonEscape, ControlCharactersQuotesAndBackslashes) {
  EXPECT_EQ(Escaped("plain"), "\"plain\"");
  EXPECT_EQ(Escaped("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(Escaped("\n\r\t\b\f"), "\"\\n\\r\\t\\b\\f\"");
  EXPECT_EQ(Escaped(std::string("\0\x01\x1f\x7f", 4)), "\"\\u0000\\u0001\\u001f\\u007f\"");
  EXPECT_EQ(Escaped("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
}

TEST(JsonEscape, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(Escaped("\x80"), "\"\\ufffd\"");                    // stray continuation
  EXPECT_EQ(Escaped("\xc0\x80"), "\"\\ufffd\\ufffd\"");         // overlong NUL
  EXPECT_EQ(Escaped("\xe0\x80\xaf"), "\"\\ufffd\\ufffd\\ufffd\"");  // overlong '/'
  EXPECT_EQ(Escaped("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");  // surrogate U+D800
  EXPECT_EQ(Escaped("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // > U+10FFFF
  EXPECT_EQ(Escaped("\xe2\x82"), "\"\\ufffd\\ufffd\"");         // truncated euro sign
  EXPECT_EQ(Escaped("a\xffz"), "\"a\\ufffdz\"");
  EXPECT_EQ(Escaped("\xe2\x82\""), "\"\\ufffd\\ufffd\\\"\"");   // truncated before a quote
}

// Random byte strings (weighted towards the interesting bytes): the output is
// always a valid JSON string literal; valid UTF-8 input decodes back to
// itself; other input decodes to at most 3 bytes per input byte.
TEST(JsonEscape, FuzzRandomBytesAlwaysGiveValidJson) {
  std::mt19937 rng(20261125);
  const uint8_t interesting[] = {0x00, 0x08, 0x0a, 0x1f, 0x22, 0x5c, 0x7f, 0x80, 0xbf, 0xc0,
                                 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff};
  for (int round = 0; round < 20000; ++round) {
    std::string in(rng() % 24, '\0');
    for (char& c : in) {
      c = static_cast<char>(rng() % 2 ? interesting[rng() % sizeof(interesting)] : rng() % 256);
    }
    const std::string lit = Escaped(in);
    std::string back;
    ASSERT_TRUE(DecodeJsonString(lit, &back)) << "round " << round << ": " << lit;
    if (IsValidUtf8(in)) {
      EXPECT_EQ(back, in) << "round " << round;
    } else {
      EXPECT_LE(back.size(), 3 * in.size());
      EXPECT_NE(back.find("\xef\xbf\xbd"), std::string::npos) << "round " << round;
    }
  }
  // Random valid UTF-8 (every plane, no surrogates) round-trips exactly.
  for (int round = 0; round < 5000; ++round) {
    std::string in;
    for (int k = rng() % 12; k > 0; --k) {
      uint32_t cp = rng() % 0x110000;
      if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
      AppendUtf8(&in, cp);
    }
    std::string back;
    ASSERT_TRUE(DecodeJsonString(Escaped(in), &back));
    EXPECT_EQ(back, in);
  }
}

TEST(LogFormat, TextAndJsonLines) {
  timespec when{1795608000, 123456789};  // 2026-11-25T12:00:00.123Z
  EXPECT_EQ(FormatLogLine(LogFormat::kText, when, LogLevel::kWarn, "headrace.topic",
                          "created topic t\nsecond line", {{"topic", "t", false}}),
            "2026-11-25T12:00:00.123Z WARN headrace.topic: created topic t\\nsecond line\n");
  EXPECT_EQ(FormatLogLine(LogFormat::kJson, when, LogLevel::kInfo, "headrace.topic",
                          "created \"t\"",
                          {{"topic", "t\x01", false}, {"partitions", "3", true},
                           {"msg", "dropped", false}}),
            "{\"ts\":\"2026-11-25T12:00:00.123Z\",\"level\":\"INFO\",\"logger\":\"headrace.topic\","
            "\"msg\":\"created \\\"t\\\"\",\"topic\":\"t\\u0001\",\"partitions\":3}\n");
  LogFormat f;
  EXPECT_TRUE(ParseLogFormat("JSON", &f));
  EXPECT_EQ(f, LogFormat::kJson);
  EXPECT_FALSE(ParseLogFormat("yaml", &f));
}

TEST(LogLimiter, FirstAtOnceThenOncePerIntervalWithTheCount) {
  LogLimiter limiter(std::chrono::seconds(10));
  const auto t0 = LogLimiter::Clock::time_point() + std::chrono::hours(1);
  uint64_t left_out = 99;
  EXPECT_TRUE(limiter.Admit("/data: ENOSPC", t0, &left_out));
  EXPECT_EQ(left_out, 0u);
  for (int i = 1; i <= 5; ++i) {
    EXPECT_FALSE(limiter.Admit("/data: ENOSPC", t0 + std::chrono::seconds(i), &left_out));
  }
  EXPECT_TRUE(limiter.Admit("/other: EIO", t0 + std::chrono::seconds(1), &left_out));
  EXPECT_TRUE(limiter.Admit("/data: ENOSPC", t0 + std::chrono::seconds(11), &left_out));
  EXPECT_EQ(left_out, 5u);
  EXPECT_EQ(limiter.SuppressedNote(5), " (5 more like it since the last such line)");
  EXPECT_EQ(limiter.SuppressedNote(0), "");
}

}  // namespace
}  // namespace headrace
