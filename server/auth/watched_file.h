// WatchedFile<T>: a file that decides who gets in (tokens, a policy)
// parsed into a T, re-read when it changes (its modification time, size,
// inode or permission bits), e.g. after an editor's save, a `mv new old` or
// a chmod. A file that group or others may write is refused, as sshd
// refuses such an authorized_keys: whoever may write it may let themselves
// in.
//
// Refresh() is called by the owner (the Authorizer's reload thread); a
// file that fails to read, is writable by group or others or fails to parse
// leaves the previous value in place and Refresh says why, once per change
// of the file.
//
// Also here: the stamp and reading of files that the TLS reloads share,
// and ReadSecretFile, which refuses a file whose permission bits are too
// loose for what it holds.
//
// Example:
//   auto tokens = WatchedFile<TokenTable>::Open(
//       "auth tokens file", "/etc/msgq/tokens", &TokenTable::Parse);
//   std::shared_ptr<const TokenTable> now = (*tokens)->Current();
//
// Thread-safety: Current() may be called from any thread, concurrently with
// Refresh(); Refresh() from one thread at a time. The file is read without
// holding the lock.
#ifndef MSGQ_SERVER_AUTH_WATCHED_FILE_H_
#define MSGQ_SERVER_AUTH_WATCHED_FILE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace msgq::auth {

// What identifies a version of a file.
struct FileStamp {
  int64_t mtime_ns = 0;
  int64_t size = -1;
  uint64_t inode = 0;
  uint32_t mode = 0;  // permission bits (st_mode & 07777): a chmod changes it
  bool operator==(const FileStamp&) const = default;
};

// The stamp of `path`; INVALID_ARGUMENT "cannot read PATH: ..." when it
// cannot be stat'ed.
absl::StatusOr<FileStamp> StampOf(const std::string& path);
// The whole of `path`; INVALID_ARGUMENT "cannot read PATH: ..." on error.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

// The access of group and others that makes a file unfit to hold a secret.
enum class SecretAccess {
  // Tokens, a policy: whoever may write the file may let themselves in.
  kWrite,
  // A private key: whoever may read it may pose as msgqd.
  kRead,
};

// The whole of `path`, a secret file called `name` in errors ("TLS key",
// "auth tokens file"), unless its permission bits give group or others
// `access` (those of the file opened: of the text read). Errors name the
// file: INVALID_ARGUMENT "NAME PATH: cannot read PATH: ...";
// FAILED_PRECONDITION "NAME PATH: mode 0666 lets group or others write it;
// chmod 600 it" (kRead: "... read it; ...").
absl::StatusOr<std::string> ReadSecretFile(absl::string_view name,
                                           const std::string& path,
                                           SecretAccess access);

enum class RefreshResult { kUnchanged, kReloaded, kFailed };

template <typename T>
class WatchedFile {
 public:
  using Parser = std::function<absl::StatusOr<T>(absl::string_view text,
                                                 absl::string_view path)>;

  // Reads and parses `path`, `name` saying what it is in errors ("auth
  // tokens file"). The errors of ReadSecretFile (INVALID_ARGUMENT "NAME
  // PATH: cannot read ...", FAILED_PRECONDITION "NAME PATH: mode 0666 lets
  // group or others write it; chmod 600 it") or the parser's.
  static absl::StatusOr<std::unique_ptr<WatchedFile>> Open(std::string name,
                                                           std::string path,
                                                           Parser parse) {
    std::unique_ptr<WatchedFile> file(
        new WatchedFile(std::move(name), std::move(path), std::move(parse)));
    absl::Status error;
    if (file->Refresh(&error) != RefreshResult::kReloaded) return error;
    return file;
  }

  std::shared_ptr<const T> Current() const {
    absl::MutexLock lock(&mu_);
    return current_;
  }

  // Re-reads the file if it changed. kFailed (with *error set, as from
  // Open) when the file changed and cannot be read, is writable by group
  // or others, or does not parse (reported once per change); the previous
  // value stays.
  RefreshResult Refresh(absl::Status* error) {
    absl::StatusOr<FileStamp> stamp = StampOf(path_);
    if (!stamp.ok()) return Failed(FileStamp{}, stamp.status(), error);
    if (tried_ && *stamp == stamp_) return RefreshResult::kUnchanged;
    absl::StatusOr<std::string> text =
        ReadSecretFile(name_, path_, SecretAccess::kWrite);
    if (!text.ok()) return Failed(*stamp, text.status(), error);
    absl::StatusOr<T> parsed = parse_(*text, path_);
    if (!parsed.ok()) return Failed(*stamp, parsed.status(), error);
    auto value = std::make_shared<const T>(*std::move(parsed));
    tried_ = true;
    stamp_ = *stamp;
    absl::MutexLock lock(&mu_);
    current_ = std::move(value);
    return RefreshResult::kReloaded;
  }

  const std::string& path() const { return path_; }

 private:
  WatchedFile(std::string name, std::string path, Parser parse)
      : name_(std::move(name)),
        path_(std::move(path)),
        parse_(std::move(parse)) {}

  RefreshResult Failed(const FileStamp& stamp, absl::Status status,
                       absl::Status* error) {
    // A file that stays broken (or missing) is reported once.
    if (tried_ && stamp == stamp_) return RefreshResult::kUnchanged;
    tried_ = true;
    stamp_ = stamp;
    *error = std::move(status);
    return RefreshResult::kFailed;
  }

  // Constant after construction.
  const std::string name_;
  const std::string path_;
  const Parser parse_;
  // Used by Refresh only (one thread at a time).
  bool tried_ = false;
  FileStamp stamp_;

  mutable absl::Mutex mu_;
  std::shared_ptr<const T> current_ ABSL_GUARDED_BY(mu_);
};

}  // namespace msgq::auth

#endif  // MSGQ_SERVER_AUTH_WATCHED_FILE_H_
