// DumpError: what an error of a binlog dump (COM_BINLOG_DUMP, read through
// Connector/C's replication API) means to the watcher.
//
// Pure; thread-safe.
#ifndef MSGQ_ENGINE_BINLOG_DUMP_ERROR_H_
#define MSGQ_ENGINE_BINLOG_DUMP_ERROR_H_

#include <string>

#include "absl/status/status.h"

namespace msgq {

// FAILED_PRECONDITION: the dump was refused for lack of privileges (a
// configuration problem, not an outage; the message says which GRANT);
// ALREADY_EXISTS: another replica with the same server id took the dump
// over; OUT_OF_RANGE: the server cannot read the binlog at the requested
// position (purged, reset); UNAVAILABLE otherwise.
absl::Status DumpError(unsigned int code, const std::string& message);

}  // namespace msgq

#endif  // MSGQ_ENGINE_BINLOG_DUMP_ERROR_H_
