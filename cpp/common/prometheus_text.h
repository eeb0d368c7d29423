// Writes the Prometheus text exposition format, version 0.0.4: per metric
// family one "# HELP" and one "# TYPE" line, then its samples
// `name{label="value",...} value`. Label values and help texts are escaped
// as the format requires (\\, \" and \n).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/metrics.h"

namespace headrace::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

class PrometheusText {
 public:
  // Starts a family; `type` is "counter", "gauge" or "histogram". Every
  // sample written until the next Family belongs to it.
  void Family(const std::string& name, const char* type, const std::string& help);
  void Sample(const std::string& name, const Labels& labels, double value);
  void Sample(const std::string& name, const Labels& labels, uint64_t value);
  void Sample(const std::string& name, const Labels& labels, int64_t value);
  // A histogram's series (cumulative `_bucket{le=...}`, `_sum`, `_count`),
  // values in nanoseconds exposed in seconds.
  void HistogramSeconds(const std::string& name, const Labels& labels,
                        const HistogramSnapshot& h);

  const std::string& text() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  void Series(const std::string& name, const Labels& labels, const char* extra_key,
              const std::string& extra_value);

  std::string out_;
};

// A double as Prometheus writes it ("+Inf", integers without exponent).
std::string FormatValue(double v);

}  // namespace headrace::metrics
