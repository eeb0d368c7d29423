// JSON values for the broker's own small documents (the metadata file,
// cluster state from the control plane), parsed by nlohmann-json (json.cc). Supports null, booleans, 64-bit integers, strings (UTF-8,
// \uXXXX escapes with surrogate pairs), arrays and objects. No floating
// point: a number with a fraction or exponent is an error, as are duplicate
// keys. Not for untrusted input of unbounded size (the whole text is held in
// memory; nesting is capped at 64).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "headrace/status.h"

namespace headrace::broker::json {

class Value;
using Array = std::vector<Value>;
using Object = std::map<std::string, Value>;  // keys sorted when written

class Value {
 public:
  Value() : v_(nullptr) {}
  Value(std::nullptr_t) : v_(nullptr) {}
  Value(bool b) : v_(b) {}
  Value(int64_t i) : v_(i) {}
  Value(int32_t i) : v_(static_cast<int64_t>(i)) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(Array a) : v_(std::make_shared<Array>(std::move(a))) {}
  Value(Object o) : v_(std::make_shared<Object>(std::move(o))) {}

  bool is_null() const { return std::holds_alternative<std::nullptr_t>(v_); }
  bool is_bool() const { return std::holds_alternative<bool>(v_); }
  bool is_int() const { return std::holds_alternative<int64_t>(v_); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }
  bool is_array() const { return std::holds_alternative<std::shared_ptr<Array>>(v_); }
  bool is_object() const { return std::holds_alternative<std::shared_ptr<Object>>(v_); }

  // REQUIRES: the matching is_*() is true.
  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const Array& as_array() const { return *std::get<std::shared_ptr<Array>>(v_); }
  const Object& as_object() const { return *std::get<std::shared_ptr<Object>>(v_); }

  // Member `key` of an object, or nullptr if absent or this is no object.
  const Value* Find(const std::string& key) const;

 private:
  std::variant<std::nullptr_t, bool, int64_t, std::string, std::shared_ptr<Array>,
               std::shared_ptr<Object>>
      v_;
};

// Errors: Corruption("json: <what> at byte N").
Result<Value> Parse(std::string_view text);
// Pretty-printed with two-space indentation and a trailing newline; invalid
// UTF-8 in a string is written as U+FFFD (the output is always valid JSON).
std::string Write(const Value& v);

}  // namespace headrace::broker::json
