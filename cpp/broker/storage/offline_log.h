// OfflineLog: the stand-in Log of a partition whose directory is offline
// (the partition could not be found or opened because its directory
// failed). Every operation fails with the directory's IOError and it
// reports itself failed, so the Partition over it is offline from the
// start and answers KAFKA_STORAGE_ERROR; offsets read as 0.
#pragma once

#include <memory>
#include <string>

#include "headrace/log.h"

namespace headrace::broker {

std::unique_ptr<Log> MakeOfflineLog(std::string dir, Status cause);

}  // namespace headrace::broker
