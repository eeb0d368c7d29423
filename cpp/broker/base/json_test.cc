#include "broker/base/json.h"

#include <gtest/gtest.h>

namespace headrace::broker::json {
namespace {

TEST(JsonTest, RoundTripsTheShapesWeUse) {
  Object o;
  o["n"] = Value(int64_t{-9223372036854775807LL - 1});
  o["s"] = Value("quote\" back\\ nl\n tab\t \x01 ü");
  o["b"] = Value(true);
  o["z"] = Value(nullptr);
  o["a"] = Value(Array{Value(1), Value("x"), Value(Object{})});
  std::string text = Write(Value(o));
  auto back = Parse(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(Write(back.value()), text);
  EXPECT_EQ(back->Find("n")->as_int(), INT64_MIN);
  EXPECT_EQ(back->Find("s")->as_string(), "quote\" back\\ nl\n tab\t \x01 ü");
  EXPECT_TRUE(back->Find("b")->as_bool());
  EXPECT_TRUE(back->Find("z")->is_null());
  EXPECT_EQ(back->Find("a")->as_array().size(), 3u);
}

TEST(JsonTest, DecodesUnicodeEscapes) {
  auto v = Parse(R"({"k": "\u00fc\ud83d\ude00\/"})");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->Find("k")->as_string(), "\xC3\xBC\xF0\x9F\x98\x80/");
}

TEST(JsonTest, RejectsMalformedInput) {
  for (const char* bad : {"", "{", "{\"a\":}", "[1,]", "{\"a\":1,\"a\":2}", "1.5", "tru",
                          "\"unterminated", "{} x", "\"\\ud800\"", "99999999999999999999"}) {
    auto r = Parse(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << bad;
    }
  }
  std::string deep(100, '[');
  EXPECT_FALSE(Parse(deep).ok());
}

TEST(JsonTest, InvalidUtf8IsRejectedOnReadAndReplacedOnWrite) {
  EXPECT_FALSE(Parse("\"\xff\"").ok());
  EXPECT_FALSE(Parse("\"\xc0\x80\"").ok());  // overlong
  std::string text = Write(Value(Object{{"k", Value(std::string("a\xff" "b"))}}));
  auto back = Parse(text);
  ASSERT_TRUE(back.ok()) << text;
  EXPECT_EQ(back->Find("k")->as_string(), "a\xEF\xBF\xBD" "b");
}

TEST(JsonTest, IntegersAtTheLimits) {
  EXPECT_EQ(Parse("9223372036854775807")->as_int(), INT64_MAX);
  EXPECT_FALSE(Parse("9223372036854775808").ok());
  EXPECT_FALSE(Parse("1e3").ok());
}

}  // namespace
}  // namespace headrace::broker::json
