#include "server/auth/policy.h"

#include "gtest/gtest.h"
#include "server/auth/glob.h"

namespace msgq::auth {
namespace {

TEST(GlobTest, Matches) {
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("*", "orders"));
  EXPECT_TRUE(GlobMatch("orders_*", "orders_eu"));
  EXPECT_TRUE(GlobMatch("orders_*", "orders_"));
  EXPECT_FALSE(GlobMatch("orders_*", "orders"));
  EXPECT_TRUE(GlobMatch("o?ders", "orders"));
  EXPECT_FALSE(GlobMatch("o?ders", "oders"));
  EXPECT_TRUE(GlobMatch("*_eu_*", "a_eu_b"));
  EXPECT_FALSE(GlobMatch("*_eu_*", "a_us_b"));
  EXPECT_FALSE(GlobMatch("Orders", "orders"));  // case-sensitive
  EXPECT_TRUE(GlobMatch("a*b*c", "aXbYbZc"));
  EXPECT_FALSE(GlobMatch("a*b*c", "aXbYbZ"));
  // A long hostile pattern against a long text ends quickly.
  EXPECT_FALSE(GlobMatch(std::string(2000, '*') + "b", std::string(5000, 'a')));
}

constexpr char kPolicy[] = R"(# grants
billing   shop/invoices   stream,ack     # trailing comment
billing   shop/refunds_*  nack
ops       */*             admin

*         shop/public     stream
root      */*             *
)";

TEST(PolicyTest, ParsesGrantsExactly) {
  absl::StatusOr<Policy> p = Policy::Parse(kPolicy, "policy.txt");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->grants().size(), 5u);
  const Policy::Grant& g = p->grants()[0];
  EXPECT_EQ(g.principal, "billing");
  EXPECT_EQ(g.keyspace, "shop");
  EXPECT_EQ(g.table, "invoices");
  EXPECT_EQ(g.actions, static_cast<uint8_t>(Action::kStream) |
                           static_cast<uint8_t>(Action::kAck));
  EXPECT_EQ(g.line, 2);
  EXPECT_EQ(p->grants()[3].principal, "*");
  EXPECT_EQ(p->grants()[3].line, 6);
  EXPECT_EQ(p->grants()[4].actions, 15);
}

TEST(PolicyTest, AllowsOnlyWhatIsGranted) {
  absl::StatusOr<Policy> p = Policy::Parse(kPolicy, "policy.txt");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->Allows("billing", "shop", "invoices", Action::kStream));
  EXPECT_TRUE(p->Allows("billing", "shop", "invoices", Action::kAck));
  EXPECT_FALSE(p->Allows("billing", "shop", "invoices", Action::kNack));
  EXPECT_FALSE(p->Allows("billing", "shop", "invoices", Action::kAdmin));
  EXPECT_TRUE(p->Allows("billing", "shop", "refunds_eu", Action::kNack));
  EXPECT_FALSE(p->Allows("billing", "shop", "refunds_eu", Action::kStream));
  EXPECT_FALSE(p->Allows("billing", "other", "invoices", Action::kStream));
  EXPECT_TRUE(p->Allows("ops", "any", "thing", Action::kAdmin));
  EXPECT_FALSE(p->Allows("ops", "any", "thing", Action::kStream));
  EXPECT_TRUE(p->Allows("someone", "shop", "public", Action::kStream));
  EXPECT_FALSE(p->Allows("someone", "shop", "public", Action::kAck));
  EXPECT_TRUE(p->Allows("root", "x", "y", Action::kNack));
  EXPECT_TRUE(p->AllowsAny("billing", "shop", "refunds_x"));
  EXPECT_FALSE(p->AllowsAny("billing", "shop", "orders"));
  EXPECT_TRUE(p->AllowsAny("billing", "shop", "public"));  // via '*'
}

TEST(PolicyTest, EmptyPolicyAllowsNothing) {
  absl::StatusOr<Policy> p = Policy::Parse("# nobody\n\n", "p");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->grants().empty());
  EXPECT_FALSE(p->AllowsAny("a", "b", "c"));
}

void ExpectError(absl::string_view text, absl::string_view message) {
  absl::StatusOr<Policy> p = Policy::Parse(text, "/etc/msgq/policy");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(), message);
}

TEST(PolicyTest, ErrorsNameFileAndLine) {
  ExpectError("a b/c stream\nbilling shop/x\n",
              "/etc/msgq/policy:2: expected 'principal keyspace/table "
              "actions', got 2 fields");
  ExpectError("a b/c stream extra",
              "/etc/msgq/policy:1: expected 'principal keyspace/table "
              "actions', got 4 fields");
  const std::string target =
      ": the target must be keyspace/table (globs allowed, e.g. "
      "shop/orders_* or */*)";
  ExpectError("\n\na shop stream", "/etc/msgq/policy:3" + target);
  ExpectError("a shop/ stream", "/etc/msgq/policy:1" + target);
  ExpectError("a /t stream", "/etc/msgq/policy:1" + target);
  ExpectError("a s/t/u stream", "/etc/msgq/policy:1" + target);
  ExpectError("# x\na s/t stream,delete",
              "/etc/msgq/policy:2: unknown action 'delete' (expected "
              "stream, ack, nack, admin or *)");
  ExpectError("a s/t stream,,ack",
              "/etc/msgq/policy:1: unknown action '' (expected stream, ack, "
              "nack, admin or *)");
}

}  // namespace
}  // namespace msgq::auth
