// Every route of msgqd's HTTP port:
//   GET /metrics   Prometheus text format (metrics_page.h; with bearer
//                  tokens on, a token and only its tables), with pending
//                  due messages from a DueDepthSampler the routes own (its
//                  thread measures each table at most every 10 s);
//   GET /healthz   liveness: 200 "ok" while the process serves;
//   GET /readyz    readiness, as the gRPC health service: 200 "ready", or
//                  503 with the reason (schema not loaded, MySQL down,
//                  stalled or read-only, stopping: Engine::Health);
//   GET /          the web console (index.html) and its files;
//   /api/...       the console's JSON API (console_api.h).
#ifndef MSGQ_SERVER_HTTP_ROUTES_H_
#define MSGQ_SERVER_HTTP_ROUTES_H_

#include <map>
#include <string>

#include "engine/engine.h"
#include "server/auth/authorizer.h"
#include "server/http/grpc_metrics.h"
#include "server/http/http_server.h"
#include "server/http/metrics_page.h"

namespace msgq {

// `engine`, `grpc` and `authorizer` (both may be null; no authorizer =
// open access) must outlive the routes. When the authorizer requires
// credentials, /api/ (console_api.h) needs a bearer token
// (`Authorization: Bearer <token>`; 401 without a valid one); with bearer
// tokens on, so does /metrics, which then shows only the tables the
// token's principal may list. The health pages and the console's files
// are open to whoever reaches the port.
std::map<std::string, HttpHandler> MsgqdRoutes(
    Engine* engine, const GrpcMetrics* grpc, BuildInfo build,
    const auth::Authorizer* authorizer = nullptr);

}  // namespace msgq

#endif  // MSGQ_SERVER_HTTP_ROUTES_H_
