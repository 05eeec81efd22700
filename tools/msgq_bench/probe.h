// The machine probe: what a durable commit costs on this machine, measured
// when a run starts so that every durable figure is printed next to it.
//
// ProbeMachine reads the server's data directory and buffer pool size, times
// write + fdatasync of 4 KiB in a scratch file of that directory (the
// filesystem the redo log and binlog are synced on), and counts autocommitted
// single-row INSERTs into a scratch InnoDB table on the given connection for
// a while (the single-row commit ceiling: one client, each commit waiting for
// its own redo and binlog syncs). The scratch file and table are removed.
//
// Thread-compatible: uses the caller's connection from the calling thread and
// blocks for the probe's duration (about commit_duration plus the fsyncs).
#ifndef MSGQ_TOOLS_MSGQ_BENCH_PROBE_H_
#define MSGQ_TOOLS_MSGQ_BENCH_PROBE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/sql/mysql_connection.h"
#include "tools/msgq_bench/bench_results.pb.h"

namespace msgq::bench {

// Write + fdatasync samples ProbeMachine takes.
inline constexpr int kFsyncSamples = 200;

// `scratch_table` is a qualified name (`db`.`t`) recreated and dropped. The
// MySQL error when the server cannot be read or the table not written; an
// fsync probe that cannot run (the data directory not writable from here) is
// no error: Machine.fsync_error says why.
absl::StatusOr<pb::Machine> ProbeMachine(MysqlConnection& conn,
                                         const std::string& scratch_table,
                                         absl::Duration commit_duration);

// Times `samples` write + fdatasync of 4 KiB at offset 0 of a new scratch
// file in `dir` (removed afterwards) into `machine`'s fsync fields. An error
// when the file cannot be created or written.
absl::Status ProbeFsync(const std::string& dir, int samples,
                        pb::Machine* machine);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_PROBE_H_
