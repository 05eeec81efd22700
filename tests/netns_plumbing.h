// Network namespace and veth plumbing for tests/netns_fixture.h: the shell
// commands (iproute2's `ip`), the stale-namespace sweep's tests, and one
// veth pair between two namespaces. Internal to the netns fixtures; tests
// use NetnsLink and NetnsMariaDb.
//
// Every function runs `ip` through a shell and returns what it printed;
// failures are INTERNAL with the command's output (stderr joined).
//
// Not thread-safe: the test's thread drives it.
#ifndef MSGQ_TESTS_NETNS_PLUMBING_H_
#define MSGQ_TESTS_NETNS_PLUMBING_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace msgq::testing::netns {

// Namespaces are "msgq-nf-PID-START-N..." and interfaces "mqfPIDxN.", PID
// and START (its start time) naming the test process that owns them.
inline constexpr char kNamespacePrefix[] = "msgq-nf-";
inline constexpr char kInterfacePrefix[] = "mqf";

// A command's output; its stderr joins stdout so a failure says why.
absl::StatusOr<std::string> Run(const std::string& command);
// `command` run in namespace `ns` (quoted), for Run().
std::string In(const std::string& ns, const std::string& command);
// Whether `name` is on the PATH.
bool Executable(const std::string& name);

// Field 22 of /proc/PID/stat: the process's start time in clock ticks
// since boot. "" when there is no such process.
std::string StartTime(pid_t pid);

// The namespaces `ip netns list` shows.
std::vector<std::string> Namespaces();
// Kills what still runs in namespace `name` (the test's own processes: the
// namespace is named after its owner), then deletes it. At most 20 rounds
// of SIGKILL, 50 ms apart.
void DeleteNamespace(const std::string& name);
// Whether the process that made namespace `name` is gone.
bool NamespaceStale(absl::string_view name);
// Whether the process that made interface `name` is gone.
bool InterfaceStale(absl::string_view name);

// A /29 of 10.213.0.0/16 no address of this namespace is in (8,192 of
// them, tried from one that depends on `seed` so parallel tests differ, 64
// at most), as its first address "10.213.A.B". Callers put an address of
// this namespace in each block they take, so a later search skips it.
// INTERNAL when none is free.
absl::StatusOr<std::string> FreeBlock(int seed);
// The address `i` after `base` ("10.213.A.B" -> "10.213.A.B+i").
std::string Offset(const std::string& base, int i);

// One veth pair `a` (in namespace `ns_a`, "" for this one) and `b` (in
// `ns_b`), with addresses `addr_a`/`addr_b` in a /30, up, and permanent
// neighbour entries: when the path is dropped ARP is lost too, and a
// failed neighbour would make a connect fail at once ("no route to host")
// where a real lossy path just leaves the SYN unanswered.
absl::Status AddPair(const std::string& a, const std::string& ns_a,
                     const std::string& addr_a, const std::string& b,
                     const std::string& ns_b, const std::string& addr_b);

}  // namespace msgq::testing::netns

#endif  // MSGQ_TESTS_NETNS_PLUMBING_H_
