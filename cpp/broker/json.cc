#include "broker/json.h"

#include <charconv>

namespace headrace::broker::json {

const Value* Value::Find(const std::string& key) const {
  if (!is_object()) return nullptr;
  const Object& o = as_object();
  auto it = o.find(key);
  return it == o.end() ? nullptr : &it->second;
}

namespace {

class Parser {
 public:
  explicit Parser(std::string_view t) : t_(t) {}

  Result<Value> ParseDocument() {
    HR_ASSIGN_OR_RETURN(Value v, ParseValue(0));
    SkipSpace();
    if (pos_ != t_.size()) return Error("trailing characters");
    return v;
  }

 private:
  Status Error(const std::string& what) const {
    return Status::Corruption("json: " + what + " at byte " + std::to_string(pos_));
  }
  void SkipSpace() {
    while (pos_ < t_.size() &&
           (t_[pos_] == ' ' || t_[pos_] == '\n' || t_[pos_] == '\r' || t_[pos_] == '\t')) {
      ++pos_;
    }
  }
  bool Consume(std::string_view word) {
    if (t_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Result<Value> ParseValue(int depth) {
    if (depth > 64) return Error("nesting too deep");
    SkipSpace();
    if (pos_ >= t_.size()) return Error("unexpected end");
    char c = t_[pos_];
    if (c == '{') return ParseObject(depth);
    if (c == '[') return ParseArray(depth);
    if (c == '"') {
      HR_ASSIGN_OR_RETURN(std::string s, ParseString());
      return Value(std::move(s));
    }
    if (Consume("null")) return Value(nullptr);
    if (Consume("true")) return Value(true);
    if (Consume("false")) return Value(false);
    return ParseInt();
  }

  Result<Value> ParseInt() {
    size_t start = pos_;
    if (pos_ < t_.size() && t_[pos_] == '-') ++pos_;
    while (pos_ < t_.size() && t_[pos_] >= '0' && t_[pos_] <= '9') ++pos_;
    if (pos_ < t_.size() && (t_[pos_] == '.' || t_[pos_] == 'e' || t_[pos_] == 'E')) {
      return Error("non-integer number");
    }
    int64_t v = 0;
    auto [p, ec] = std::from_chars(t_.data() + start, t_.data() + pos_, v);
    if (ec != std::errc() || p != t_.data() + pos_ || pos_ == start) {
      pos_ = start;
      return Error("invalid value");
    }
    return Value(v);
  }

  Result<uint32_t> ParseHex4() {
    if (pos_ + 4 > t_.size()) return Error("short \\u escape");
    uint32_t v = 0;
    auto [p, ec] = std::from_chars(t_.data() + pos_, t_.data() + pos_ + 4, v, 16);
    if (ec != std::errc() || p != t_.data() + pos_ + 4) return Error("bad \\u escape");
    pos_ += 4;
    return v;
  }

  static void AppendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  Result<uint32_t> ParseEscapedCodePoint() {
    HR_ASSIGN_OR_RETURN(uint32_t cp, ParseHex4());
    if (cp >= 0xD800 && cp < 0xDC00) {
      if (!Consume("\\u")) return Error("lone surrogate");
      HR_ASSIGN_OR_RETURN(uint32_t lo, ParseHex4());
      if (lo < 0xDC00 || lo >= 0xE000) return Error("bad surrogate pair");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    return cp;
  }

  Result<std::string> ParseString() {
    ++pos_;  // opening quote
    std::string out;
    while (pos_ < t_.size()) {
      char c = t_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) return Error("control character in string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= t_.size()) break;
      char e = t_[pos_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          HR_ASSIGN_OR_RETURN(uint32_t cp, ParseEscapedCodePoint());
          AppendUtf8(out, cp);
          break;
        }
        default: return Error("bad escape");
      }
    }
    return Error("unterminated string");
  }

  Result<Value> ParseArray(int depth) {
    ++pos_;
    Array a;
    SkipSpace();
    if (Consume("]")) return Value(std::move(a));
    for (;;) {
      HR_ASSIGN_OR_RETURN(Value v, ParseValue(depth + 1));
      a.push_back(std::move(v));
      SkipSpace();
      if (Consume("]")) return Value(std::move(a));
      if (!Consume(",")) return Error("expected ',' or ']'");
    }
  }

  Result<Value> ParseObject(int depth) {
    ++pos_;
    Object o;
    SkipSpace();
    if (Consume("}")) return Value(std::move(o));
    for (;;) {
      SkipSpace();
      if (pos_ >= t_.size() || t_[pos_] != '"') return Error("expected a key");
      HR_ASSIGN_OR_RETURN(std::string key, ParseString());
      SkipSpace();
      if (!Consume(":")) return Error("expected ':'");
      HR_ASSIGN_OR_RETURN(Value v, ParseValue(depth + 1));
      if (!o.emplace(std::move(key), std::move(v)).second) return Error("duplicate key");
      SkipSpace();
      if (Consume("}")) return Value(std::move(o));
      if (!Consume(",")) return Error("expected ',' or '}'");
    }
  }

  std::string_view t_;
  size_t pos_ = 0;
};

void WriteString(std::string& out, const std::string& s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (u < 0x20) {
      out += "\\u00";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xf]);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

void WriteValue(std::string& out, const Value& v, int indent) {
  std::string pad(indent * 2 + 2, ' ');
  std::string close_pad(indent * 2, ' ');
  if (v.is_null()) {
    out += "null";
  } else if (v.is_bool()) {
    out += v.as_bool() ? "true" : "false";
  } else if (v.is_int()) {
    out += std::to_string(v.as_int());
  } else if (v.is_string()) {
    WriteString(out, v.as_string());
  } else if (v.is_array()) {
    const Array& a = v.as_array();
    if (a.empty()) { out += "[]"; return; }
    out += "[\n";
    for (size_t i = 0; i < a.size(); ++i) {
      out += pad;
      WriteValue(out, a[i], indent + 1);
      out += i + 1 < a.size() ? ",\n" : "\n";
    }
    out += close_pad + "]";
  } else {
    const Object& o = v.as_object();
    if (o.empty()) { out += "{}"; return; }
    out += "{\n";
    size_t i = 0;
    for (const auto& [k, val] : o) {
      out += pad;
      WriteString(out, k);
      out += ": ";
      WriteValue(out, val, indent + 1);
      out += ++i < o.size() ? ",\n" : "\n";
    }
    out += close_pad + "}";
  }
}

}  // namespace

Result<Value> Parse(std::string_view text) { return Parser(text).ParseDocument(); }

std::string Write(const Value& v) {
  std::string out;
  WriteValue(out, v, 0);
  out.push_back('\n');
  return out;
}

}  // namespace headrace::broker::json
