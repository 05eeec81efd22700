#include "server/mysql_protocol/statement.h"

#include <string>
#include <utility>

#include "gtest/gtest.h"

namespace msgq::mysql_protocol {
namespace {

using Kind = Statement::Kind;

TEST(StatementTest, StreamForms) {
  for (const char* sql : {"stream * from demo", "STREAM * FROM demo;",
                          "  Stream *from `demo` ;;", "stream\n*\tfrom demo"}) {
    Statement s = RecognizeStatement(sql);
    EXPECT_EQ(s.kind, Kind::kStream) << sql;
    EXPECT_EQ(s.table, "demo") << sql;
    EXPECT_EQ(s.keyspace, "") << sql;
  }
  Statement s = RecognizeStatement("stream * from `my db`.`we``ird`");
  EXPECT_EQ(s.kind, Kind::kStream);
  EXPECT_EQ(s.keyspace, "my db");
  EXPECT_EQ(s.table, "we`ird");
  s = RecognizeStatement("stream * from msgq.Demo");
  EXPECT_EQ(s.keyspace, "msgq");
  EXPECT_EQ(s.table, "Demo");  // names keep their case
}

TEST(StatementTest, StreamOfAGroup) {
  for (const char* sql :
       {"stream * from demo group billing", "STREAM * FROM demo GROUP billing;",
        "stream * from `demo` group `billing`"}) {
    Statement s = RecognizeStatement(sql);
    EXPECT_EQ(s.kind, Kind::kStream) << sql;
    EXPECT_EQ(s.keyspace, "") << sql;
    EXPECT_EQ(s.table, "demo") << sql;
    EXPECT_EQ(s.group, "billing") << sql;
    EXPECT_EQ(s.expected, "") << sql;
  }
  Statement s = RecognizeStatement("stream * from msgq.demo group `in-eu`");
  EXPECT_EQ(s.kind, Kind::kStream);
  EXPECT_EQ(s.keyspace, "msgq");
  EXPECT_EQ(s.table, "demo");
  EXPECT_EQ(s.group, "in-eu");
  EXPECT_EQ(RecognizeStatement("stream * from demo").group, "");
}

TEST(StatementTest, AMalformedStreamSaysWhatWasExpected) {
  const std::pair<const char*, const char*> cases[] = {
      {"stream id from demo", "'*' after 'stream'"},
      {"stream * demo", "'from' after 'stream *'"},
      {"stream * from", "a table name after 'from'"},
      {"stream * from msgq.", "a table name after 'keyspace.'"},
      {"stream * from demo where 1",
       "'group NAME' or the end of the statement after the table"},
      {"stream * from a.b.c",
       "'group NAME' or the end of the statement after the table"},
      {"stream * from demo group", "a group name after 'group'"},
      {"stream * from demo group ``", "a group name after 'group'"},
      {"stream * from demo group in-eu",
       "the end of the statement after the group name (a name with '-' goes "
       "in backticks)"},
  };
  for (const auto& [sql, expected] : cases) {
    Statement s = RecognizeStatement(sql);
    EXPECT_EQ(s.kind, Kind::kUnsupported) << sql;
    EXPECT_EQ(s.expected, expected) << sql;
  }
  EXPECT_EQ(RecognizeStatement("show databases").expected, "");
}

TEST(StatementTest, RejectsOtherShapes) {
  for (const char* sql :
       {"stream id from demo", "stream * from", "stream * from a.b.c",
        "stream * from demo where 1", "stream * from `unterminated",
        "stream * from ``", "select * from demo", "stream * from @@x",
        "show databases", "select 1; select 2", "select 1 limit"}) {
    EXPECT_EQ(RecognizeStatement(sql).kind, Kind::kUnsupported) << sql;
  }
}

TEST(StatementTest, ConnectTimeStatements) {
  EXPECT_EQ(RecognizeStatement("select @@version_comment limit 1").kind,
            Kind::kSelectVersionComment);
  EXPECT_EQ(RecognizeStatement("SELECT @@VERSION").kind, Kind::kSelectVersion);
  EXPECT_EQ(RecognizeStatement("select version()").kind, Kind::kSelectVersion);
  EXPECT_EQ(RecognizeStatement("SELECT DATABASE()").kind,
            Kind::kSelectDatabase);
  Statement one = RecognizeStatement("select 1");
  EXPECT_EQ(one.kind, Kind::kSelectInteger);
  EXPECT_EQ(one.literal, "1");
  EXPECT_EQ(RecognizeStatement("SET NAMES utf8mb4").kind, Kind::kSet);
  EXPECT_EQ(RecognizeStatement("set autocommit=0").kind, Kind::kSet);
  Statement use = RecognizeStatement("use `msgq`;");
  EXPECT_EQ(use.kind, Kind::kUse);
  EXPECT_EQ(use.keyspace, "msgq");
  EXPECT_EQ(RecognizeStatement(" ; ").kind, Kind::kEmpty);
}

TEST(StatementTest, Kill) {
  Statement s = RecognizeStatement("KILL QUERY 42");
  EXPECT_EQ(s.kind, Kind::kKill);
  EXPECT_EQ(s.kill_id, 42u);
  EXPECT_FALSE(s.kill_connection);
  s = RecognizeStatement("kill connection 7");
  EXPECT_EQ(s.kind, Kind::kKill);
  EXPECT_EQ(s.kill_id, 7u);
  EXPECT_TRUE(s.kill_connection);
  s = RecognizeStatement("kill 9;");
  EXPECT_EQ(s.kind, Kind::kKill);
  EXPECT_TRUE(s.kill_connection);
  for (const char* sql : {"kill", "kill query", "kill query x",
                          "kill 99999999999", "kill query 1 2"}) {
    EXPECT_EQ(RecognizeStatement(sql).kind, Kind::kUnsupported) << sql;
  }
}

// A 1 MiB statement of one-character tokens (what took msgqd's RSS from 27
// to 525 MiB with 8 connections) is split into kMaxStatementTokens tokens
// and no more.
TEST(StatementTest, TokenizingStopsAtTheTokenBound) {
  const std::string parens(1 << 20, '(');
  StatementTokens split = TokenizeStatement(parens);
  EXPECT_EQ(split.tokens.size(), kMaxStatementTokens);
  EXPECT_TRUE(split.truncated);
  EXPECT_TRUE(split.valid);
  for (const StatementToken& t : split.tokens) EXPECT_EQ(t.text, "(");
  EXPECT_EQ(RecognizeStatement(parens).kind, Kind::kUnsupported);
  EXPECT_EQ(RecognizeStatement("select " + parens).kind, Kind::kUnsupported);

  // Exactly the bound: all of it, not truncated.
  split = TokenizeStatement(std::string(kMaxStatementTokens, ';'));
  EXPECT_EQ(split.tokens.size(), kMaxStatementTokens);
  EXPECT_FALSE(split.truncated);
  EXPECT_EQ(RecognizeStatement(std::string(kMaxStatementTokens, ';')).kind,
            Kind::kEmpty);
  EXPECT_EQ(RecognizeStatement(std::string(kMaxStatementTokens + 1, ';')).kind,
            Kind::kUnsupported);

  // The rest is never looked at: an unterminated backtick past the bound.
  split = TokenizeStatement(std::string(kMaxStatementTokens, '(') + " `x");
  EXPECT_TRUE(split.truncated);
  EXPECT_TRUE(split.valid);
  split = TokenizeStatement("( `x");
  EXPECT_FALSE(split.valid);
}

TEST(StatementTest, TokensAreWordsQuotedNamesAndPunctuation) {
  StatementTokens split = TokenizeStatement("stream *from `a``b`.c1;");
  ASSERT_EQ(split.tokens.size(), 7u);
  const char* texts[] = {"stream", "*", "from", "a`b", ".", "c1", ";"};
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(split.tokens[i].text, texts[i]) << i;
    EXPECT_EQ(split.tokens[i].quoted, i == 3) << i;
  }
  EXPECT_FALSE(split.truncated);
}

// A SET is recognized by its first word, however long (clients send long
// SET statements at connect); nothing else longer than the bound is.
TEST(StatementTest, ALongSetIsStillASet) {
  std::string set = "SET SESSION sql_mode='STRICT_TRANS_TABLES'";
  for (int i = 0; i < 100; ++i) set += ", @x" + std::to_string(i) + "=1";
  EXPECT_EQ(RecognizeStatement(set).kind, Kind::kSet);
  EXPECT_EQ(RecognizeStatement("stream * from demo" +
                               std::string(kMaxStatementTokens, ';'))
                .kind,
            Kind::kUnsupported);
}

}  // namespace
}  // namespace msgq::mysql_protocol
