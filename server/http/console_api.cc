#include "server/http/console_api.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "engine/message_table.h"
#include "engine/sql/peek_statement.h"
#include "nlohmann/json.hpp"
#include "server/auth/table_access.h"

namespace msgq {
namespace {

using json = nlohmann::json;

constexpr absl::Duration kAnswerTimeout = absl::Seconds(10);
// Longer ids are refused before they reach SQL or an error message.
constexpr size_t kMaxIdBytes = 1024;
// Ids one dead-letter action on a selection takes at most.
constexpr size_t kMaxSelection = 100;

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
      // Rows by state, exact (engine/queue/message_counts.h); null until
      // the table's first counting read.
      row["counts"] = t.counts.has_value()
                          ? json{{"ready", t.counts->ready},
                                 {"scheduled", t.counts->scheduled},
                                 {"in_flight", t.counts->in_flight},
                                 {"dead", t.counts->dead}}
                          : json(nullptr);
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
  // The database server's purge debt, and who holds it back.
  json database = {{"history_list_length", nullptr},
                   {"oldest_transaction", nullptr},
                   {"oldest_transaction_error", ""}};
  if (depth != nullptr) {
    if (std::optional<int64_t> length = depth->HistoryLength()) {
      database["history_list_length"] = *length;
    }
    const DueDepthSampler::TransactionSample t =
        depth->OldestTransactionSample();
    database["oldest_transaction_error"] = t.error;
    if (t.oldest.has_value()) {
      database["oldest_transaction"] = {{"connection", t.oldest->connection},
                                        {"seconds", t.oldest->seconds},
                                        {"user", t.oldest->user},
                                        {"host", t.oldest->host},
                                        {"db", t.oldest->db},
                                        {"statement", t.oldest->statement}};
    }
  }
  return Json(200, json{{"time", absl::ToUnixMillis(absl::Now()) / 1000.0},
                        {"database", std::move(database)},
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

// A table's recent messages (in one state when asked): bookkeeping columns
// and each row's state on MySQL's clock, the payload only when asked
// (payload=1, each column cut to kPeekPayloadBytes).
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
  absl::StatusOr<PeekState> state =
      ParsePeekState(request.Param("state").value_or(""));
  if (!state.ok()) return Error(state.status());
  peek.state = *state;
  peek.payload = request.Param("payload").value_or("") == "1";
  peek.now_ns = engine->clock()->NowNanos();
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

// One message by its id: its bookkeeping columns, its state on MySQL's
// clock and every other column cut to kMessageValueChars.
HttpResponse OneMessage(Engine* engine, const auth::Authorizer* authorizer,
                        const HttpRequest& request) {
  const std::string id = request.Param("id").value_or("");
  if (id.empty()) return Error(absl::InvalidArgumentError("id is required"));
  if (id.size() > kMaxIdBytes) {
    return Error(absl::InvalidArgumentError(
        absl::StrCat("id longer than ", kMaxIdBytes, " bytes")));
  }
  auto manager = FindTable(engine, authorizer, request);
  if (!manager.ok()) return Error(manager.status());
  const MessageTable& table = (*manager)->table();
  const int64_t now_ns = engine->clock()->NowNanos();
  MessageRead read;
  absl::StatusOr<QueryResult> result = engine->ReadTable(
      table.keyspace, table.name,
      [&](const MessageTable& t) -> absl::StatusOr<std::string> {
        absl::StatusOr<MessageRead> r = MessageSql(t, id, now_ns);
        if (!r.ok()) return r.status();
        read = *std::move(r);
        return read.sql;
      });
  if (!result.ok()) return Error(result.status());
  if (result->rows.empty()) {
    return Error(absl::NotFoundError(
        absl::StrCat("no message with id '", id.substr(0, 64), "' in ",
                     table.keyspace, ".", table.name)));
  }
  const std::vector<std::optional<std::string>>& row = result->rows[0];
  if (row.size() != read.fixed.size() + 2 * read.values.size()) {
    return Error(absl::InternalError("unexpected columns in the read"));
  }
  auto value = [](const std::optional<std::string>& v) {
    return v.has_value() ? json(*v) : json(nullptr);
  };
  json out = json::object();
  for (size_t i = 0; i < read.fixed.size(); ++i) {
    out[read.fixed[i]] = value(row[i]);
  }
  json columns = json::array();
  for (size_t i = 0; i < read.values.size(); ++i) {
    const size_t at = read.fixed.size() + 2 * i;
    columns.push_back(json{{"name", read.values[i]},
                           {"value", value(row[at])},
                           {"truncated", row[at + 1] == "1"}});
  }
  out["columns"] = std::move(columns);
  return Json(200, json{{"message", std::move(out)},
                        {"max_value_chars", kMessageValueChars}});
}

// A console action: POST with the header X-Msgq-Console: 1 (a page of
// another origin cannot send it without CORS); the refusal otherwise.
std::optional<HttpResponse> RefusedAction(const HttpRequest& request) {
  if (request.method != "POST") {
    return Json(405, json{{"error", "use POST"}});
  }
  auto header = request.headers.find("x-msgq-console");
  if (header == request.headers.end() || header->second != "1") {
    return Json(403, json{{"error", "missing header X-Msgq-Console: 1"}});
  }
  return std::nullopt;
}

std::string QuotedIds(const std::vector<std::string>& ids) {
  std::string out;
  for (const std::string& id : ids) {
    absl::StrAppend(&out, out.empty() ? "'" : ", '", id.substr(0, 64), "'");
  }
  return out;
}

// The ids of a dead-letter action on a selection, canonical and without
// repeats, once each is known to be a dead row of `table`; else the
// answer: 400 (no id, more than kMaxSelection, a malformed one), 404
// naming the ids no row has, 409 naming those that are not dead (with
// their state), each with the ids as "ids".
absl::StatusOr<std::vector<std::string>> DeadSelection(
    Engine* engine, const MessageTable& table, const HttpRequest& request,
    std::optional<HttpResponse>* refusal) {
  std::vector<std::string> given = request.Params("id");
  auto refuse = [&](HttpResponse r) {
    *refusal = std::move(r);
    return absl::FailedPreconditionError("refused");
  };
  if (given.empty()) {
    return refuse(Error(absl::InvalidArgumentError(absl::StrCat(
        "id is required (repeated, at most ", kMaxSelection, ")"))));
  }
  if (given.size() > kMaxSelection) {
    return refuse(Error(absl::InvalidArgumentError(absl::StrCat(
        "at most ", kMaxSelection, " ids at once, not ", given.size()))));
  }
  std::vector<std::string> ids;
  std::set<std::string> seen;
  for (const std::string& id : given) {
    if (id.size() > kMaxIdBytes) {
      return refuse(Error(absl::InvalidArgumentError(
          absl::StrCat("id longer than ", kMaxIdBytes, " bytes"))));
    }
    absl::StatusOr<std::string> canonical = CanonicalId(table.id_kind, id);
    if (!canonical.ok()) return refuse(Error(canonical.status()));
    if (seen.insert(*canonical).second) ids.push_back(*std::move(canonical));
  }
  const int64_t now_ns = engine->clock()->NowNanos();
  absl::StatusOr<QueryResult> states = engine->ReadTable(
      table.keyspace, table.name,
      [&](const MessageTable& t) { return DeadStateSql(t, ids, now_ns); });
  if (!states.ok()) return refuse(Error(states.status()));
  std::map<std::string, std::string> state_of;
  for (const auto& row : states->rows) {
    if (row.size() == 2 && row[0] && row[1]) state_of[*row[0]] = *row[1];
  }
  std::vector<std::string> unknown, not_dead;
  std::string states_text;
  for (const std::string& id : ids) {
    auto it = state_of.find(id);
    if (it == state_of.end()) {
      unknown.push_back(id);
    } else if (it->second != "dead") {
      not_dead.push_back(id);
      absl::StrAppend(&states_text, states_text.empty() ? "'" : ", '",
                      id.substr(0, 64), "' (", it->second, ")");
    }
  }
  const std::string where = absl::StrCat(table.keyspace, ".", table.name);
  if (!unknown.empty()) {
    return refuse(Json(
        404, json{{"error", absl::StrCat("no message with ",
                                         unknown.size() == 1 ? "id " : "ids ",
                                         QuotedIds(unknown), " in ", where)},
                  {"ids", unknown}}));
  }
  if (!not_dead.empty()) {
    return refuse(Json(409, json{{"error", absl::StrCat("not dead in ", where,
                                                        ": ", states_text)},
                                 {"ids", not_dead}}));
  }
  return ids;
}

// Redrives a selection of dead messages (id, repeated; each checked by
// DeadSelection) or all of them (all=1).
HttpResponse Redrive(Engine* engine, const auth::Authorizer* authorizer,
                     const HttpRequest& request) {
  if (auto refused = RefusedAction(request)) return *refused;
  auto manager = FindTable(engine, authorizer, request);
  if (!manager.ok()) return Error(manager.status());
  const bool all = request.Param("all").value_or("") == "1";
  std::vector<std::string> ids = request.Params("id");
  if (!all) {
    std::optional<HttpResponse> refusal;
    absl::StatusOr<std::vector<std::string>> selection =
        DeadSelection(engine, (*manager)->table(), request, &refusal);
    if (!selection.ok()) return *refusal;
    ids = *std::move(selection);
  }
  Answer<int64_t> answer;
  (*manager)->Redrive(std::move(ids), all, answer.Callback());
  absl::StatusOr<int64_t> n = answer.Wait();
  if (!n.ok()) return Error(n.status());
  return Json(200, json{{"redriven", *n}});
}

// Deletes a selection of dead messages (id, repeated; each checked by
// DeadSelection) with one DELETE that matches only dead rows.
HttpResponse DeleteDead(Engine* engine, const auth::Authorizer* authorizer,
                        const HttpRequest& request) {
  if (auto refused = RefusedAction(request)) return *refused;
  auto manager = FindTable(engine, authorizer, request);
  if (!manager.ok()) return Error(manager.status());
  const MessageTable& table = (*manager)->table();
  std::optional<HttpResponse> refusal;
  absl::StatusOr<std::vector<std::string>> ids =
      DeadSelection(engine, table, request, &refusal);
  if (!ids.ok()) return *refusal;
  absl::StatusOr<uint64_t> deleted = engine->WriteTable(
      table.keyspace, table.name,
      [&](const MessageTable& t) { return DeadDeleteSql(t, *ids); });
  if (!deleted.ok()) return Error(deleted.status());
  return Json(200, json{{"deleted", *deleted}});
}

// A table's served history (ConsoleHistory): at most its last hour of
// samples, oldest first.
HttpResponse History(Engine* engine, const ConsoleHistory* history,
                     const auth::Authorizer* authorizer,
                     const HttpRequest& request) {
  auto manager = FindTable(engine, authorizer, request);
  if (!manager.ok()) return Error(manager.status());
  if (history == nullptr) {
    return Error(absl::UnavailableError("no history is kept"));
  }
  auto count = [](int64_t v) { return v < 0 ? json(nullptr) : json(v); };
  json samples = json::array();
  for (const ConsoleHistory::Sample& s :
       history->Get({(*manager)->table().keyspace, (*manager)->table().name})) {
    samples.push_back(json{{"time", static_cast<double>(s.time_ns) / 1e9},
                           {"sent", s.sent},
                           {"acked", s.acked},
                           {"ready", count(s.ready)},
                           {"scheduled", count(s.scheduled)},
                           {"in_flight", count(s.in_flight)},
                           {"dead", count(s.dead)}});
  }
  return Json(200, json{{"interval",
                         absl::ToDoubleSeconds(history->options().interval)},
                        {"samples", std::move(samples)}});
}

// Pauses (paused=1) or resumes (paused=0) a table for every msgqd serving
// it, as the Pause/Resume RPCs do (Engine::SetPaused).
HttpResponse Pause(Engine* engine, const auth::Authorizer* authorizer,
                   const HttpRequest& request) {
  if (auto refused = RefusedAction(request)) return *refused;
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
    const auth::Authorizer* authorizer,
    std::shared_ptr<const ConsoleHistory> history) {
  return {
      {"/api/history",
       [engine, history, authorizer](const HttpRequest& r) {
         return History(engine, history.get(), authorizer, r);
       }},
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
      {"/api/message",
       [engine, authorizer](const HttpRequest& r) {
         return OneMessage(engine, authorizer, r);
       }},
      {"/api/redrive",
       [engine, authorizer](const HttpRequest& r) {
         return Redrive(engine, authorizer, r);
       }},
      {"/api/dead/delete",
       [engine, authorizer](const HttpRequest& r) {
         return DeleteDead(engine, authorizer, r);
       }},
      {"/api/pause",
       [engine, authorizer](const HttpRequest& r) {
         return Pause(engine, authorizer, r);
       }},
  };
}

}  // namespace msgq
