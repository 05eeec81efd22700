#include "tests/galera_delivery.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace msgq::testing {

std::set<std::string> InFlight(const AckingSubscriber& sub, absl::Time at) {
  std::set<std::string> out;
  const std::map<std::string, absl::Time> acked = sub.acked();
  for (const auto& arrival : sub.arrivals()) {
    if (arrival.at > at) continue;
    auto it = acked.find(arrival.id);
    if (it == acked.end() || it->second > at) out.insert(arrival.id);
  }
  return out;
}

std::set<std::string> ReceivedBetween(const AckingSubscriber& sub,
                                      absl::Time from, absl::Time to) {
  std::set<std::string> out;
  for (const auto& arrival : sub.arrivals()) {
    if (arrival.at >= from && arrival.at < to) out.insert(arrival.id);
  }
  return out;
}

Duplicates CountDuplicates(const std::vector<AckingSubscriber*>& subs,
                           const std::set<std::string>& allowed,
                           absl::Duration ack_wait) {
  std::map<std::string, std::vector<absl::Time>> arrivals;
  std::map<std::string, absl::Time> first_ack;
  for (const AckingSubscriber* s : subs) {
    for (const auto& a : s->arrivals()) arrivals[a.id].push_back(a.at);
    for (const auto& [id, at] : s->acked()) {
      auto [it, inserted] = first_ack.emplace(id, at);
      if (!inserted) it->second = std::min(it->second, at);
    }
  }
  Duplicates d;
  for (auto& [id, times] : arrivals) {
    std::sort(times.begin(), times.end());
    auto ack = first_ack.find(id);
    for (size_t i = 1; i < times.size(); ++i) {
      ++d.total;
      if (ack != first_ack.end() && ack->second < times[i]) {
        ++d.after_ok_ack;
        d.wrong.insert(id);
      }
      if (times[i] - times[i - 1] < ack_wait) {
        ++d.inside;
        if (!allowed.count(id)) {
          ++d.inside_unexpected;
          d.wrong.insert(id);
        }
      }
    }
  }
  return d;
}

std::string DescribeDeliveries(const std::vector<AckingSubscriber*>& subs,
                               const std::vector<std::string>& names,
                               const std::set<std::string>& ids,
                               absl::Time origin) {
  auto seconds = [&](absl::Time t) {
    return absl::StrFormat("%+.3fs", absl::ToDoubleSeconds(t - origin));
  };
  std::string out;
  for (const std::string& id : ids) {
    absl::StrAppend(&out, "row ", id, ":");
    for (size_t i = 0; i < subs.size(); ++i) {
      for (const auto& arrival : subs[i]->arrivals()) {
        if (arrival.id == id) {
          absl::StrAppend(&out, " delivered to ", names[i], " at ",
                          seconds(arrival.at), ";");
        }
      }
      const std::map<std::string, absl::Time> acked = subs[i]->acked();
      auto it = acked.find(id);
      if (it != acked.end()) {
        absl::StrAppend(&out, " its ack by ", names[i], " OK at ",
                        seconds(it->second), ";");
      }
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

absl::Status CreateMessageTables(GaleraCluster& cluster, int node,
                                 const std::vector<std::string>& tables,
                                 absl::Duration ack_wait) {
  for (const std::string& t : tables) {
    absl::Status s = cluster.Exec(
        node, MessageTableDdl(
                  t, MessageComment(absl::StrCat(
                         "vt_ack_wait=", absl::ToInt64Seconds(ack_wait)))));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::set<std::string>> ExpectedRows(
    GaleraCluster& cluster, int node,
    const std::vector<std::unique_ptr<GaleraProducer>>& producers,
    const std::vector<std::string>& tables) {
  std::set<std::string> expected;
  for (const auto& p : producers) {
    const std::set<std::string> ids = p->committed();
    expected.insert(ids.begin(), ids.end());
  }
  for (const std::string& t : tables) {
    absl::StatusOr<QueryResult> rows =
        cluster.Query(node, absl::StrCat("SELECT id FROM msgq.`", t, "`"));
    if (!rows.ok()) return rows.status();
    for (const auto& row : rows->rows) expected.insert(row[0].value_or(""));
  }
  return expected;
}

std::set<std::string> Undelivered(const std::set<std::string>& expected,
                                  const std::vector<AckingSubscriber*>& subs) {
  const std::multiset<std::string> got = Received(subs);
  std::set<std::string> missing;
  for (const std::string& id : expected) {
    if (!got.count(id)) missing.insert(id);
  }
  return missing;
}

}  // namespace msgq::testing
