#include "tests/instances_fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace msgq::testing {

// ---- InstancesTest ----

std::unique_ptr<Msgqd> InstancesTest::StartInstance(
    std::vector<std::string> extra) {
  std::vector<std::string> args = {
      "--databases=msgq", "--schema_reload_interval=200ms", "--leases",
      absl::StrCat("--lease_duration=", absl::FormatDuration(kLease))};
  args.insert(args.end(), extra.begin(), extra.end());
  auto server = Msgqd::Start(*db_, args);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

std::string InstancesTest::State(const Msgqd& server,
                                 const std::string& table) {
  return FindTable(server.Stub().get(), table).ownership().state();
}

int InstancesTest::Owned(const Msgqd& server) {
  v1::ListTablesResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  if (!server.Stub()
           ->ListTables(&context, v1::ListTablesRequest(), &response)
           .ok()) {
    return -1;
  }
  int n = 0;
  for (const auto& t : response.tables()) {
    n += t.ownership().state() == "owner";
  }
  return n;
}

bool StopAndWait(pid_t pid, absl::Duration timeout) {
  if (kill(pid, SIGSTOP) != 0) return false;
  const std::string tasks = absl::StrCat("/proc/", pid, "/task");
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    bool all = true;
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
      std::ifstream stat(task.path() / "stat");
      std::string line;
      std::getline(stat, line);
      // pid (comm) STATE ...: comm may hold spaces, so find the last ')'.
      const size_t paren = line.rfind(')');
      if (paren == std::string::npos || paren + 2 >= line.size()) continue;
      all &= line[paren + 2] == 'T' || line[paren + 2] == 't';
    }
    if (!ec && all) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return false;
}

std::set<std::string> Range(int from, int to) {
  std::set<std::string> out;
  for (int i = from; i <= to; ++i) out.insert(std::to_string(i));
  return out;
}

// ---- AckingSubscriber ----

AckingSubscriber::AckingSubscriber(v1::Messaging::Stub* own,
                                   v1::Messaging::Stub* fallback,
                                   const std::string& table,
                                   absl::Duration ack_every)
    : own_(own), fallback_(fallback), table_(table), ack_every_(ack_every) {
  reader_ = std::thread([this] { Read(); });
  acker_ = std::thread([this] { AckLoop(); });
}

AckingSubscriber::~AckingSubscriber() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  context_.TryCancel();
  reader_.join();
  acker_.join();
}

bool AckingSubscriber::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

void AckingSubscriber::Read() {
  v1::MessageStreamRequest request;
  request.set_name(table_);
  std::unique_ptr<grpc::ClientReader<v1::MessageStreamResponse>> reader =
      own_->MessageStream(&context_, request);
  v1::MessageStreamResponse response;
  while (reader->Read(&response)) {
    const absl::Time at = absl::Now();
    std::vector<std::string> ids;
    for (const v1::Row& row : response.rows()) ids.push_back(RowValue(row, 0));
    {
      absl::MutexLock lock(&mu_);
      fields_ = true;
      for (const std::string& id : ids) {
        arrivals_.push_back({id, at});
        unacked_.push_back(id);
      }
    }
    response.Clear();
  }
  (void)reader->Finish();
  absl::MutexLock lock(&mu_);
  ended_ = true;
}

void AckingSubscriber::AckLoop() {
  while (true) {
    std::vector<std::string> ids;
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), ack_every_);
      if (stopping_) return;
      ids.swap(unacked_);
    }
    if (!ids.empty()) Ack(ids);
  }
}

void AckingSubscriber::Ack(const std::vector<std::string>& ids) {
  // A short deadline: a server cut off from MySQL holds an ack as long as
  // its statement hangs; the other server then takes it.
  for (int attempt = 0; !stopping(); ++attempt) {
    v1::Messaging::Stub* stub =
        (attempt % 2 == 1 && fallback_ != nullptr) ? fallback_ : own_;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(3));
    v1::MessageAckRequest request;
    request.set_name(table_);
    for (const std::string& id : ids) request.add_ids(id);
    v1::MessageAckResponse response;
    if (stub->MessageAck(&context, request, &response).ok()) {
      const absl::Time at = absl::Now();
      absl::MutexLock lock(&mu_);
      for (const std::string& id : ids) acked_.emplace(id, at);
      return;
    }
    absl::SleepFor(absl::Milliseconds(50));  // retry pace, not a sync
  }
}

bool AckingSubscriber::WaitForFields(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return fields_ || ended_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&done), timeout);
  return fields_;
}

std::vector<AckingSubscriber::Arrival> AckingSubscriber::arrivals() const {
  absl::MutexLock lock(&mu_);
  return arrivals_;
}

std::vector<std::string> AckingSubscriber::ids() const {
  std::vector<std::string> out;
  absl::MutexLock lock(&mu_);
  for (const Arrival& a : arrivals_) out.push_back(a.id);
  return out;
}

std::map<std::string, absl::Time> AckingSubscriber::acked() const {
  absl::MutexLock lock(&mu_);
  return acked_;
}

std::multiset<std::string> Received(
    const std::vector<AckingSubscriber*>& subscribers) {
  std::multiset<std::string> out;
  for (AckingSubscriber* s : subscribers) {
    for (const std::string& id : s->ids()) out.insert(id);
  }
  return out;
}

// ---- Producer ----

Producer::Producer(const PrivateMariaDb& db, const std::string& table,
                   absl::Duration every) {
  thread_ = std::thread([this, &db, table, every] { Run(&db, table, every); });
}

Producer::~Producer() { Stop(); }

void Producer::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void Producer::Run(const PrivateMariaDb* db, std::string table,
                   absl::Duration every) {
  absl::StatusOr<std::unique_ptr<MysqlConnection>> conn = db->Connect();
  for (int id = 1;; ++id) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    const absl::Time started = absl::Now();
    const std::string sql =
        absl::StrCat("INSERT INTO msgq.`", table, "` (id, message) VALUES (",
                     id, ", '{\"n\": ", id, "}')");
    const bool ok = conn.ok() && (*conn)->Execute(sql).ok();
    {
      absl::MutexLock lock(&mu_);
      if (ok) {
        committed_.push_back({std::to_string(id), started});
      } else {
        ++failures_;
      }
    }
    absl::SleepFor(every);  // the production pace
  }
}

std::vector<Producer::Insert> Producer::committed() const {
  absl::MutexLock lock(&mu_);
  return committed_;
}

std::set<std::string> Producer::committed_ids() const {
  std::set<std::string> out;
  absl::MutexLock lock(&mu_);
  for (const Insert& i : committed_) out.insert(i.id);
  return out;
}

int Producer::failures() const {
  absl::MutexLock lock(&mu_);
  return failures_;
}

// ---- Relay ----

namespace {

bool Accepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok =
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Relay>> Relay::Start(int target) {
  std::unique_ptr<Relay> relay(new Relay());
  absl::StatusOr<std::unique_ptr<launch::OwnedDir>> dir =
      launch::OwnedDir::Create(absl::StrCat(kTempPrefix, "relay"));
  if (!dir.ok()) return dir.status();
  relay->dir_ = *std::move(dir);
  for (int attempt = 0; attempt < 5; ++attempt) {
    relay->port_ = FreeLoopbackPort();
    if (relay->port_ == 0) continue;
    // ChildProcess puts socat in a process group of its own (pgid = pid);
    // the children it forks per connection stay in it.
    absl::StatusOr<std::unique_ptr<launch::ChildProcess>> child =
        launch::ChildProcess::Start(
            {"socat",
             absl::StrCat("TCP-LISTEN:", relay->port_,
                          ",bind=127.0.0.1,reuseaddr,fork"),
             absl::StrCat("TCP:127.0.0.1:", target)},
            relay->dir_->path() + "/socat.log");
    if (!child.ok()) return child.status();
    relay->process_ = *std::move(child);
    const int port = relay->port_;
    launch::ChildProcess* process = relay->process_.get();
    Eventually([&] { return Accepts(port) || !process->running(); },
               absl::Seconds(10));
    if (!process->running()) break;  // not installed (tools/setup), or so
    if (Accepts(port)) return relay;
    relay->process_->Stop(SIGKILL, absl::Seconds(5));  // port taken: again
  }
  return absl::UnavailableError(
      absl::StrCat("socat did not listen: ",
                   relay->process_ ? relay->process_->Log() : "not started"));
}

Relay::~Relay() {
  if (process_ == nullptr) return;
  kill(-process_->pid(), SIGKILL);  // socat and its per-connection children
  process_->Stop(SIGKILL, absl::Seconds(5));
}

bool Relay::Freeze() { return kill(-process_->pid(), SIGSTOP) == 0; }
bool Relay::Thaw() { return kill(-process_->pid(), SIGCONT) == 0; }

}  // namespace msgq::testing
