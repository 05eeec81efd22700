// RenderMetrics: the /metrics page (Prometheus text format 0.0.4) from the
// engine's in-memory state and the gRPC counters. A scrape reads
// Engine::ListTables() (each table's counters under its own lock, briefly)
// and never touches MySQL (the pending-due families come from a
// DueDepthSampler's cache). Every family is documented in
// docs/operations.md#metrics.
//
// Thread-safety: safe to call concurrently.
#ifndef MSGQ_SERVER_HTTP_METRICS_PAGE_H_
#define MSGQ_SERVER_HTTP_METRICS_PAGE_H_

#include <functional>
#include <string>

#include "engine/engine.h"
#include "server/http/due_depth_sampler.h"
#include "server/http/grpc_metrics.h"

namespace msgq {

struct BuildInfo {
  std::string version;
  std::string commit;
};

// Which tables a scrape shows (their series and the msgq_tables count);
// null shows every table.
using TableFilter = std::function<bool(const Engine::TableInfo&)>;

// `grpc` may be null (no gRPC families); `depth` may be null (no pending
// due families).
std::string RenderMetrics(const Engine& engine, const GrpcMetrics* grpc,
                          const BuildInfo& build,
                          const DueDepthSampler* depth = nullptr,
                          const TableFilter& visible = nullptr);

}  // namespace msgq

#endif  // MSGQ_SERVER_HTTP_METRICS_PAGE_H_
