// msgq_inbox_test_consumer: the consumer process of client/inbox_test.cc.
// A Subscriber whose handler is an Inbox moving money between two accounts
// of the consumer's database for each message, until it is killed.
//
//   msgq_inbox_test_consumer --msgqd=HOST:PORT --keyspace=K --table=T
//       --socket=CONSUMER_DB_SOCKET --database=BANK --events=FILE
//       [--crash_after_commit=P] [--seed=N] [--work_delay_ms=MS]
//       [--hold_file=F] [--leave]
//
// It appends one line per event to FILE, each with one write(2), so that a
// kill -9 loses no line written: "run ID" when the work starts, "commit ID"
// after the commit, "dup ID" for a message found in the inbox.
// --crash_after_commit=P SIGKILLs itself right after a commit (before the
// ack) with probability P. --hold_file=F makes the work wait, before the
// commit, until F exists. --leave ends its stream when the work starts
// (so that the message's next send goes to another consumer), has no
// heartbeat, and exits after that one message.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "msgq/client.h"
#include "msgq/inbox.h"
#include "msgq/subscriber.h"

namespace {

std::map<std::string, std::string> ParseArgs(int argc, char** argv) {
  std::map<std::string, std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) continue;
    const size_t eq = a.find('=');
    if (eq == std::string::npos) {
      args[a.substr(2)] = "1";
    } else {
      args[a.substr(2, eq - 2)] = a.substr(eq + 1);
    }
  }
  return args;
}

// The amount, from and to of a transfer's JSON, e.g.
// {"from": 1, "to": 2, "amount": 30}.
bool ParseTransfer(absl::string_view json, int64_t* from, int64_t* to,
                   int64_t* amount) {
  auto field = [&](absl::string_view name, int64_t* out) {
    const std::string key = absl::StrCat("\"", name, "\":");
    size_t at = json.find(key);
    if (at == absl::string_view::npos) return false;
    at += key.size();
    while (at < json.size() && json[at] == ' ') ++at;
    size_t end = at;
    while (end < json.size() && (json[end] == '-' || isdigit(json[end]))) ++end;
    return absl::SimpleAtoi(json.substr(at, end - at), out);
  };
  return field("from", from) && field("to", to) && field("amount", amount);
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> args = ParseArgs(argc, argv);
  for (const char* required :
       {"msgqd", "keyspace", "table", "socket", "database", "events"}) {
    if (args.count(required) == 0) {
      std::fprintf(stderr, "missing --%s\n", required);
      return 2;
    }
  }
  double crash = 0;
  int64_t seed = 0, work_delay_ms = 0;
  if (args.count("crash_after_commit")) {
    (void)absl::SimpleAtod(args["crash_after_commit"], &crash);
  }
  if (args.count("seed")) (void)absl::SimpleAtoi(args["seed"], &seed);
  if (args.count("work_delay_ms")) {
    (void)absl::SimpleAtoi(args["work_delay_ms"], &work_delay_ms);
  }
  const std::string hold = args.count("hold_file") ? args["hold_file"] : "";
  const bool leave = args.count("leave") > 0;

  const int events = open(args["events"].c_str(),
                          O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (events < 0) {
    std::perror("open events");
    return 1;
  }
  auto log_event = [events](absl::string_view what, const msgq::Message& m) {
    const std::string line = absl::StrCat(what, " ", m.id(), "\n");
    (void)!write(events, line.data(), line.size());
  };
  absl::Mutex rng_mu;
  std::mt19937_64 rng(seed);
  auto random = [&] {
    absl::MutexLock lock(&rng_mu);
    return std::uniform_real_distribution<double>(0, 1)(rng);
  };

  absl::StatusOr<std::unique_ptr<msgq::Inbox>> inbox = msgq::Inbox::Create({
      .connection = {.unix_socket = args["socket"],
                     .user = "root",
                     .database = args["database"]},
      .source = "test",
      .on_committed =
          [&](const msgq::Message& m) {
            log_event("commit", m);
            if (random() < crash) kill(getpid(), SIGKILL);  // before the ack
          },
      .on_duplicate = [&](const msgq::Message& m) { log_event("dup", m); },
  });
  if (!inbox.ok()) {
    std::fprintf(stderr, "%s\n", inbox.status().ToString().c_str());
    return 1;
  }
  const msgq::TableRef table(args["keyspace"], args["table"]);
  msgq::Subscriber* subscriber = nullptr;  // set before the first message
  absl::Notification started, handled;
  msgq::Subscriber::Handler handler = (*inbox)->Handler(
      table,
      [&](const msgq::Message& m,
          msgq::InboxTransaction& tx) -> msgq::HandlerResult {
        log_event("run", m);
        if (leave) {
          started.WaitForNotification();
          subscriber->RequestStop();
        }
        int64_t from = 0, to = 0, amount = 0;
        if (!ParseTransfer(m.Get("message").value_or(""), &from, &to,
                           &amount)) {
          return msgq::HandlerResult::Dead("bad transfer");
        }
        for (const std::string& sql :
             {absl::StrCat("UPDATE accounts SET balance = balance - ", amount,
                           " WHERE id = ", from),
              absl::StrCat("UPDATE accounts SET balance = balance + ", amount,
                           " WHERE id = ", to),
              absl::StrCat("INSERT INTO applied VALUES (", tx.Quote(m.id()),
                           ", 1) ON DUPLICATE KEY UPDATE times = times + 1")}) {
          if (absl::StatusOr<uint64_t> r = tx.Execute(sql); !r.ok()) {
            return r.status();
          }
        }
        if (work_delay_ms > 0) {
          absl::SleepFor(absl::Milliseconds(random() * work_delay_ms));
        }
        struct stat st;
        while (!hold.empty() && stat(hold.c_str(), &st) != 0) {
          absl::SleepFor(absl::Milliseconds(10));
        }
        return msgq::HandlerResult::Ack();
      });
  if (leave) {
    msgq::Subscriber::Handler inner = std::move(handler);
    handler = [&, inner](const msgq::Message& m) {
      msgq::HandlerResult r = inner(m);
      handled.Notify();
      return r;
    };
  }
  msgq::SubscriberOptions options;
  options.concurrency = leave ? 1 : 2;
  options.backoff.initial = absl::Milliseconds(50);
  options.backoff.max = absl::Milliseconds(500);
  options.ack.max_delay = absl::Milliseconds(20);
  if (leave) options.heartbeat.max_extension = absl::ZeroDuration();
  absl::StatusOr<std::unique_ptr<msgq::Subscriber>> sub =
      msgq::Subscriber::Start(msgq::NewChannel(args["msgqd"]), table,
                              std::move(handler), options);
  if (!sub.ok()) {
    std::fprintf(stderr, "%s\n", sub.status().ToString().c_str());
    return 1;
  }
  subscriber = sub->get();
  started.Notify();
  if (leave) {
    handled.WaitForNotification();
    (*sub)->Stop();
    return 0;
  }
  absl::Status done = (*sub)->Wait();  // until killed, or a fatal error
  std::fprintf(stderr, "subscription ended: %s\n", done.ToString().c_str());
  return 1;
}
