#include "tests/netns_plumbing.h"

#include <signal.h>

#include <cerrno>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "tools/launch/child_process.h"

namespace msgq::testing::netns {

using launch::RunCommand;
using launch::ShellQuote;

absl::StatusOr<std::string> Run(const std::string& command) {
  return RunCommand(absl::StrCat(command, " 2>&1"));
}

std::string In(const std::string& ns, const std::string& command) {
  return absl::StrCat("ip netns exec ", ShellQuote(ns), " ", command);
}

bool Executable(const std::string& name) {
  return Run(absl::StrCat("command -v ", name, " >/dev/null")).ok();
}

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

std::vector<std::string> Namespaces() {
  // "NAME" or "NAME (id: N)".
  std::vector<std::string> out;
  absl::StatusOr<std::string> list = Run("ip netns list");
  if (!list.ok()) return out;
  for (absl::string_view line :
       absl::StrSplit(*list, '\n', absl::SkipEmpty())) {
    out.emplace_back(line.substr(0, line.find(' ')));
  }
  return out;
}

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

bool NamespaceStale(absl::string_view name) {
  // "msgq-nf-PID-START-N" plus a role letter.
  if (!absl::ConsumePrefix(&name, kNamespacePrefix)) return false;
  std::vector<std::string> parts = absl::StrSplit(name, '-');
  int pid = 0;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &pid)) return false;
  return StartTime(pid) != parts[1];
}

bool InterfaceStale(absl::string_view name) {
  // "mqfPIDxN" plus a letter.
  if (!absl::ConsumePrefix(&name, kInterfacePrefix)) return false;
  int pid = 0;
  if (!absl::SimpleAtoi(name.substr(0, name.find('x')), &pid)) return false;
  return kill(pid, 0) != 0 && errno == ESRCH;
}

absl::StatusOr<std::string> FreeBlock(int seed) {
  for (int i = 0; i < 64; ++i) {
    const int block = ((seed + i) % 8192 + 8192) % 8192;
    const std::string base =
        absl::StrFormat("10.213.%d.%d", block / 32, (block % 32) * 8);
    absl::StatusOr<std::string> out =
        Run(absl::StrCat("ip -o -4 addr show to ", base, "/29"));
    if (out.ok() && absl::StripAsciiWhitespace(*out).empty()) return base;
  }
  return absl::InternalError("no free /29 in 10.213.0.0/16");
}

std::string Offset(const std::string& base, int i) {
  std::vector<std::string> octets = absl::StrSplit(base, '.');
  int last = 0;
  if (octets.size() != 4 || !absl::SimpleAtoi(octets[3], &last)) return base;
  octets[3] = absl::StrCat(last + i);
  return absl::StrJoin(octets, ".");
}

namespace {

std::string Mac(const std::string& command) {
  absl::StatusOr<std::string> out = Run(command);
  return out.ok() ? std::string(absl::StripAsciiWhitespace(*out)) : "";
}

// `command` in namespace `ns`, or in this one for "".
std::string At(const std::string& ns, const std::string& command) {
  return ns.empty() ? command : In(ns, command);
}

absl::Status RunAll(const std::vector<std::string>& commands) {
  for (const std::string& c : commands) {
    if (absl::StatusOr<std::string> out = Run(c); !out.ok()) {
      return out.status();
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status AddPair(const std::string& a, const std::string& ns_a,
                     const std::string& addr_a, const std::string& b,
                     const std::string& ns_b, const std::string& addr_b) {
  std::vector<std::string> commands = {
      absl::StrCat("ip link add ", a, " type veth peer name ", b)};
  if (!ns_a.empty()) {
    commands.push_back(absl::StrCat("ip link set ", a, " netns ", ns_a));
  }
  commands.push_back(absl::StrCat("ip link set ", b, " netns ", ns_b));
  commands.push_back(
      At(ns_a, absl::StrCat("ip addr add ", addr_a, "/30 dev ", a)));
  commands.push_back(At(ns_a, absl::StrCat("ip link set ", a, " up")));
  commands.push_back(
      At(ns_b, absl::StrCat("ip addr add ", addr_b, "/30 dev ", b)));
  commands.push_back(At(ns_b, absl::StrCat("ip link set ", b, " up")));
  if (absl::Status s = RunAll(commands); !s.ok()) return s;
  const std::string mac_a =
      Mac(At(ns_a, absl::StrCat("cat /sys/class/net/", a, "/address")));
  const std::string mac_b =
      Mac(At(ns_b, absl::StrCat("cat /sys/class/net/", b, "/address")));
  if (mac_a.empty() || mac_b.empty()) {
    return absl::InternalError("cannot read a veth pair's MAC addresses");
  }
  return RunAll({At(ns_a, absl::StrCat("ip neigh replace ", addr_b, " lladdr ",
                                       mac_b, " dev ", a, " nud permanent")),
                 At(ns_b, absl::StrCat("ip neigh replace ", addr_a, " lladdr ",
                                       mac_a, " dev ", b, " nud permanent"))});
}

}  // namespace msgq::testing::netns
