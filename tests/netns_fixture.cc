// NetnsLink and EstablishedTo (tests/netns_fixture.h); the `ip` plumbing is
// tests/netns_plumbing.cc, NetnsMariaDb tests/netns_mariadb.cc.
#include "tests/netns_fixture.h"

#include <unistd.h>

#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "tests/netns_plumbing.h"
#include "tools/launch/child_process.h"

namespace msgq::testing {

using launch::ShellQuote;
using netns::In;
using netns::Offset;
using netns::Run;

bool NetnsLink::Supported(std::string* why) {
  if (geteuid() != 0) {
    *why = "network fault tests need root (network namespaces, tc)";
    return false;
  }
  for (const char* tool : {"ip", "tc"}) {
    if (!netns::Executable(tool)) {
      *why = absl::StrCat("network fault tests need iproute2's `", tool, "`");
      return false;
    }
  }
  return true;
}

void NetnsLink::SweepStale() {
  for (const std::string& ns : netns::Namespaces()) {
    if (netns::NamespaceStale(ns)) netns::DeleteNamespace(ns);
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
    if (netns::InterfaceStale(name)) {
      (void)Run(absl::StrCat("ip link delete ", ShellQuote(std::string(name))));
    }
  }
}

absl::StatusOr<std::unique_ptr<NetnsLink>> NetnsLink::Create() {
  SweepStale();
  static int counter = 0;
  const int n = counter++;
  const pid_t pid = getpid();
  std::unique_ptr<NetnsLink> link(new NetnsLink());
  const std::string base = absl::StrCat(netns::kNamespacePrefix, pid, "-",
                                        netns::StartTime(pid), "-", n);
  link->name_ = absl::StrCat(base, "i");
  link->router_ = absl::StrCat(base, "r");
  link->ifs_ = absl::StrCat(netns::kInterfacePrefix, pid, "x", n);
  link->host_if_ = link->ifs_ + "a";
  link->router_ifs_ = {link->ifs_ + "b", link->ifs_ + "c"};
  link->inner_if_ = link->ifs_ + "d";
  // A /29 split in two /30: host .1 - router .2, router .5 - inner .6.
  absl::StatusOr<std::string> block = netns::FreeBlock(pid * 7 + n * 131);
  if (!block.ok()) return block.status();
  link->host_address_ = Offset(*block, 1);
  link->inner_address_ = Offset(*block, 6);
  link->created_ = true;  // from here on the destructor cleans up
  if (absl::Status s = link->Plumb(*block); !s.ok()) return s;
  return link;
}

absl::Status NetnsLink::Plumb(const std::string& block) {
  for (const std::string& command : {
           absl::StrCat("ip netns add ", ShellQuote(router_)),
           absl::StrCat("ip netns add ", ShellQuote(name_)),
           In(router_, "ip link set lo up"),
           In(name_, "ip link set lo up"),
           In(router_, "sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward'"),
       }) {
    if (absl::StatusOr<std::string> out = Run(command); !out.ok()) {
      return out.status();
    }
  }
  if (absl::Status s =
          netns::AddPair(host_if_, "", Offset(block, 1), router_ifs_[0],
                         router_, Offset(block, 2));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = netns::AddPair(router_ifs_[1], router_, Offset(block, 5),
                                      inner_if_, name_, Offset(block, 6));
      !s.ok()) {
    return s;
  }
  // Only the inner /30 goes through the router; the inner namespace has no
  // other way out (but a side path's own /30).
  for (const std::string& command : {
           absl::StrCat("ip route add ", Offset(block, 4), "/30 via ",
                        Offset(block, 2), " dev ", host_if_),
           In(name_,
              absl::StrCat("ip route add default via ", Offset(block, 5))),
       }) {
    if (absl::StatusOr<std::string> out = Run(command); !out.ok()) {
      return out.status();
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> NetnsLink::AddSidePath() {
  if (!side_address_.empty()) return side_address_;
  absl::StatusOr<std::string> block =
      netns::FreeBlock(static_cast<int>(getpid()) * 7 + 4099);
  if (!block.ok()) return block.status();
  side_if_ = ifs_ + "e";
  if (absl::Status s = netns::AddPair(side_if_, "", Offset(*block, 1),
                                      ifs_ + "f", name_, Offset(*block, 2));
      !s.ok()) {
    return s;
  }
  side_address_ = Offset(*block, 2);
  return side_address_;
}

NetnsLink::~NetnsLink() {
  if (!created_) return;
  netns::DeleteNamespace(name_);
  netns::DeleteNamespace(router_);
  // Gone with their other ends unless a pair never got there.
  for (const std::string& dev : {host_if_, side_if_}) {
    if (dev.empty()) continue;
    (void)Run(absl::StrCat("ip link delete ", dev, " 2>/dev/null; true"));
  }
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
