// BinlogWatcher's replica server id: derived so that two msgqd (even two
// with pid 1 in containers) do not evict each other's binlog dump.
#include <unistd.h>

#include <random>
#include <string>
#include <tuple>

#include "absl/hash/hash.h"
#include "engine/binlog/binlog_watcher.h"

namespace msgq {

uint32_t BinlogWatcher::DeriveServerId(const std::string& host,
                                       const std::string& listen_address,
                                       int64_t pid, uint64_t random) {
  const size_t h =
      absl::Hash<std::tuple<std::string, std::string, int64_t, uint64_t>>{}(
          std::make_tuple(host, listen_address, pid, random));
  const uint32_t id = static_cast<uint32_t>(h ^ (uint64_t{h} >> 32));
  return id == 0 ? 1 : id;
}

uint32_t BinlogWatcher::DefaultServerId(const std::string& listen_address) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::random_device random;
  const uint64_t r = (uint64_t{random()} << 32) | random();
  return DeriveServerId(host, listen_address, getpid(), r);
}

}  // namespace msgq
