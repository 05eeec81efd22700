// `msgq tail`: prints the messages of a table as they arrive.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client/cli_common.h"
#include "client/cli_format.h"
#include "msgq/client.h"
#include "msgq/subscriber.h"

namespace msgq {
namespace {

constexpr char kTailUsage[] = R"(Usage: msgq tail TABLE [flags]

Subscribes to TABLE and prints its messages as they arrive, one per line:
"id=1 message=hello ..." (values with spaces or quotes are JSON-quoted, NULL
is NULL), followed by " epoch=N" for a message sent N times before (none on
a first delivery: epoch 0); ID:EPOCH names the delivery for 'msgq nack' and
'msgq extend'. Or, with --json, one JSON object per line of the row's columns
only ({"id":1,"message":"hello"}; numeric columns as numbers, NULL as null).
Messages are acknowledged only with --ack; otherwise the server redelivers
them after the table's ack_wait. With --count N each server sends at most N
messages unacked at a time (unless --max_unacked is given), and with --ack
messages received but not printed when tail stops (--count reached,
Ctrl-C) are handed back at once (nack, no delay), not left for their
ack_wait.
With --group NAME, reads the table's consumer group NAME (made with 'msgq
groups create') instead of its default group: the group's messages, acked
for the group alone (docs/design/consumer-groups.md).
With several servers (--server=A,B,...), subscribes to all of them, adds
" server=A" to each text line (the server to ack, nack or extend it on: ids
are unique only within a shard) and acks each message on its own server.
Reconnects when the stream ends (server restart, table reload); fails at once
if the first connection cannot be made or the table is unknown. Stops on
Ctrl-C, or with --count N after N messages (exit 0).

Flags:
)";

// Shared by the handler, the signal thread and RunTail.
class TailState {
 public:
  TailState(std::ostream& out, std::ostream& err, bool json, int64_t count,
            bool show_server)
      : out_(out),
        err_(err),
        json_(json),
        count_(count),
        show_server_(show_server) {}

  HandlerResult Print(const Message& message) {
    absl::MutexLock lock(&mu_);
    if (count_ > 0 && printed_ >= count_) {
      return HandlerResult::RetryAfter(absl::ZeroDuration(),
                                       "msgq tail stopped before printing it");
    }
    out_ << (json_ ? FormatMessageJson(message)
                   : FormatMessageTextWithEpoch(message));
    if (show_server_ && !json_) out_ << " server=" << message.server();
    out_ << "\n";
    out_.flush();
    if (++printed_ == count_) StopLocked();
    return HandlerResult::Ack();
  }

  void Stop() {
    absl::MutexLock lock(&mu_);
    StopLocked();
  }

  // Hands over the subscriber so Stop() can reach it; honours a stop that
  // came first.
  void Attach(Subscriber* subscriber) {
    absl::MutexLock lock(&mu_);
    subscriber_ = subscriber;
    if (stop_) subscriber_->RequestStop();
  }

  void Note(absl::string_view text) {
    absl::MutexLock lock(&mu_);
    err_ << "msgq tail: " << text << "\n";
    err_.flush();
  }

  void AckFailed(const absl::Status& status) {
    absl::MutexLock lock(&mu_);
    ack_error_ = status;
    err_ << "msgq tail: acknowledging failed: "
         << absl::StatusCodeToString(status.code()) << ": " << status.message()
         << "\n";
    err_.flush();
  }

  absl::Status ack_error() const {
    absl::MutexLock lock(&mu_);
    return ack_error_;
  }

 private:
  void StopLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    stop_ = true;
    if (subscriber_ != nullptr) subscriber_->RequestStop();
  }

  std::ostream& out_;
  std::ostream& err_;
  const bool json_;
  const int64_t count_;
  const bool show_server_;

  mutable absl::Mutex mu_;
  int64_t printed_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  Subscriber* subscriber_ ABSL_GUARDED_BY(mu_) = nullptr;
  absl::Status ack_error_ ABSL_GUARDED_BY(mu_);
};

// Turns SIGINT, SIGTERM and SIGHUP into TailState::Stop() on a thread of its
// own, for as long as it lives. Must be created before any other thread.
class SignalStopper {
 public:
  explicit SignalStopper(TailState& state) {
    sigemptyset(&set_);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR1}) sigaddset(&set_, sig);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
    thread_ = std::thread([this, &state] {
      int sig = 0;
      if (sigwait(&set_, &sig) == 0 && sig != SIGUSR1) state.Stop();
    });
  }

  ~SignalStopper() {
    pthread_kill(thread_.native_handle(), SIGUSR1);
    thread_.join();
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

  SignalStopper(const SignalStopper&) = delete;
  SignalStopper& operator=(const SignalStopper&) = delete;

 private:
  sigset_t set_;
  sigset_t old_;
  std::thread thread_;
};

}  // namespace

int RunTail(absl::Span<const std::string> args, std::ostream& out,
            std::ostream& err, const CliEnvironment& env) {
  bool ack = false;
  bool json = false;
  int64_t count = 0;
  int64_t max_unacked = 0;
  std::string group;
  CliCommand cmd("tail", kTailUsage, CliCommand::Target::kTable, env, out, err);
  cmd.flags().AddBool("ack", &ack, "acknowledge each message once printed");
  cmd.flags().AddCount("count", &count, "N",
                       "exit after N messages; 0 = run until interrupted");
  cmd.flags().AddString("group", &group, "NAME",
                        "read consumer group NAME; empty = the default group");
  cmd.flags().AddBool("json", &json, "print one JSON object per message");
  cmd.flags().AddCount("max_unacked", &max_unacked, "N",
                       "each server sends at most N messages unacked at a "
                       "time; 0 = unlimited (with --count: N of --count)");
  if (std::optional<int> done = cmd.Parse(args)) return *done;
  if (cmd.positional().empty()) return cmd.UsageError("missing TABLE");
  if (cmd.positional().size() > 1) {
    return cmd.UsageError("unexpected argument '" + cmd.positional()[1] + "'");
  }
  const CommonFlags& common = cmd.common();
  const std::vector<std::string> servers = ServerList(common);
  if (servers.empty()) return cmd.UsageError("empty --server");

  TailState state(out, err, json, count, servers.size() > 1);
  std::optional<SignalStopper> signals;
  if (env.handle_signals) signals.emplace(state);

  SubscriberOptions options;
  options.group = group;
  options.concurrency = 1;  // print in arrival order
  options.auto_ack = ack;
  // --count N needs at most N at a time: no more are held from others.
  if (max_unacked == 0 && count > 0) max_unacked = count;
  options.max_unacked = static_cast<int>(
      std::min<int64_t>(max_unacked, std::numeric_limits<int>::max()));
  options.release_unhandled = ack;
  options.ack_timeout = common.timeout;
  options.retry_initial_connect = false;
  // Streams started per server; each server's stream thread touches only
  // its own entry, created here before any thread starts.
  absl::flat_hash_map<std::string, int64_t> streams;
  for (const std::string& server : servers) streams[server] = 0;
  const bool several = servers.size() > 1;
  options.on_server_connected = [&state, &streams, several](
                                    absl::string_view server, const Schema&) {
    if (++streams.find(server)->second > 1) {
      state.Note(several ? absl::StrCat("reconnected to ", server)
                         : "reconnected");
    }
  };
  options.on_standby = [&state, several](absl::string_view server,
                                         absl::string_view note) {
    state.Note(several ? absl::StrCat(server, ": ", note) : std::string(note));
  };
  options.on_stream_error = [&state](const absl::Status& status,
                                     absl::Duration retry_in) {
    state.Note(absl::StrCat("stream ended (",
                            absl::StatusCodeToString(status.code()), ": ",
                            status.message(), "); reconnecting in ",
                            absl::FormatDuration(retry_in)));
  };
  options.on_ack_error = [&state](const absl::Status& status) {
    state.AckFailed(status);
  };
  absl::StatusOr<std::vector<ServerChannel>> channels = ChannelsFor(common);
  if (!channels.ok()) return cmd.UsageError(channels.status().message());
  absl::StatusOr<std::unique_ptr<Subscriber>> subscriber = Subscriber::Start(
      *std::move(channels), cmd.table(),
      [&state](const Message& message) { return state.Print(message); },
      std::move(options));
  if (!subscriber.ok()) return cmd.UsageError(subscriber.status().message());
  state.Attach(subscriber->get());
  absl::Status status = (*subscriber)->Wait();
  (*subscriber)->Stop();  // waits for the handler and flushes acks
  subscriber->reset();
  signals.reset();
  if (!status.ok()) return cmd.Error(status);
  if (absl::Status ack_error = state.ack_error(); !ack_error.ok()) {
    return ExitCodeFor(ack_error);
  }
  return kExitOk;
}

}  // namespace msgq
