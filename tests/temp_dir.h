// MakeTempDir: a directory of this test process's own, for the fixtures
// that start servers (test_env.cc, galera_fixture.cc). The first call
// removes what earlier test processes that died without cleaning up left
// behind (their servers included); directories of live tests are never
// touched. Thread-safe.
#ifndef MSGQ_TESTS_TEMP_DIR_H_
#define MSGQ_TESTS_TEMP_DIR_H_

#include <memory>

#include "absl/status/statusor.h"
#include "tools/launch/owned_dir.h"

namespace msgq::testing {

absl::StatusOr<std::unique_ptr<launch::OwnedDir>> MakeTempDir(
    const char* prefix);

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_TEMP_DIR_H_
