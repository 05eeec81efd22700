// The console's JSON API, served on msgqd's HTTP port:
//   GET  /api/tables   every table with its state and counters, the
//                      readiness and the binlog state (the console polls it);
//   GET  /api/dead     ?keyspace=&table=[&after_id=][&limit=1..1000, 100]
//                      a page of a table's dead messages;
//   GET  /api/messages ?keyspace=&table=[&limit=1..100, 50]
//                      [&order=newest|next][&payload=1]
//                      a table's recent messages: id, priority, epoch,
//                      time_next, time_acked (and time_created, time_dead,
//                      last_error when the table has them) as text or null,
//                      highest id first (newest) or unacked in the poll's
//                      order (next); the payload columns only with
//                      payload=1, each cut to 256 bytes
//                      (engine/sql/peek_statement.h);
//   POST /api/redrive  keyspace, table and id (repeated) or all=1, as form
//                      fields; needs the header X-Msgq-Console: 1 (a page
//                      of another origin cannot send it without CORS).
// With an Authorizer that requires credentials, every /api/ request needs
// `Authorization: Bearer <token>` (401 without a valid one; client
// certificates are not read here), and the policy applies as on gRPC:
// /api/tables lists only the caller's tables, /api/dead, /api/messages and
// /api/redrive need `admin` on the table (403 naming action and table).
// Actions go through the same Engine::Find and MessageManager calls, with
// the same checks, as the gRPC RPCs. Errors are JSON {"error": "..."} with
// 400 (INVALID_ARGUMENT), 401 (UNAUTHENTICATED), 403 (missing header,
// PERMISSION_DENIED), 404 (NOT_FOUND), 409
// (FAILED_PRECONDITION), 429 (RESOURCE_EXHAUSTED), 503 (UNAVAILABLE) or
// 504 (no answer from the table within 10 s).
//
// Thread-safety: the handlers run on HTTP worker threads and may wait for
// the table manager's answer; they never run on gRPC threads.
#ifndef MSGQ_SERVER_HTTP_CONSOLE_API_H_
#define MSGQ_SERVER_HTTP_CONSOLE_API_H_

#include <map>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "server/auth/authorizer.h"
#include "server/http/due_depth_sampler.h"
#include "server/http/http_server.h"

namespace msgq {

// The handlers above, by path; `engine` and `authorizer` (null: open
// access) must outlive them. With `depth`,
// /api/tables also gives each loaded table's pending_due, pending_capped
// and oldest_due_age (seconds) from its cache (null until measured).
std::map<std::string, HttpHandler> ConsoleApiRoutes(
    Engine* engine, std::shared_ptr<const DueDepthSampler> depth = nullptr,
    const auth::Authorizer* authorizer = nullptr);

}  // namespace msgq

#endif  // MSGQ_SERVER_HTTP_CONSOLE_API_H_
