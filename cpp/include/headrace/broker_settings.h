// Every setting `headrace broker` understands, with its built-in default and
// the value a given set of settings gives it: what `headrace config show`
// prints. Settings are validated exactly as Broker::Create validates them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "headrace/status.h"

namespace headrace {

struct BrokerSetting {
  std::string name;           // the Kafka broker property, e.g. "log.retention.ms"
  std::string value;          // effective value once `settings` are applied
  std::string default_value;  // built-in default
  std::string doc;            // one line
  // The key of `settings` that gave `value`: `name` itself or an alias of it
  // ("log.retention.hours" for log.retention.ms, "broker.id" for node.id);
  // "" when the built-in default applies.
  std::string set_by;
};

// Every known setting, sorted by name. Errors: those of Broker::Create
// (InvalidArgument naming the key for a bad value, NotFound for an unknown
// key). Aliases (log.dir, log.retention.hours/minutes, log.roll.hours) are
// accepted but listed under the setting they set.
Result<std::vector<BrokerSetting>> DescribeBrokerSettings(
    const std::map<std::string, std::string>& settings);

}  // namespace headrace
