#include "server/http/console_api.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "engine/sql/peek_statement.h"
#include "nlohmann/json.hpp"
#include "server/auth/table_access.h"

namespace msgq {
namespace {

using json = nlohmann::json;

constexpr absl::Duration kAnswerTimeout = absl::Seconds(10);

HttpResponse Json(int status, const json& body) {
  // Replace invalid UTF-8 (table errors may quote raw bytes).
  return HttpResponse{
      status, "application/json",
      body.dump(-1, ' ', false, json::error_handler_t::replace)};
}

HttpResponse Error(const absl::Status& status) {
  int code = 500;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      code = 400;
      break;
    case absl::StatusCode::kNotFound:
      code = 404;
      break;
    case absl::StatusCode::kUnauthenticated:
      code = 401;
      break;
    case absl::StatusCode::kPermissionDenied:
      code = 403;
      break;
    case absl::StatusCode::kFailedPrecondition:
      code = 409;
      break;
    case absl::StatusCode::kResourceExhausted:
      code = 429;
      break;
    case absl::StatusCode::kUnavailable:
      code = 503;
      break;
    case absl::StatusCode::kDeadlineExceeded:
      code = 504;
      break;
    default:
      break;
  }
  return Json(code, json{{"error", std::string(status.message())}});
}

// Waits for a manager's callback; the callback may outlive the wait.
template <typename T>
class Answer {
 public:
  std::function<void(absl::StatusOr<T>)> Callback() {
    return [state = state_](absl::StatusOr<T> value) {
      state->value = std::move(value);
      state->done.Notify();
    };
  }
  absl::StatusOr<T> Wait() {
    if (!state_->done.WaitForNotificationWithTimeout(kAnswerTimeout)) {
      return absl::DeadlineExceededError("the table did not answer in time");
    }
    return std::move(state_->value);
  }

 private:
  struct State {
    absl::Notification done;
    absl::StatusOr<T> value = absl::UnknownError("no answer");
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

// The caller of an /api/ request: its bearer token's principal, "" when
// access is open, or UNAUTHENTICATED.
absl::StatusOr<std::string> Caller(const auth::Authorizer* authorizer,
                                   const HttpRequest& request) {
  if (authorizer == nullptr) return std::string();
  std::optional<absl::string_view> header;
  if (auto it = request.headers.find("authorization");
      it != request.headers.end()) {
    header = it->second;
  }
  return authorizer->Authenticate(header, {});
}

// The table of the request, if the caller may administer it.
absl::StatusOr<std::shared_ptr<MessageManager>> FindTable(
    Engine* engine, const auth::Authorizer* authorizer,
    const HttpRequest& request) {
  absl::StatusOr<std::string> caller = Caller(authorizer, request);
  if (!caller.ok()) return caller.status();
  return auth::FindForCaller(*engine, authorizer, *caller, auth::Action::kAdmin,
                             request.Param("keyspace").value_or(""),
                             request.Param("table").value_or(""));
}

HttpResponse Tables(Engine* engine, const DueDepthSampler* depth,
                    const auth::Authorizer* authorizer,
                    const HttpRequest& request) {
  absl::StatusOr<std::string> caller = Caller(authorizer, request);
  if (!caller.ok()) return Error(caller.status());
  json tables = json::array();
  for (const Engine::TableInfo& t : engine->ListTables()) {
    if (authorizer != nullptr &&
        !authorizer->MayList(*caller, t.keyspace, t.name)) {
      continue;
    }
    const MessageManager::Stats& s = t.stats;
    json row = {{"keyspace", t.keyspace},
                {"name", t.name},
                {"loaded", t.loaded},
                {"error", t.error},
                {"ownership",
                 {{"state", t.ownership.state},
                  {"owner", t.ownership.owner},
                  {"error", t.ownership.error}}}};
    if (t.loaded) {
      row.update(json{{"discovery", t.discovery},
                      {"subscribers", s.subscribers},
                      {"queued", s.queued},
                      {"in_flight", s.in_flight},
                      {"dead", s.dead >= 0 ? json(s.dead) : json(nullptr)},
                      {"sent", s.sent},
                      {"redelivered", s.redelivered},
                      {"acked", s.acked},
                      {"nacked", s.nacked},
                      {"died", s.died},
                      {"purged", s.purged},
                      {"polls", s.polls},
                      {"postponed", s.postponed},
                      {"fetches", s.fetches},
                      {"mysql_up", s.mysql_ok},
                      {"paused", s.paused},
                      {"ack_wait", absl::ToDoubleSeconds(t.settings.ack_wait)},
                      {"batch_size", t.settings.batch_size}});
      if (t.settings.concurrency > 0) {  // msgq_concurrency_by
        row.update(json{{"concurrency_by", t.settings.concurrency_by},
                        {"concurrency", t.settings.concurrency},
                        {"keys_at_limit", s.keys_at_limit}});
      }
    }
    if (t.loaded && depth != nullptr) {
      std::optional<DueDepthSampler::Sample> d = depth->For(t);
      row["pending_due"] = d ? json(d->depth.count) : json(nullptr);
      row["pending_capped"] = d ? json(d->depth.capped) : json(nullptr);
      row["oldest_due_age"] =
          !d ? json(nullptr)
             : json(d->depth.oldest_due_ns
                        ? std::max<double>(
                              0, (d->now_ns - *d->depth.oldest_due_ns) / 1e9)
                        : 0.0);
    }
    tables.push_back(std::move(row));
  }
  const absl::Status health = engine->Health();
  const BinlogWatcher::Status binlog = engine->binlog_status();
  return Json(200, json{{"time", absl::ToUnixMillis(absl::Now()) / 1000.0},
                        {"ready", health.ok()},
                        {"ready_reason", std::string(health.message())},
                        {"binlog",
                         {{"streaming", binlog.streaming},
                          {"last_error", binlog.last_error},
                          {"position", binlog.position}}},
                        {"tables", std::move(tables)}});
}

HttpResponse Dead(Engine* engine, const auth::Authorizer* authorizer,
                  const HttpRequest& request) {
  int limit = 100;
  if (auto v = request.Param("limit")) {
    if (!absl::SimpleAtoi(*v, &limit) || limit < 1 || limit > 1000) {
      return Error(absl::InvalidArgumentError("limit must be 1..1000"));
    }
  }
  auto manager = FindTable(engine, authorizer, request);
  if (!manager.ok()) return Error(manager.status());
  Answer<std::vector<DeadRow>> answer;
  (*manager)->ListDead(request.Param("after_id").value_or(""), limit,
                       answer.Callback());
  absl::StatusOr<std::vector<DeadRow>> rows = answer.Wait();
  if (!rows.ok()) return Error(rows.status());
  json out = json::array();
  for (const DeadRow& r : *rows) {
    out.push_back(json{{"id", r.id},
                       {"epoch", r.epoch},
                       {"last_error", r.last_error},
                       {"time_dead", r.time_dead / 1e9},
                       {"time_created", r.time_created / 1e9}});
  }
  return Json(200, json{{"messages", std::move(out)}});
}

// A table's recent messages: bookkeeping columns, the payload only when
// asked (payload=1, each column cut to kPeekPayloadBytes).
HttpResponse Messages(Engine* engine, const auth::Authorizer* authorizer,
                      const HttpRequest& request) {
  PeekRequest peek;
  if (auto v = request.Param("limit")) {
    if (!absl::SimpleAtoi(*v, &peek.limit)) {
      return Error(absl::InvalidArgumentError(
          absl::StrCat("limit must be 1..", kMaxPeekLimit)));
    }
  }
  absl::StatusOr<PeekOrder> order =
      ParsePeekOrder(request.Param("order").value_or("newest"));
  if (!order.ok()) return Error(order.status());
  peek.order = *order;
  peek.payload = request.Param("payload").value_or("") == "1";
  // Authorizes (and resolves an empty keyspace) before reading.
  auto manager = FindTable(engine, authorizer, request);
  if (!manager.ok()) return Error(manager.status());
  absl::StatusOr<QueryResult> result = engine->ReadTable(
      (*manager)->table().keyspace, (*manager)->table().name,
      [&peek](const MessageTable& table) { return PeekSql(table, peek); });
  if (!result.ok()) return Error(result.status());
  json rows = json::array();
  for (const auto& values : result->rows) {
    json row = json::object();
    for (size_t i = 0; i < values.size() && i < result->columns.size(); ++i) {
      row[result->columns[i]] =
          values[i].has_value() ? json(*values[i]) : json(nullptr);
    }
    rows.push_back(std::move(row));
  }
  return Json(
      200, json{{"columns", result->columns}, {"messages", std::move(rows)}});
}

HttpResponse Redrive(Engine* engine, const auth::Authorizer* authorizer,
                     const HttpRequest& request) {
  if (request.method != "POST") {
    return Json(405, json{{"error", "use POST"}});
  }
  auto header = request.headers.find("x-msgq-console");
  if (header == request.headers.end() || header->second != "1") {
    return Json(403, json{{"error", "missing header X-Msgq-Console: 1"}});
  }
  auto manager = FindTable(engine, authorizer, request);
  if (!manager.ok()) return Error(manager.status());
  Answer<int64_t> answer;
  (*manager)->Redrive(request.Params("id"),
                      request.Param("all").value_or("") == "1",
                      answer.Callback());
  absl::StatusOr<int64_t> n = answer.Wait();
  if (!n.ok()) return Error(n.status());
  return Json(200, json{{"redriven", *n}});
}

// Pauses (paused=1) or resumes (paused=0) a table for every msgqd serving
// it, as the Pause/Resume RPCs do (Engine::SetPaused).
HttpResponse Pause(Engine* engine, const auth::Authorizer* authorizer,
                   const HttpRequest& request) {
  if (request.method != "POST") {
    return Json(405, json{{"error", "use POST"}});
  }
  auto header = request.headers.find("x-msgq-console");
  if (header == request.headers.end() || header->second != "1") {
    return Json(403, json{{"error", "missing header X-Msgq-Console: 1"}});
  }
  const std::string paused = request.Param("paused").value_or("");
  if (paused != "1" && paused != "0") {
    return Error(absl::InvalidArgumentError("paused must be 1 or 0"));
  }
  auto manager = FindTable(engine, authorizer, request);
  if (!manager.ok()) return Error(manager.status());
  Answer<bool> answer;
  engine->SetPaused((*manager)->table().keyspace, (*manager)->table().name,
                    paused == "1",
                    [done = answer.Callback()](absl::Status status) {
                      if (status.ok()) {
                        done(true);
                      } else {
                        done(status);
                      }
                    });
  absl::StatusOr<bool> written = answer.Wait();
  if (!written.ok()) return Error(written.status());
  return Json(200, json{{"paused", paused == "1"}});
}

}  // namespace

std::map<std::string, HttpHandler> ConsoleApiRoutes(
    Engine* engine, std::shared_ptr<const DueDepthSampler> depth,
    const auth::Authorizer* authorizer) {
  return {
      {"/api/tables",
       [engine, depth, authorizer](const HttpRequest& r) {
         return Tables(engine, depth.get(), authorizer, r);
       }},
      {"/api/dead",
       [engine, authorizer](const HttpRequest& r) {
         return Dead(engine, authorizer, r);
       }},
      {"/api/messages",
       [engine, authorizer](const HttpRequest& r) {
         return Messages(engine, authorizer, r);
       }},
      {"/api/redrive",
       [engine, authorizer](const HttpRequest& r) {
         return Redrive(engine, authorizer, r);
       }},
      {"/api/pause",
       [engine, authorizer](const HttpRequest& r) {
         return Pause(engine, authorizer, r);
       }},
  };
}

}  // namespace msgq
