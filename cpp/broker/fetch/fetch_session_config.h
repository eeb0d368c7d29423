// Settings of the incremental fetch session cache (KIP-227): Kafka's
// max.incremental.fetch.session.cache.slots. docs/configuration.md lists it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "broker/config/config_table.h"

namespace headrace::broker::fetch {

struct FetchSessionConfig {
  // max.incremental.fetch.session.cache.slots: most fetch sessions kept at
  // once (0: none; every fetch is then a full one, session id 0).
  int32_t cache_slots = 1000;

  Status Set(const std::string& key, const std::string& value);
  std::vector<SettingDoc> Describe() const;
  // Moves every fetch-session setting out of `props`. Errors as Set.
  Status Extract(std::map<std::string, std::string>& props);
};

}  // namespace headrace::broker::fetch
