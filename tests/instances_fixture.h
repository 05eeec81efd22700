// Helpers for the tests of several msgqd with --leases
// (docs/several-instances.md#leases-several-msgqd-on-one-database):
//
//   InstancesTest   MsgqTest plus StartInstance() (short leases) and
//                   ownership queries through ListTables.
//   AckingSubscriber  a MessageStream reader that records when each row
//                   arrived and acks what arrived in batches (one
//                   MessageAck per `ack_every`, like a consumer that
//                   settles what it processed) on its own server, falling
//                   back to another server when that fails (an ack is an
//                   UPDATE by id any instance may run).
//   Producer        inserts ids 1, 2, ... into a table at a steady pace on
//                   a connection of its own and records what committed.
//   Relay           a TCP relay (Debian's socat) between one msgqd and
//                   MariaDB that the test freezes (SIGSTOP of its process
//                   group: packets stop, no socket is closed: a partition,
//                   not a reset) and thaws.
//
// Everything stops in its destructor. Thread-safety: the accessors of
// AckingSubscriber and Producer may be called from any thread; the rest
// from the test's thread only.
#ifndef MSGQ_TESTS_INSTANCES_FIXTURE_H_
#define MSGQ_TESTS_INSTANCES_FIXTURE_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tests/fixture.h"
#include "tools/launch/child_process.h"
#include "tools/launch/owned_dir.h"

namespace msgq::testing {

inline constexpr absl::Duration kLease = absl::Seconds(2);

class InstancesTest : public MsgqTest {
 protected:
  std::unique_ptr<Msgqd> StartInstance(std::vector<std::string> extra = {});
  // This instance's ownership state of msgq.`table` ("" when unreachable).
  static std::string State(const Msgqd& server, const std::string& table);
  // Tables this instance owns (-1 when ListTables fails).
  static int Owned(const Msgqd& server);
};

// Ids "from".."to".
std::set<std::string> Range(int from, int to);

// Sends SIGSTOP to `pid` and waits until every thread of it is stopped
// (state T in /proc/PID/task/*/stat). kill() returns before that: one
// thread takes the signal and then stops the others, so on a loaded machine
// the process may run on for a while. False on timeout.
bool StopAndWait(pid_t pid, absl::Duration timeout = absl::Seconds(10));

class AckingSubscriber {
 public:
  struct Arrival {
    std::string id;
    absl::Time at;
  };
  // Reads msgq.`table` from `own`; every `ack_every` acks what arrived
  // since on `own`, then on `fallback` (may be null) when that fails,
  // until one answers OK.
  AckingSubscriber(v1::Messaging::Stub* own, v1::Messaging::Stub* fallback,
                   const std::string& table,
                   absl::Duration ack_every = absl::Milliseconds(100));
  ~AckingSubscriber();  // cancels and joins

  bool WaitForFields(absl::Duration timeout);
  std::vector<Arrival> arrivals() const;
  std::vector<std::string> ids() const;
  // Id -> when its ack first returned OK.
  std::map<std::string, absl::Time> acked() const;

 private:
  void Read();
  void AckLoop();
  void Ack(const std::vector<std::string>& ids);
  bool stopping() const;

  v1::Messaging::Stub* const own_;
  v1::Messaging::Stub* const fallback_;
  const std::string table_;
  const absl::Duration ack_every_;
  grpc::ClientContext context_;
  mutable absl::Mutex mu_;
  bool fields_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Arrival> arrivals_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> unacked_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Time> acked_ ABSL_GUARDED_BY(mu_);
  std::thread reader_;
  std::thread acker_;
};

// Ids received by `subscribers`, duplicates counted.
std::multiset<std::string> Received(
    const std::vector<AckingSubscriber*>& subscribers);

class Producer {
 public:
  struct Insert {
    std::string id;
    absl::Time started;  // before the INSERT was sent
  };
  // Starts inserting into msgq.`table`, one row per `every`.
  Producer(const PrivateMariaDb& db, const std::string& table,
           absl::Duration every);
  ~Producer();  // Stop()
  void Stop();
  // Rows whose INSERT returned OK, in order; failed INSERTs are counted.
  std::vector<Insert> committed() const;
  std::set<std::string> committed_ids() const;
  int failures() const;

 private:
  void Run(const PrivateMariaDb* db, std::string table, absl::Duration every);

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Insert> committed_ ABSL_GUARDED_BY(mu_);
  int failures_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

class Relay {
 public:
  // socat listening on 127.0.0.1:port(), forwarding to 127.0.0.1:`target`.
  static absl::StatusOr<std::unique_ptr<Relay>> Start(int target);
  ~Relay();  // kills the process group
  int port() const { return port_; }
  // SIGSTOP / SIGCONT to socat and the children it forked per connection.
  bool Freeze();
  bool Thaw();

 private:
  Relay() = default;
  int port_ = 0;
  std::unique_ptr<launch::OwnedDir> dir_;
  std::unique_ptr<launch::ChildProcess> process_;
};

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_INSTANCES_FIXTURE_H_
