#include "tests/netns_fixture.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "tests/test_env.h"
#include "tools/launch/child_process.h"

#ifndef MSGQ_SOURCE_DIR
#error "MSGQ_SOURCE_DIR must be defined"
#endif

namespace msgq::testing {
namespace {

using launch::RunCommand;
using launch::ShellQuote;

constexpr char kNamespacePrefix[] = "msgq-nf-";
constexpr char kInterfacePrefix[] = "mqf";

// A command's output; its stderr joins stdout so a failure says why.
absl::StatusOr<std::string> Run(const std::string& command) {
  return RunCommand(absl::StrCat(command, " 2>&1"));
}

// Field 22 of /proc/PID/stat: the process's start time in clock ticks
// since boot. "" when there is no such process.
std::string StartTime(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  if (!std::getline(in, line)) return "";
  // pid (comm) state ...: comm may hold spaces, so split after the last ')'.
  const size_t paren = line.rfind(')');
  if (paren == std::string::npos) return "";
  std::vector<std::string> fields =
      absl::StrSplit(line.substr(paren + 2), ' ', absl::SkipEmpty());
  // fields[0] is field 3 (state): field 22 is fields[19].
  return fields.size() > 19 ? fields[19] : "";
}

bool Executable(const std::string& name) {
  return Run(absl::StrCat("command -v ", name, " >/dev/null")).ok();
}

// The namespaces `ip netns list` shows ("NAME" or "NAME (id: N)").
std::vector<std::string> Namespaces() {
  std::vector<std::string> out;
  absl::StatusOr<std::string> list = Run("ip netns list");
  if (!list.ok()) return out;
  for (absl::string_view line :
       absl::StrSplit(*list, '\n', absl::SkipEmpty())) {
    out.emplace_back(line.substr(0, line.find(' ')));
  }
  return out;
}

// Kills what still runs in namespace `name` (our own test's processes: the
// namespace is named after its owner) and deletes it.
void DeleteNamespace(const std::string& name) {
  for (int round = 0; round < 20; ++round) {
    absl::StatusOr<std::string> pids =
        Run(absl::StrCat("ip netns pids ", ShellQuote(name)));
    if (!pids.ok()) break;
    bool any = false;
    for (absl::string_view p : absl::StrSplit(*pids, '\n', absl::SkipEmpty())) {
      int pid = 0;
      if (absl::SimpleAtoi(p, &pid) && pid > 1) {
        kill(pid, SIGKILL);
        any = true;
      }
    }
    if (!any) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  (void)Run(absl::StrCat("ip netns delete ", ShellQuote(name)));
}

// Whether the process that made `name` ("msgq-nf-PID-START-N") is gone.
bool NamespaceStale(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, kNamespacePrefix)) return false;
  std::vector<std::string> parts = absl::StrSplit(name, '-');
  int pid = 0;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &pid)) return false;
  return StartTime(pid) != parts[1];
}

// Whether the process that made interface `name` ("mqfPIDxN[ab]") is gone.
bool InterfaceStale(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, kInterfacePrefix)) return false;
  int pid = 0;
  if (!absl::SimpleAtoi(name.substr(0, name.find('x')), &pid)) return false;
  return kill(pid, 0) != 0 && errno == ESRCH;
}

// Whether an address of this namespace lies in 10.213.`a`.`b`/30.
bool SubnetInUse(int a, int b) {
  absl::StatusOr<std::string> out =
      Run(absl::StrFormat("ip -o -4 addr show to 10.213.%d.%d/30", a, b));
  return !out.ok() || !absl::StripAsciiWhitespace(*out).empty();
}

std::string Mac(const std::string& command) {
  absl::StatusOr<std::string> out = Run(command);
  return out.ok() ? std::string(absl::StripAsciiWhitespace(*out)) : "";
}

}  // namespace

// ---- NetnsLink ----

bool NetnsLink::Supported(std::string* why) {
  if (geteuid() != 0) {
    *why = "network fault tests need root (network namespaces, tc)";
    return false;
  }
  for (const char* tool : {"ip", "tc"}) {
    if (!Executable(tool)) {
      *why = absl::StrCat("network fault tests need iproute2's `", tool, "`");
      return false;
    }
  }
  return true;
}

void NetnsLink::SweepStale() {
  for (const std::string& ns : Namespaces()) {
    if (NamespaceStale(ns)) DeleteNamespace(ns);
  }
  absl::StatusOr<std::string> links = Run("ip -o link show");
  if (!links.ok()) return;
  for (absl::string_view line :
       absl::StrSplit(*links, '\n', absl::SkipEmpty())) {
    // "7: mqf123x0a@if6: <...": the name sits between ": " and '@' or ':'.
    std::vector<absl::string_view> parts =
        absl::StrSplit(line, absl::MaxSplits(": ", 2));
    if (parts.size() < 2) continue;
    absl::string_view name = parts[1].substr(0, parts[1].find_first_of("@:"));
    if (InterfaceStale(name)) {
      (void)Run(absl::StrCat("ip link delete ", ShellQuote(std::string(name))));
    }
  }
}

namespace {

// `command` run in namespace `ns` (quoted), for Run().
std::string In(const std::string& ns, const std::string& command) {
  return absl::StrCat("ip netns exec ", ShellQuote(ns), " ", command);
}

// One veth pair `a` (in namespace `ns_a`, "" for this one) and `b` (in
// `ns_b`), with addresses `addr_a`/`addr_b` in a /30, up, and permanent
// neighbour entries: during a drop ARP is lost too, and a failed neighbour
// would make a connect fail at once ("no route to host") where a real
// lossy path just leaves the SYN unanswered.
absl::Status AddPair(const std::string& a, const std::string& ns_a,
                     const std::string& addr_a, const std::string& b,
                     const std::string& ns_b, const std::string& addr_b) {
  auto at = [](const std::string& ns, const std::string& command) {
    return ns.empty() ? command : In(ns, command);
  };
  std::vector<std::string> commands = {
      absl::StrCat("ip link add ", a, " type veth peer name ", b)};
  if (!ns_a.empty()) {
    commands.push_back(absl::StrCat("ip link set ", a, " netns ", ns_a));
  }
  commands.push_back(absl::StrCat("ip link set ", b, " netns ", ns_b));
  commands.push_back(
      at(ns_a, absl::StrCat("ip addr add ", addr_a, "/30 dev ", a)));
  commands.push_back(at(ns_a, absl::StrCat("ip link set ", a, " up")));
  commands.push_back(
      at(ns_b, absl::StrCat("ip addr add ", addr_b, "/30 dev ", b)));
  commands.push_back(at(ns_b, absl::StrCat("ip link set ", b, " up")));
  for (const std::string& c : commands) {
    if (absl::StatusOr<std::string> out = Run(c); !out.ok())
      return out.status();
  }
  const std::string mac_a =
      Mac(at(ns_a, absl::StrCat("cat /sys/class/net/", a, "/address")));
  const std::string mac_b =
      Mac(at(ns_b, absl::StrCat("cat /sys/class/net/", b, "/address")));
  if (mac_a.empty() || mac_b.empty()) {
    return absl::InternalError("cannot read a veth pair's MAC addresses");
  }
  for (const std::string& c :
       {at(ns_a, absl::StrCat("ip neigh replace ", addr_b, " lladdr ", mac_b,
                              " dev ", a, " nud permanent")),
        at(ns_b, absl::StrCat("ip neigh replace ", addr_a, " lladdr ", mac_a,
                              " dev ", b, " nud permanent"))}) {
    if (absl::StatusOr<std::string> out = Run(c); !out.ok())
      return out.status();
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<NetnsLink>> NetnsLink::Create() {
  SweepStale();
  static int counter = 0;
  const int n = counter++;
  const pid_t pid = getpid();
  std::unique_ptr<NetnsLink> link(new NetnsLink());
  const std::string base =
      absl::StrCat(kNamespacePrefix, pid, "-", StartTime(pid), "-", n);
  link->name_ = absl::StrCat(base, "i");
  link->router_ = absl::StrCat(base, "r");
  const std::string ifs = absl::StrCat(kInterfacePrefix, pid, "x", n);
  link->host_if_ = ifs + "a";
  link->router_ifs_ = {ifs + "b", ifs + "c"};
  link->inner_if_ = ifs + "d";
  // A /29 of 10.213.0.0/16 that no address here is in (8,192 of them,
  // tried from one that depends on the pid so parallel tests differ),
  // split in two /30: host .1 - router .2, router .5 - inner .6.
  int block = -1;
  for (int i = 0; i < 64; ++i) {
    const int candidate = (pid * 7 + n * 131 + i) % 8192;
    if (!SubnetInUse(candidate / 32, (candidate % 32) * 8)) {
      block = candidate;
      break;
    }
  }
  if (block < 0) return absl::InternalError("no free /29 in 10.213.0.0/16");
  const int a = block / 32, b = (block % 32) * 8;
  auto address = [&](int i) {
    return absl::StrFormat("10.213.%d.%d", a, b + i);
  };
  link->host_address_ = address(1);
  link->inner_address_ = address(6);
  link->created_ = true;  // from here on the destructor cleans up
  for (const std::string& command : {
           absl::StrCat("ip netns add ", ShellQuote(link->router_)),
           absl::StrCat("ip netns add ", ShellQuote(link->name_)),
           In(link->router_, "ip link set lo up"),
           In(link->name_, "ip link set lo up"),
           In(link->router_, "sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward'"),
       }) {
    if (absl::StatusOr<std::string> out = Run(command); !out.ok()) {
      return out.status();
    }
  }
  if (absl::Status s = AddPair(link->host_if_, "", address(1),
                               link->router_ifs_[0], link->router_, address(2));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = AddPair(link->router_ifs_[1], link->router_, address(5),
                               link->inner_if_, link->name_, address(6));
      !s.ok()) {
    return s;
  }
  // Only the inner /30 goes through the router; the inner namespace has no
  // other way out.
  for (const std::string& command : {
           absl::StrCat("ip route add ", address(4), "/30 via ", address(2),
                        " dev ", link->host_if_),
           In(link->name_,
              absl::StrCat("ip route add default via ", address(5))),
       }) {
    if (absl::StatusOr<std::string> out = Run(command); !out.ok()) {
      return out.status();
    }
  }
  return link;
}

NetnsLink::~NetnsLink() {
  if (!created_) return;
  DeleteNamespace(name_);
  DeleteNamespace(router_);
  // Gone with the router's end unless the pair never got there.
  (void)Run(absl::StrCat("ip link delete ", host_if_, " 2>/dev/null; true"));
}

absl::Status NetnsLink::Drop() {
  // On the router's egress, both ways: the endpoints' own sends succeed
  // (a drop at a sender's qdisc would count as local congestion, which TCP
  // retries forever without counting a lost probe or retransmission).
  for (const std::string& dev : router_ifs_) {
    absl::StatusOr<std::string> out =
        Run(In(router_, absl::StrCat("tc qdisc replace dev ", dev,
                                     " root pfifo limit 0")));
    if (!out.ok()) return out.status();
  }
  return absl::OkStatus();
}

absl::Status NetnsLink::Restore() {
  // Deleting the root qdisc brings back the veth's default (noqueue).
  // Without one, del fails: ignored, so Restore() is idempotent; the
  // check below reports a qdisc still there.
  for (const std::string& dev : router_ifs_) {
    (void)Run(In(router_, absl::StrCat("tc qdisc del dev ", dev, " root")));
    absl::StatusOr<std::string> shown =
        Run(In(router_, absl::StrCat("tc qdisc show dev ", dev)));
    if (!shown.ok()) return shown.status();
    if (absl::StrContains(*shown, "pfifo")) {
      return absl::InternalError(absl::StrCat("still dropping: ", *shown));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> NetnsLink::Wrap(
    const std::vector<std::string>& argv) const {
  std::vector<std::string> out = {"ip", "netns", "exec", name_};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::string NetnsLink::WrapCommand(const std::string& command) const {
  return absl::StrCat("ip netns exec ", ShellQuote(name_), " sh -c ",
                      ShellQuote(command));
}

// ---- NetnsMariaDb ----

absl::StatusOr<std::unique_ptr<NetnsMariaDb>> NetnsMariaDb::Start(
    const NetnsLink& link, const std::vector<std::string>& extra_args) {
  std::unique_ptr<NetnsMariaDb> db(new NetnsMariaDb());
  db->link_ = &link;
  absl::StatusOr<std::unique_ptr<launch::OwnedDir>> dir =
      launch::OwnedDir::Create(absl::StrCat(kTempPrefix, "nsdb"));
  if (!dir.ok()) return dir.status();
  db->dir_ = *std::move(dir);
  // The launcher runs inside the namespace: its free-port probe, its
  // mariadbd and its watchdog (which kills mariadbd when this process
  // dies) all do. A later --bind-address wins over the launcher's.
  std::string command = absl::StrCat(
      ShellQuote(absl::StrCat(MSGQ_SOURCE_DIR, "/tools/mariadb-private")),
      " start ", ShellQuote(db->dir_->path()), " --owner-pid=", getpid(),
      " --binlog=on -- --bind-address=", link.inner_address());
  for (const std::string& a : extra_args) {
    absl::StrAppend(&command, " ", ShellQuote(a));
  }
  absl::StatusOr<std::string> out = RunCommand(link.WrapCommand(command));
  if (!out.ok()) return out.status();
  for (absl::string_view line : absl::StrSplit(*out, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&line, "MSGQ_MYSQL_SOCKET=")) {
      db->socket_ = std::string(line);
    } else if (absl::ConsumePrefix(&line, "MSGQ_MYSQL_PORT=")) {
      (void)absl::SimpleAtoi(line, &db->port_);
    }
  }
  if (db->socket_.empty() || db->port_ == 0) {
    return absl::InternalError(
        absl::StrCat("mariadb-private printed no socket or port: ", *out));
  }
  const std::string user = absl::StrCat("'root'@'", link.host_address(), "'");
  if (absl::Status s = db->Exec(absl::StrCat("CREATE USER ", user)); !s.ok()) {
    return s;
  }
  if (absl::Status s = db->Exec(
          absl::StrCat("GRANT ALL ON *.* TO ", user, " WITH GRANT OPTION"));
      !s.ok()) {
    return s;
  }
  return db;
}

std::string NetnsMariaDb::StopCommand() const {
  return absl::StrCat(
      ShellQuote(absl::StrCat(MSGQ_SOURCE_DIR, "/tools/mariadb-private")),
      " stop ", ShellQuote(dir_->path()), " --kill");
}

NetnsMariaDb::~NetnsMariaDb() {
  conn_.reset();
  // The launcher's stop only signals pids it recorded: it needs no
  // namespace.
  if (dir_ != nullptr) (void)RunCommand(StopCommand());
  dir_.reset();
}

std::vector<std::string> NetnsMariaDb::MsgqdArgs() const {
  return {
      "--mysql_socket=", absl::StrCat("--mysql_host=", link_->inner_address()),
      absl::StrCat("--mysql_port=", port_)};
}

MysqlOptions NetnsMariaDb::socket_options() const {
  MysqlOptions o;
  o.socket = socket_;
  return o;
}

absl::StatusOr<QueryResult> NetnsMariaDb::Query(const std::string& sql) {
  if (conn_ == nullptr || conn_->broken()) {
    absl::StatusOr<std::unique_ptr<MysqlConnection>> conn =
        MysqlConnection::Connect(socket_options());
    if (!conn.ok()) return conn.status();
    conn_ = *std::move(conn);
  }
  return conn_->Query(sql);
}

absl::Status NetnsMariaDb::Exec(const std::string& sql) {
  return Query(sql).status();
}

std::string NetnsMariaDb::Scalar(const std::string& sql) {
  absl::StatusOr<QueryResult> r = Query(sql);
  if (!r.ok() || r->rows.size() != 1 || r->rows[0].size() != 1) return "";
  return r->rows[0][0].value_or("<NULL>");
}

// ---- /proc/net/tcp ----

std::set<int> EstablishedTo(const std::string& address, int port) {
  // /proc/net/tcp: "sl local_address rem_address st ...", addresses as
  // hex IPv4 in network byte order read as a little-endian word, then
  // ":PORT" in hex; st 01 is ESTABLISHED.
  std::vector<std::string> octets = absl::StrSplit(address, '.');
  if (octets.size() != 4) return {};
  uint32_t ip = 0;
  for (int i = 3; i >= 0; --i) {
    int o = 0;
    (void)absl::SimpleAtoi(octets[i], &o);
    ip = (ip << 8) | static_cast<uint32_t>(o);
  }
  const std::string remote = absl::StrFormat("%08X:%04X", ip, port);
  std::set<int> out;
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> f =
        absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (f.size() < 4 || f[2] != remote || f[3] != "01") continue;
    const size_t colon = f[1].find(':');
    if (colon == std::string::npos) continue;
    int local_port = 0;
    if (absl::SimpleHexAtoi(f[1].substr(colon + 1), &local_port)) {
      out.insert(local_port);
    }
  }
  return out;
}

}  // namespace msgq::testing
