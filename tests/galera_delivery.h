// What the Galera fault tests (docs/galera.md#what-is-tested) check of a run's
// deliveries: the rows a cluster should deliver, those in flight at a moment,
// and the duplicates among what subscribers received.
//
// Pure functions of the subscribers' and producers' records (and one
// query): call them from the test's thread once the traffic has stopped or
// while it runs (the records are thread-safe).
#ifndef MSGQ_TESTS_GALERA_DELIVERY_H_
#define MSGQ_TESTS_GALERA_DELIVERY_H_

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/galera_fixture.h"
#include "tests/instances_fixture.h"

namespace msgq::testing {

// Ids `sub` received at or before `at` whose ack had not returned OK then.
// Exact only once `sub` has recorded everything up to `at`: a subscriber
// stamps an arrival (or an OK ack) before it records it, so a record of a
// moment just before `at` may appear a little after `at` (much later on a
// loaded machine). Call it after the moment, not at it.
std::set<std::string> InFlight(const AckingSubscriber& sub, absl::Time at);

// Ids `sub` received in [from, to).
std::set<std::string> ReceivedBetween(const AckingSubscriber& sub,
                                      absl::Time from, absl::Time to);

struct Duplicates {
  int total = 0;              // deliveries of an id after its first
  int inside = 0;             // within `ack_wait` of the one before
  int inside_unexpected = 0;  // of those, of an id not in `allowed`
  int after_ok_ack = 0;       // after an ack of the id had returned OK
  // The ids of those inside_unexpected or after_ok_ack, for a report.
  std::set<std::string> wrong;
};
// Over every delivery `subs` recorded.
Duplicates CountDuplicates(const std::vector<AckingSubscriber*>& subs,
                           const std::set<std::string>& allowed,
                           absl::Duration ack_wait);

// For a failure message: each delivery of `ids` (by the subscriber
// `names` names, at the same index as in `subs`) and the first OK ack of
// each, in seconds relative to `origin`.
std::string DescribeDeliveries(const std::vector<AckingSubscriber*>& subs,
                               const std::vector<std::string>& names,
                               const std::set<std::string>& ids,
                               absl::Time origin);

// Creates the message tables msgq.`tables` on `node`, with vt_ack_wait
// `ack_wait` (whole seconds); the first error.
absl::Status CreateMessageTables(GaleraCluster& cluster, int node,
                                 const std::vector<std::string>& tables,
                                 absl::Duration ack_wait);

// Every row that must be delivered: each INSERT the producers saw commit,
// and each row msgq.`tables` hold on `node` (a commit whose reply a fault
// cut off). An error of the query.
absl::StatusOr<std::set<std::string>> ExpectedRows(
    GaleraCluster& cluster, int node,
    const std::vector<std::unique_ptr<GaleraProducer>>& producers,
    const std::vector<std::string>& tables);

// The ids of `expected` that `subs` never received.
std::set<std::string> Undelivered(const std::set<std::string>& expected,
                                  const std::vector<AckingSubscriber*>& subs);

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_GALERA_DELIVERY_H_
