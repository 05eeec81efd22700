// The C++ client's driver of the client conformance suite
// (client/conformance/README.md):
//
//   msgq_conformance_cpp_driver SERVER TABLE SCENARIO_JSON
//
// runs the driver part of one scenario of client/conformance/scenarios.json
// with msgq::Subscriber and prints one JSON line: the deliveries (id, epoch,
// seconds since the first), the handlers finished when Stop() returned.
// A "produce" scenario first enqueues with msgq::Enqueue (msgq/producer.h)
// in a committed and in a rolled-back transaction, and prints their ids.
#include <mysql.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "msgq/client.h"
#include "msgq/handler_result.h"
#include "msgq/message.h"
#include "msgq/producer.h"
#include "msgq/subscriber.h"
#include "nlohmann/json.hpp"

namespace {

using nlohmann::json;

struct Recorder {
  json spec;
  absl::Mutex mu;
  std::optional<std::chrono::steady_clock::time_point> first
      ABSL_GUARDED_BY(mu);
  json deliveries ABSL_GUARDED_BY(mu) = json::array();
  std::vector<std::string> seen ABSL_GUARDED_BY(mu);
  int started ABSL_GUARDED_BY(mu) = 0;
  int finished ABSL_GUARDED_BY(mu) = 0;
  absl::Notification stop;

  void MaybeStopLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    mu.AssertHeld();
    bool done = spec.contains("stop_after")
                    ? finished >= spec["stop_after"].get<int>()
                    : started >= spec["close_when_started"].get<int>();
    if (done && !stop.HasBeenNotified()) stop.Notify();
  }

  msgq::HandlerResult Handle(const msgq::Message& message) {
    bool again = false;
    {
      absl::MutexLock lock(&mu);
      const auto now = std::chrono::steady_clock::now();
      if (!first.has_value()) first = now;
      const double t = std::chrono::duration<double>(now - *first).count();
      deliveries.push_back({{"id", message.id()},
                            {"epoch", message.epoch()},
                            {"t", std::round(t * 1000) / 1000}});
      ++started;
      for (const std::string& id : seen) again = again || id == message.id();
      if (!again) seen.push_back(message.id());
      MaybeStopLocked();
    }
    const std::string kind = spec["handler"].get<std::string>();
    if (kind == "sleep_ack") {
      absl::SleepFor(absl::Seconds(spec["sleep"].get<double>()));
    }
    msgq::HandlerResult result = Outcome(kind, again);
    absl::MutexLock lock(&mu);
    ++finished;
    MaybeStopLocked();
    return result;
  }

  msgq::HandlerResult Outcome(const std::string& kind, bool again) {
    if (kind == "retry_once" && !again) {
      return msgq::HandlerResult::RetryAfter(
          absl::Seconds(spec["delay"].get<double>()), "conformance retry");
    }
    if (kind == "throw_once" && !again) {
      return absl::InternalError("conformance error");
    }
    if (kind == "dead") return msgq::HandlerResult::Dead("conformance dead");
    return msgq::HandlerResult::Ack();
  }
};

// The kind of the error that ended a subscription, as scenarios.json
// names it.
std::string ErrorKind(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kNotFound:
      return "unknown_table";
    case absl::StatusCode::kUnauthenticated:
      return "unauthenticated";
    case absl::StatusCode::kPermissionDenied:
      return "permission_denied";
    case absl::StatusCode::kInvalidArgument:
      return "invalid_argument";
    case absl::StatusCode::kUnavailable:
      return "unavailable";
    default:
      return "other: " + status.ToString();
  }
}

// Enqueues one message in a transaction that commits and one in a
// transaction that rolls back, each on a connection of its own over
// spec's mysql_socket; returns their ids ("committed", "rolled_back").
absl::StatusOr<json> Produce(const json& spec, const std::string& table) {
  json ids = json::object();
  for (const bool commit : {true, false}) {
    const std::string name = commit ? "committed" : "rolled_back";
    MYSQL* mysql = mysql_init(nullptr);
    if (mysql == nullptr) return absl::ResourceExhaustedError("mysql_init");
    unsigned int protocol = MYSQL_PROTOCOL_SOCKET;
    mysql_optionsv(mysql, MYSQL_OPT_PROTOCOL, &protocol);
    const std::string socket = spec["mysql_socket"].get<std::string>();
    const std::string database = spec["database"].get<std::string>();
    absl::Status status;
    if (mysql_real_connect(mysql, "localhost", "root", "", database.c_str(), 0,
                           socket.c_str(), 0) == nullptr ||
        mysql_query(mysql, "BEGIN") != 0) {
      status = absl::UnavailableError(mysql_error(mysql));
    } else {
      absl::StatusOr<std::string> id = msgq::Enqueue(
          mysql, table, {.body = json{{"conformance", name}}.dump()});
      if (!id.ok()) {
        status = id.status();
      } else if (mysql_query(mysql, commit ? "COMMIT" : "ROLLBACK") != 0) {
        status = absl::UnavailableError(mysql_error(mysql));
      } else {
        ids[name] = *id;
      }
    }
    mysql_close(mysql);
    if (!status.ok()) return status;
  }
  return ids;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: " << argv[0] << " SERVER TABLE SCENARIO_JSON\n";
    return 2;
  }
  Recorder recorder;
  recorder.spec = json::parse(argv[3]);
  json out;
  if (recorder.spec["mode"] == "produce") {
    absl::StatusOr<json> enqueued = Produce(recorder.spec, argv[2]);
    if (!enqueued.ok()) {
      std::cerr << enqueued.status() << "\n";
      return 1;
    }
    out["enqueued"] = *enqueued;
  }
  msgq::SubscriberOptions options;
  options.concurrency = recorder.spec["concurrency"].get<int>();
  auto subscriber = msgq::Subscriber::Start(
      msgq::NewChannel(argv[1]), std::string(argv[2]),
      [&recorder](const msgq::Message& m) { return recorder.Handle(m); },
      options);
  if (!subscriber.ok()) {
    std::cerr << subscriber.status() << "\n";
    return 1;
  }
  // Until the stop condition, the subscription's end (a fatal error) or
  // the timeout.
  const absl::Time deadline =
      absl::Now() + absl::Seconds(recorder.spec["timeout"].get<double>());
  while (
      !recorder.stop.WaitForNotificationWithTimeout(absl::Milliseconds(20)) &&
      !(*subscriber)->done()) {
    if (absl::Now() > deadline) {
      out["timed_out"] = true;
      break;
    }
  }
  (*subscriber)->Stop();
  const absl::Status status = (*subscriber)->Wait();
  if (!status.ok()) out["error"] = ErrorKind(status);
  absl::MutexLock lock(&recorder.mu);
  out["deliveries"] = recorder.deliveries;
  out["finished_before_close"] = recorder.finished;
  std::cout << out.dump() << std::endl;
  return 0;
}
