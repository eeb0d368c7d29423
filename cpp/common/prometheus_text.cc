#include "common/prometheus_text.h"

#include <cmath>
#include <cstdio>

namespace headrace::metrics {
namespace {

void AppendEscaped(std::string& out, const std::string& s, bool quote) {
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && quote) out += "\\\"";
    else out += c;
  }
}

}  // namespace

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.9g", v);
  }
  return buf;
}

void PrometheusText::Family(const std::string& name, const char* type, const std::string& help) {
  out_ += "# HELP " + name + " ";
  AppendEscaped(out_, help, /*quote=*/false);
  out_ += "\n# TYPE " + name + " " + type + "\n";
}

void PrometheusText::Series(const std::string& name, const Labels& labels, const char* extra_key,
                            const std::string& extra_value) {
  out_ += name;
  if (labels.empty() && extra_key == nullptr) {
    out_ += ' ';
    return;
  }
  out_ += '{';
  bool first = true;
  auto label = [&](const std::string& k, const std::string& v) {
    if (!first) out_ += ',';
    first = false;
    out_ += k + "=\"";
    AppendEscaped(out_, v, /*quote=*/true);
    out_ += '"';
  };
  for (const auto& [k, v] : labels) label(k, v);
  if (extra_key != nullptr) label(extra_key, extra_value);
  out_ += "} ";
}

void PrometheusText::Sample(const std::string& name, const Labels& labels, double value) {
  Series(name, labels, nullptr, "");
  out_ += FormatValue(value) + "\n";
}

void PrometheusText::Sample(const std::string& name, const Labels& labels, uint64_t value) {
  Series(name, labels, nullptr, "");
  out_ += std::to_string(value) + "\n";
}

void PrometheusText::Sample(const std::string& name, const Labels& labels, int64_t value) {
  Series(name, labels, nullptr, "");
  out_ += std::to_string(value) + "\n";
}

void PrometheusText::HistogramSeconds(const std::string& name, const Labels& labels,
                                      const HistogramSnapshot& h) {
  uint64_t cumulative = 0;
  for (size_t b = 0; b < Histogram::kBuckets; ++b) {
    cumulative += h.counts[b];
    Series(name + "_bucket", labels, "le", FormatValue(Histogram::UpperBound(b) / 1e9));
    out_ += std::to_string(cumulative) + "\n";
  }
  Series(name + "_bucket", labels, "le", "+Inf");
  out_ += std::to_string(h.count) + "\n";
  Sample(name + "_sum", labels, static_cast<double>(h.sum) / 1e9);
  Sample(name + "_count", labels, h.count);
}

}  // namespace headrace::metrics
