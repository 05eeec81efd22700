// The options of one msgq-bench run: the command-line flags (options.cc
// defines them with their defaults; `msgq-bench --help` lists them), read
// into bench.json's pb::Options, which the phases then use.
#ifndef MSGQ_TOOLS_MSGQ_BENCH_OPTIONS_H_
#define MSGQ_TOOLS_MSGQ_BENCH_OPTIONS_H_

#include <string>

#include "absl/status/statusor.h"
#include "tools/msgq_bench/bench_results.pb.h"

namespace msgq::bench {

// Reads the parsed flags. INVALID_ARGUMENT names the bad flag.
absl::StatusOr<pb::Options> OptionsFromFlags();

// The comment of a message table for `batch_size` and the options.
std::string MessageTableComment(const pb::Options& options, int batch_size);

}  // namespace msgq::bench

#endif  // MSGQ_TOOLS_MSGQ_BENCH_OPTIONS_H_
