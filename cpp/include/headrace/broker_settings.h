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

// The generated reference of docs/configuration.md, from the key tables:
// the broker table (BrokerConfig's keys and every registered family's) and
// the topic table, as Markdown, between the markers
// "<!-- BEGIN GENERATED: headrace config docs -->" and
// "<!-- END GENERATED -->" (included). `headrace config docs` prints it;
// tests/test_configs_docs.py fails when the file and the tables disagree.
std::string BrokerConfigDocs();

}  // namespace headrace
