#include "tests/galera_netns_fixture.h"

#include <sys/stat.h>

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "tests/temp_dir.h"
#include "tests/test_env.h"

namespace msgq::testing {

absl::StatusOr<std::unique_ptr<GaleraNetnsCluster>>
GaleraNetnsCluster::Start() {
  std::unique_ptr<GaleraNetnsCluster> c(new GaleraNetnsCluster());
  absl::StatusOr<std::unique_ptr<NetnsLink>> link = NetnsLink::Create();
  if (!link.ok()) return link.status();
  c->link_ = *std::move(link);
  absl::StatusOr<std::string> side = c->link_->AddSidePath();
  if (!side.ok()) return side.status();
  c->side_address_ = *side;
  absl::StatusOr<std::unique_ptr<launch::OwnedDir>> dir = MakeTempDir("gnet");
  if (!dir.ok()) return dir.status();
  c->dir_ = *std::move(dir);
  if (absl::Status s = c->StartCluster(); !s.ok()) return s;
  return c;
}

GaleraNetnsCluster::~GaleraNetnsCluster() {
  cluster_.reset();  // the nodes first, then their namespace
  dir_.reset();
  link_.reset();
}

absl::Status GaleraNetnsCluster::StartCluster() {
  // Node 2's mariadbd runs in the namespace and listens on every address
  // there (a later --bind-address wins over the launcher's).
  const std::string wrapper = dir_->path() + "/node2-netns";
  FILE* f = fopen(wrapper.c_str(), "w");
  if (f == nullptr) return absl::InternalError("cannot write " + wrapper);
  fprintf(f,
          "#!/bin/sh\nexec ip netns exec '%s' \"$@\" --bind-address=0.0.0.0\n",
          link_->name().c_str());
  fclose(f);
  if (chmod(wrapper.c_str(), 0755) != 0) {
    return absl::InternalError("cannot chmod " + wrapper);
  }
  GaleraCluster::StartOptions o;
  o.addresses = {{0, link_->host_address()},
                 {1, link_->host_address()},
                 {2, link_->inner_address()}};
  o.prefixes = {{2, wrapper}};
  absl::StatusOr<std::unique_ptr<GaleraCluster>> cluster =
      GaleraCluster::Start(o);
  if (!cluster.ok()) return cluster.status();
  cluster_ = *std::move(cluster);
  // msgqd reaches node 2 from the side path's root end.
  for (const char* sql : {"CREATE USER 'root'@'10.213.%'",
                          "GRANT ALL ON *.* TO 'root'@'10.213.%'",
                          "CREATE DATABASE msgq", "USE msgq"}) {
    if (absl::Status s = cluster_->Exec(0, sql); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::string GaleraNetnsCluster::Address(int node) const {
  if (node == 2) return absl::StrCat(side_address_, ":", cluster_->port(2));
  return cluster_->Address(node);
}

std::string GaleraNetnsCluster::Hosts(const std::vector<int>& order) const {
  std::vector<std::string> hosts;
  std::vector<bool> listed(3, false);
  for (int i : order) {
    hosts.push_back(Address(i));
    listed[i] = true;
  }
  for (int i = 0; i < 3; ++i) {
    if (!listed[i]) hosts.push_back(Address(i));
  }
  return absl::StrJoin(hosts, ",");
}

int GaleraNetnsCluster::NodeAt(const std::string& address) const {
  for (int i = 0; i < 3; ++i) {
    if (Address(i) == address) return i;
  }
  return -1;
}

std::string GaleraNetnsCluster::Status(int node, const std::string& name) {
  return cluster_->Scalar(node,
                          absl::StrCat("SELECT VARIABLE_VALUE FROM "
                                       "information_schema.GLOBAL_STATUS WHERE "
                                       "VARIABLE_NAME = '",
                                       name, "'"));
}

bool GaleraNetnsCluster::WaitSynced(int node, absl::Duration timeout) {
  return Eventually(
      [&] {
        return Status(node, "WSREP_LOCAL_STATE") == "4" &&
               Status(node, "WSREP_CLUSTER_STATUS") == "Primary";
      },
      timeout);
}

}  // namespace msgq::testing
