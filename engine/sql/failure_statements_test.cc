// The SQL text of failure handling; what it does against MariaDB is tested
// in tests/store_failure_test.cc.
#include "engine/sql/failure_statements.h"

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace msgq {
namespace {

MessageTable Table(int max_attempts = 0, absl::Duration max_age = {},
                   bool time_dead = true, int last_error_chars = 8) {
  MessageTable t;
  t.keyspace = "db";
  t.name = "t";
  t.settings.max_attempts = max_attempts;
  t.settings.max_age = max_age;
  t.has_time_created = true;
  t.has_time_dead = time_dead;
  t.last_error_chars = last_error_chars;
  return t;
}

TEST(LastErrorTextTest, ReplacesInvalidUtf8AndCutsToCharacters) {
  EXPECT_EQ(LastErrorText("plain", 8), "plain");
  EXPECT_EQ(LastErrorText("abcdefghij", 8), "abcdefgh");
  // Two-byte and four-byte characters count once each.
  EXPECT_EQ(LastErrorText("\xC3\xA9\xF0\x9F\x98\x80xyz", 3),
            "\xC3\xA9\xF0\x9F\x98\x80x");
  // A lone continuation byte, a truncated sequence, an overlong '/', a
  // surrogate: each byte not starting a valid sequence is one U+FFFD.
  EXPECT_EQ(LastErrorText("a\x80z", 8), "a\xEF\xBF\xBDz");
  EXPECT_EQ(LastErrorText("\xE2\x82", 8), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(LastErrorText("\xC0\xAF", 8), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(LastErrorText("\xED\xA0\x80", 2), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(LastErrorText(std::string("a\0b", 3), 8), std::string("a\0b", 3));
  EXPECT_EQ(LastErrorText("", 8), "");
}

TEST(LastErrorTextTest, KeepsToTheColumnsCharacterSet) {
  EXPECT_EQ(RepertoireOf("utf8mb4"), Repertoire::kUnicode);
  EXPECT_EQ(RepertoireOf("UTF16"), Repertoire::kUnicode);
  EXPECT_EQ(RepertoireOf("utf32"), Repertoire::kUnicode);
  EXPECT_EQ(RepertoireOf("utf8mb3"), Repertoire::kBmp);
  EXPECT_EQ(RepertoireOf("utf8"), Repertoire::kBmp);
  EXPECT_EQ(RepertoireOf("ucs2"), Repertoire::kBmp);
  EXPECT_EQ(RepertoireOf("latin1"), Repertoire::kAscii);
  EXPECT_EQ(RepertoireOf("ascii"), Repertoire::kAscii);
  EXPECT_EQ(RepertoireOf(""), Repertoire::kAscii);
  // "é€😀" plus an invalid byte.
  const std::string reason = "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xFFz";
  EXPECT_EQ(LastErrorText(reason, 8, Repertoire::kUnicode),
            "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xEF\xBF\xBDz");
  EXPECT_EQ(LastErrorText(reason, 8, Repertoire::kBmp),
            "\xC3\xA9\xE2\x82\xAC\xEF\xBF\xBD\xEF\xBF\xBDz");
  EXPECT_EQ(LastErrorText(reason, 8, Repertoire::kAscii), "????z");
  EXPECT_EQ(LastErrorText(reason, 2, Repertoire::kAscii), "??");
}

TEST(FailureStatementsTest, ReasonsFollowTheRepertoire) {
  const MessageTable table = Table();
  FailureStatements sql(table, "`t`");
  sql.set_last_error_repertoire(Repertoire::kAscii);
  EXPECT_EQ(sql.Nack(1, 0, std::nullopt, "\xC3\xA9!")[0].prefix,
            "UPDATE `t` SET `time_next` = NULL, `time_dead` = 1, "
            "`last_error` = LEFT(_utf8mb4 X'3F21', 8) WHERE `id` IN (");
}

TEST(FailureStatementsTest, DeadNackSetsTimeDeadAndLastError) {
  const MessageTable table = Table();
  FailureStatements sql(table, "`db`.`t`");
  std::vector<InList> in = sql.Nack(500, 2, std::nullopt, "a'b\\");
  ASSERT_EQ(in.size(), 1u);
  EXPECT_TRUE(in[0].counts_dead);
  EXPECT_EQ(in[0].prefix,
            "UPDATE `db`.`t` SET `time_next` = NULL, `time_dead` = 500, "
            "`last_error` = LEFT(_utf8mb4 X'6127625C'"
            ", 8) WHERE `id` IN (");
  EXPECT_EQ(in[0].suffix,
            ") AND `epoch` = 3 AND `time_acked` IS NULL AND `time_next` IS "
            "NOT NULL");
}

TEST(FailureStatementsTest, RetryWithoutLimitsIsOneStatement) {
  const MessageTable table = Table(0, {}, /*time_dead=*/false, 0);
  FailureStatements sql(table, "`db`.`t`");
  std::vector<InList> in = sql.Nack(500, 0, 900, "ignored: no column");
  ASSERT_EQ(in.size(), 1u);
  EXPECT_FALSE(in[0].counts_dead);
  EXPECT_EQ(in[0].prefix,
            "UPDATE `db`.`t` SET `time_next` = 900 WHERE `id` IN (");
  EXPECT_EQ(in[0].suffix,
            ") AND `epoch` = 1 AND `time_acked` IS NULL AND `time_next` IS "
            "NOT NULL");
  // A dead nack without time_dead and last_error only clears time_next.
  in = sql.Nack(500, 0, std::nullopt, "x");
  EXPECT_EQ(in[0].prefix,
            "UPDATE `db`.`t` SET `time_next` = NULL WHERE `id` IN (");
}

TEST(FailureStatementsTest, RetryKillsRowsPastTheLimitsFirst) {
  const MessageTable table = Table(3, absl::Seconds(10));
  FailureStatements sql(table, "`db`.`t`");
  std::vector<InList> in = sql.Nack(20'000'000'000, 4, 900, "");
  ASSERT_EQ(in.size(), 2u);
  EXPECT_TRUE(in[0].counts_dead);
  EXPECT_EQ(in[0].prefix,
            "UPDATE `db`.`t` SET `time_next` = NULL, `time_dead` = "
            "20000000000 WHERE `id` IN (");
  EXPECT_EQ(in[0].suffix,
            ") AND `epoch` = 5 AND `time_acked` IS NULL AND `time_next` IS "
            "NOT NULL AND (`epoch` >= 3 OR `time_created` < 10000000000)");
  EXPECT_FALSE(in[1].counts_dead);
  EXPECT_EQ(in[1].prefix,
            "UPDATE `db`.`t` SET `time_next` = 900 WHERE `id` IN (");
  // Only one limit set: only its condition.
  const MessageTable attempts = Table(3);
  in = FailureStatements(attempts, "`t`").Nack(1, 0, 2, "");
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in[0].suffix,
            ") AND `epoch` = 1 AND `time_acked` IS NULL AND `time_next` IS "
            "NOT NULL AND (`epoch` >= 3)");
}

TEST(FailureStatementsTest, EpochOfInt64MaxDoesNotOverflow) {
  const MessageTable table = Table();
  FailureStatements sql(table, "`t`");
  EXPECT_EQ(sql.Extend(INT64_MAX, 7).suffix,
            ") AND `epoch` = 9223372036854775808 AND `time_acked` IS NULL AND "
            "`time_next` IS NOT NULL");
  EXPECT_EQ(sql.Extend(-1, 7).suffix,
            ") AND `epoch` = 0 AND `time_acked` IS NULL AND `time_next` IS "
            "NOT NULL");
}

TEST(FailureStatementsTest, RedriveAndDeadReads) {
  const MessageTable table = Table();
  FailureStatements sql(table, "`t`");
  EXPECT_EQ(sql.Redrive(5).prefix,
            "UPDATE `t` SET `time_next` = 5, `epoch` = 0, `time_dead` = NULL "
            "WHERE `id` IN (");
  EXPECT_EQ(sql.Redrive(5).suffix,
            ") AND `time_acked` IS NULL AND `time_next` IS NULL");
  EXPECT_EQ(sql.RedriveAll(5),
            "UPDATE `t` SET `time_next` = 5, `epoch` = 0, `time_dead` = NULL "
            "WHERE `time_acked` IS NULL AND `time_next` IS NULL");
  EXPECT_EQ(sql.PurgeDead(9, 100),
            "DELETE FROM `t` WHERE `time_acked` IS NULL AND `time_next` IS "
            "NULL AND `time_dead` < 9 LIMIT 100");
  EXPECT_EQ(sql.CountDead(),
            "SELECT COUNT(*) FROM `t` WHERE `time_acked` IS NULL AND "
            "`time_next` IS NULL");
  EXPECT_EQ(sql.ListDead("7", 10),
            "SELECT `id`, `epoch`, `last_error`, `time_dead`, `time_created` "
            "FROM `t` WHERE `time_acked` IS NULL AND `time_next` IS NULL AND "
            "`id` > 7 ORDER BY `id` LIMIT 10");
  EXPECT_EQ(sql.last_error_column(), 2);
  EXPECT_EQ(sql.time_dead_column(), 3);
  EXPECT_EQ(sql.time_created_column(), 4);

  const MessageTable bare = Table(0, {}, /*time_dead=*/false, 0);
  FailureStatements few(bare, "`t`");
  EXPECT_EQ(few.ListDead("", -3),
            "SELECT `id`, `epoch`, `time_created` FROM `t` WHERE `time_acked` "
            "IS NULL AND `time_next` IS NULL ORDER BY `id` LIMIT 0");
  EXPECT_EQ(few.last_error_column(), -1);
  EXPECT_EQ(few.time_dead_column(), -1);
  EXPECT_EQ(few.time_created_column(), 2);
  EXPECT_EQ(few.RedriveAll(5),
            "UPDATE `t` SET `time_next` = 5, `epoch` = 0 WHERE `time_acked` "
            "IS NULL AND `time_next` IS NULL");
}

// With msgq_dedup_window, the dead purge keeps rows whose key is in its
// window at now = cutoff + msgq_dead_retention (docs/design/dedup.md).
TEST(FailureStatementsTest, DeadPurgeKeepsKeysInTheirWindow) {
  MessageTable table = Table();
  table.settings.dead_retention = absl::Nanoseconds(100);
  table.settings.dedup_window = absl::Nanoseconds(1000);
  FailureStatements sql(table, "`t`");
  EXPECT_EQ(sql.PurgeDead(5000, 10),
            "DELETE FROM `t` WHERE `time_acked` IS NULL AND `time_next` IS "
            "NULL AND `time_dead` < 5000 AND (`dedup_key` IS NULL OR "
            "`time_created` IS NULL OR `time_created` < 4100) LIMIT 10");
  EXPECT_EQ(KeepDedupKeys(0, 5000), "");
}

}  // namespace
}  // namespace msgq
