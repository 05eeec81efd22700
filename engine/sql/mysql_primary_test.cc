#include "engine/sql/mysql_primary.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

using ::testing::ElementsAre;

TEST(ParseMysqlEndpointsTest, HostsPortsAndIpv6) {
  absl::StatusOr<std::vector<MysqlEndpoint>> e =
      ParseMysqlEndpoints("db1, db2:3307,[::1]:3308,[fe80::1]", 3306);
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(e->size(), 4u);
  EXPECT_EQ((*e)[0], (MysqlEndpoint{"db1", 3306}));
  EXPECT_EQ((*e)[1], (MysqlEndpoint{"db2", 3307}));
  EXPECT_EQ((*e)[2], (MysqlEndpoint{"::1", 3308}));
  EXPECT_EQ((*e)[3], (MysqlEndpoint{"fe80::1", 3306}));
  EXPECT_EQ((*e)[1].ToString(), "db2:3307");
  EXPECT_EQ((*e)[2].ToString(), "[::1]:3308");
}

TEST(ParseMysqlEndpointsTest, BadEntriesAreNamed) {
  const char* kExpect =
      " (expected host, host:port or [ipv6]:port, comma-separated)";
  EXPECT_EQ(ParseMysqlEndpoints("a,,b", 3306).status(),
            absl::InvalidArgumentError(
                absl::StrCat("--mysql_host entry '': empty host", kExpect)));
  EXPECT_EQ(ParseMysqlEndpoints("a:0", 3306).status(),
            absl::InvalidArgumentError(absl::StrCat(
                "--mysql_host entry 'a:0': the port is not a number in "
                "1..65535",
                kExpect)));
  EXPECT_EQ(ParseMysqlEndpoints("a:x", 3306).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseMysqlEndpoints("a:", 3306).status(),
            absl::InvalidArgumentError(
                absl::StrCat("--mysql_host entry 'a:': empty port", kExpect)));
  EXPECT_EQ(ParseMysqlEndpoints("::1", 3306).status(),
            absl::InvalidArgumentError(absl::StrCat(
                "--mysql_host entry '::1': put an IPv6 address in brackets",
                kExpect)));
  EXPECT_EQ(ParseMysqlEndpoints("[::1", 3306).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseMysqlEndpoints("[::1]x", 3306).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseMysqlEndpoints("[::1]:", 3306).status().code(),
            absl::StatusCode::kInvalidArgument);
}

MysqlPrimary Three() { return MysqlPrimary({{"a", 1}, {"b", 2}, {"c", 3}}); }

TEST(MysqlPrimaryTest, FirstFoundIsThePrimaryWithoutANewGeneration) {
  MysqlPrimary p = Three();
  EXPECT_EQ(p.primary(), -1);
  EXPECT_THAT(p.Order(), ElementsAre(0, 1, 2));
  EXPECT_EQ(p.Found(1), 0u);
  EXPECT_EQ(p.primary(), 1);
  EXPECT_THAT(p.Order(), ElementsAre(1, 0, 2));
  EXPECT_EQ(p.Found(1), 0u);
  EXPECT_EQ(p.generation(), 0u);
}

TEST(MysqlPrimaryTest, AnotherWritableServerMovesThePrimary) {
  MysqlPrimary p = Three();
  p.Found(0);
  EXPECT_EQ(p.Found(2), 1u);
  EXPECT_EQ(p.primary(), 2);
  EXPECT_THAT(p.Order(), ElementsAre(2, 0, 1));
}

TEST(MysqlPrimaryTest, LostPrimaryStalesItsGenerationOnce) {
  MysqlPrimary p = Three();
  p.Found(0);
  p.Lost(1);  // not the primary: nothing goes stale
  EXPECT_EQ(p.generation(), 0u);
  EXPECT_THAT(p.Order(), ElementsAre(0, 2, 1));
  p.Lost(0);
  EXPECT_EQ(p.generation(), 1u);
  EXPECT_EQ(p.primary(), -1);
  EXPECT_THAT(p.Order(), ElementsAre(2, 0, 1));
  // The next one found belongs to the generation Lost() started.
  EXPECT_EQ(p.Found(2), 1u);
  EXPECT_THAT(p.Order(), ElementsAre(2, 0, 1));
}

TEST(MysqlPrimaryTest, FailingServersAreTriedLastEvenThePrimary) {
  MysqlPrimary p = Three();
  p.Found(0);
  p.Failed(0);
  EXPECT_EQ(p.generation(), 0u);  // its connections break by themselves
  EXPECT_THAT(p.Order(), ElementsAre(1, 2, 0));
  p.Failed(1);
  EXPECT_THAT(p.Order(), ElementsAre(2, 0, 1));
  EXPECT_EQ(p.Found(0), 0u);  // it came back: still the primary
  EXPECT_THAT(p.Order(), ElementsAre(0, 2, 1));
}

TEST(MysqlPrimaryTest, UnservableNodesAreLeftOutUntilServableAgain) {
  MysqlPrimary p = Three();
  p.Found(0);
  p.Unservable(1);  // not the primary: nothing goes stale
  EXPECT_EQ(p.generation(), 0u);
  EXPECT_FALSE(p.servable(1));
  EXPECT_THAT(p.Order(), ElementsAre(0, 2));
  p.Unservable(0);  // the primary: its connections go stale
  EXPECT_EQ(p.generation(), 1u);
  EXPECT_EQ(p.primary(), -1);
  EXPECT_THAT(p.Order(), ElementsAre(2));
  p.Unservable(0);  // again: no further generation
  EXPECT_EQ(p.generation(), 1u);
  EXPECT_EQ(p.Found(2), 1u);
  p.Servable(1);
  EXPECT_TRUE(p.servable(1));
  EXPECT_THAT(p.Order(), ElementsAre(2, 1));
  p.Unservable(2);
  EXPECT_EQ(p.generation(), 2u);
  p.Unservable(1);
  EXPECT_THAT(p.Order(), ElementsAre());
}

TEST(MysqlPrimaryTest, AConnectionThatSettledOnAnUnservableNodeIsMovedOff) {
  MysqlPrimary p = Three();
  p.Unservable(1);
  // Order() was read before the mark; the connection settles there anyway.
  EXPECT_EQ(p.Found(1), 0u);
  EXPECT_EQ(p.primary(), 1);
  EXPECT_THAT(p.Order(), ElementsAre(0, 2));
  p.Unservable(1);  // the monitor's next check
  EXPECT_EQ(p.generation(), 1u);
  EXPECT_EQ(p.primary(), -1);
}

TEST(MysqlPrimaryTest, FailedAndUnservableTogether) {
  MysqlPrimary p = Three();
  p.Found(0);
  p.Failed(1);
  p.Unservable(2);
  EXPECT_THAT(p.Order(), ElementsAre(0, 1));
  p.Servable(2);
  EXPECT_THAT(p.Order(), ElementsAre(0, 2, 1));
}

using Rows = std::vector<std::pair<std::string, std::string>>;

TEST(WsrepStateTest, SyncedPrimaryNodeMayBeServed) {
  absl::StatusOr<WsrepState> s =
      ParseWsrepState({{"wsrep_cluster_status", "Primary"},
                       {"wsrep_local_state", "4"},
                       {"wsrep_local_state_comment", "Synced"},
                       {"wsrep_ready", "ON"}},
                      "0");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->ready);
  EXPECT_EQ(s->local_state, 4);
  EXPECT_EQ(s->state_comment, "Synced");
  EXPECT_EQ(s->cluster_status, "Primary");
  EXPECT_FALSE(s->read_only);
  EXPECT_EQ(WsrepUnservableReason(*s), "");
}

TEST(WsrepStateTest, EveryReasonIsNamed) {
  absl::StatusOr<WsrepState> desynced =
      ParseWsrepState({{"WSREP_READY", "ON"},
                       {"WSREP_LOCAL_STATE", "2"},
                       {"WSREP_LOCAL_STATE_COMMENT", "Donor/Desynced"},
                       {"WSREP_CLUSTER_STATUS", "Primary"}},
                      "0");
  ASSERT_TRUE(desynced.ok()) << desynced.status();
  EXPECT_EQ(WsrepUnservableReason(*desynced),
            "wsrep_local_state 2 (Donor/Desynced)");
  absl::StatusOr<WsrepState> cut_off =
      ParseWsrepState({{"wsrep_ready", "OFF"},
                       {"wsrep_local_state", "0"},
                       {"wsrep_cluster_status", "non-Primary"}},
                      "1");
  ASSERT_TRUE(cut_off.ok()) << cut_off.status();
  EXPECT_EQ(WsrepUnservableReason(*cut_off),
            "wsrep_cluster_status non-Primary, wsrep_local_state 0, "
            "wsrep_ready OFF, read_only");
}

TEST(WsrepStateTest, MissingVariablesAreNamed) {
  EXPECT_EQ(ParseWsrepState({{"wsrep_local_state", "4"},
                             {"wsrep_cluster_status", "Primary"}},
                            "0")
                .status(),
            absl::InvalidArgumentError(
                "no readable wsrep_ready in SHOW GLOBAL STATUS"));
  EXPECT_EQ(ParseWsrepState({{"wsrep_ready", "ON"},
                             {"wsrep_local_state", "x"},
                             {"wsrep_cluster_status", "Primary"}},
                            "0")
                .status(),
            absl::InvalidArgumentError(
                "no readable wsrep_local_state in SHOW GLOBAL STATUS"));
  EXPECT_EQ(ParseWsrepState(Rows{}, "0").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace msgq
