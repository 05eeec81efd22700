// The console's JSON API, served on msgqd's HTTP port:
//   GET  /api/tables   every table with its state and counters (with
//                      `counts`: its rows by state, ready, scheduled,
//                      in_flight and dead, exact, or null until counted),
//                      the readiness, the binlog state and `database`:
//                      the server's InnoDB history list length and its
//                      oldest open transaction (connection, seconds,
//                      user, host, db, statement) or null, as last
//                      sampled (due_depth_sampler.h), with
//                      oldest_transaction_error when that read is
//                      refused (the console polls it);
//   GET  /api/dead     ?keyspace=&table=[&after_id=][&limit=1..1000, 100]
//                      a page of a table's dead messages;
//   GET  /api/messages ?keyspace=&table=[&limit=1..100, 50]
//                      [&order=newest|next][&payload=1]
//                      [&state=ready|scheduled|in_flight|dead|acked]
//                      a table's recent messages (only those in `state`;
//                      acked ones in order newest only):
//                      id, priority, epoch, time_next, time_acked (and
//                      time_created, time_dead, last_error when the table
//                      has them) as text or null, and msgq_state, highest
//                      id first (newest) or unacked in the poll's order
//                      (next); the payload columns only with payload=1,
//                      each cut to 256 bytes (engine/sql/peek_statement.h);
//   GET  /api/message  ?keyspace=&table=&id=
//                      one message: those columns, its state (msgq_state)
//                      and every other column (payload, headers, trace
//                      context) as {name, value, truncated}, each cut to
//                      4096 characters; 404 when no row has that id;
//   GET  /api/history  ?keyspace=&table=
//                      the table's served history (console_history.h):
//                      {interval, samples: [{time, sent, acked, ready,
//                      scheduled, in_flight, dead}]}, oldest first, at
//                      most an hour at 10 s; 503 without a history;
//   POST /api/redrive  keyspace, table and id (repeated, 1..100) or
//                      all=1, as form fields: the dead messages named (or
//                      all) become due now with epoch 0;
//   POST /api/dead/delete keyspace, table and id (repeated, 1..100): the
//                      dead messages named are deleted;
//   POST /api/pause    keyspace, table and paused=1|0.
// The POSTs need the header X-Msgq-Console: 1 (a page of another origin
// cannot send it without CORS; 403 without it, 405 for another method).
// A selection of ids is checked first: 400 for more than 100 or a
// malformed id, 404 naming the ids no row has, 409 naming those that are
// not dead with their state (both with the ids as "ids"); nothing changes
// then.
// With an Authorizer that requires credentials, every /api/ request needs
// `Authorization: Bearer <token>` (401 without a valid one; client
// certificates are not read here), and the policy applies as on gRPC:
// /api/tables lists only the caller's tables, the others need `admin` on
// the table (403 naming action and table). Pause and redrive go through
// the same Engine and MessageManager calls, with the same checks, as the
// gRPC RPCs; reads and the delete run one statement each on a pool
// connection (Engine::ReadTable, WriteTable: bounded by its I/O timeout).
// Errors are JSON {"error": "..."} with 400 (INVALID_ARGUMENT), 401
// (UNAUTHENTICATED), 403 (missing header, PERMISSION_DENIED), 404
// (NOT_FOUND), 409 (FAILED_PRECONDITION, not dead), 429
// (RESOURCE_EXHAUSTED), 503 (UNAVAILABLE) or 504 (no answer from the
// table within 10 s).
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
#include "server/http/console_history.h"
#include "server/http/due_depth_sampler.h"
#include "server/http/http_server.h"

namespace msgq {

// The handlers above, by path; `engine` and `authorizer` (null: open
// access) must outlive them. With `depth`,
// /api/tables also gives each loaded table's pending_due, pending_capped
// and oldest_due_age (seconds) from its cache (null until measured).
// `history` serves /api/history.
std::map<std::string, HttpHandler> ConsoleApiRoutes(
    Engine* engine, std::shared_ptr<const DueDepthSampler> depth = nullptr,
    const auth::Authorizer* authorizer = nullptr,
    std::shared_ptr<const ConsoleHistory> history = nullptr);

}  // namespace msgq

#endif  // MSGQ_SERVER_HTTP_CONSOLE_API_H_
