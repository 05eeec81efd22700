// FaketimeOffset: a wall-clock offset for one child process, applied by
// libfaketime (Debian's faketime package) through LD_PRELOAD. The process's
// monotonic clock is left alone (DONT_FAKE_MONOTONIC=1); its wall clock is
// real time plus the offset written to a file of the test's, which
// libfaketime reads again at most once a second.
//
// Example:
//   absl::StatusOr<std::unique_ptr<FaketimeOffset>> clock =
//       FaketimeOffset::Create();
//   auto server = Msgqd::Start(*db_, args, (*clock)->Env());
//   (*clock)->Set(-30);  // within about a second msgqd's clock is 30 s back
//
// Create() fails with NOT_FOUND when libfaketime is not installed
// (tools/setup installs it). Thread-compatible.
#ifndef MSGQ_TESTS_FAKETIME_H_
#define MSGQ_TESTS_FAKETIME_H_

#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "tests/temp_dir.h"

namespace msgq::testing {

class FaketimeOffset {
 public:
  static constexpr char kLibrary[] =
      "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

  // An offset of 0, in a temporary directory removed with this object.
  static absl::StatusOr<std::unique_ptr<FaketimeOffset>> Create() {
    if (access(kLibrary, R_OK) != 0) {
      return absl::NotFoundError(absl::StrCat(
          kLibrary, " is missing: tools/setup installs Debian's faketime"));
    }
    absl::StatusOr<std::unique_ptr<launch::OwnedDir>> dir =
        MakeTempDir("faketime");
    if (!dir.ok()) return dir.status();
    std::unique_ptr<FaketimeOffset> out(new FaketimeOffset());
    out->dir_ = *std::move(dir);
    out->file_ = out->dir_->path() + "/offset";
    out->Set(0);
    return out;
  }

  // NAME=VALUE entries for the faked process's environment.
  std::vector<std::string> Env() const {
    return {absl::StrCat("LD_PRELOAD=", kLibrary),
            absl::StrCat("FAKETIME_TIMESTAMP_FILE=", file_),
            "FAKETIME_CACHE_DURATION=1", "DONT_FAKE_MONOTONIC=1"};
  }

  // The process's wall clock becomes real time + `seconds` once libfaketime
  // reads the file again (within about a second; up to 2.5 s was seen).
  void Set(int seconds) {
    std::ofstream(file_, std::ios::trunc)
        << (seconds < 0 ? "" : "+") << seconds << "\n";
  }

 private:
  FaketimeOffset() = default;
  std::unique_ptr<launch::OwnedDir> dir_;
  std::string file_;
};

}  // namespace msgq::testing

#endif  // MSGQ_TESTS_FAKETIME_H_
