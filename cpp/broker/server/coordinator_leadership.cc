#include "broker/server/coordinator_leadership.h"

namespace headrace::broker {

std::string IdList(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (int32_t id : ids) {
    if (out.size() > 1) out += ',';
    out += std::to_string(id);  // appended, not "," + string: GCC 12 -Wrestrict false positive
  }
  out += ']';
  return out;
}

}  // namespace headrace::broker
