#include "server/auth/watched_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace msgq::auth {
namespace {

absl::Status CannotRead(const std::string& path, int error) {
  return absl::InvalidArgumentError(
      absl::StrCat("cannot read ", path, ": ", std::strerror(error)));
}

// The whole of `path` and, unless `mode` is null, the permission bits of
// the file opened.
absl::StatusOr<std::string> ReadWithMode(const std::string& path,
                                         uint32_t* mode) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(fopen(path.c_str(), "rbe"), &fclose);
  if (f == nullptr) return CannotRead(path, errno);
  struct stat st;
  if (fstat(fileno(f.get()), &st) != 0) return CannotRead(path, errno);
  if (mode != nullptr) *mode = st.st_mode & 07777;
  std::string text;
  char buf[8192];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f.get())) > 0) text.append(buf, n);
  if (ferror(f.get())) return CannotRead(path, errno);
  return text;
}

}  // namespace

absl::StatusOr<FileStamp> StampOf(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return CannotRead(path, errno);
  FileStamp stamp;
  stamp.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  stamp.size = st.st_size;
  stamp.inode = st.st_ino;
  stamp.mode = st.st_mode & 07777;
  return stamp;
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  return ReadWithMode(path, nullptr);
}

absl::StatusOr<std::string> ReadSecretFile(absl::string_view name,
                                           const std::string& path,
                                           SecretAccess access) {
  uint32_t mode = 0;
  absl::StatusOr<std::string> text = ReadWithMode(path, &mode);
  if (!text.ok()) {
    return absl::Status(
        text.status().code(),
        absl::StrCat(name, " ", path, ": ", text.status().message()));
  }
  const bool write = access == SecretAccess::kWrite;
  if ((mode & (write ? (S_IWGRP | S_IWOTH) : (S_IRGRP | S_IROTH))) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s %s: mode %04o lets group or others %s it; chmod 600 it", name, path,
        mode, write ? "write" : "read"));
  }
  return text;
}

}  // namespace msgq::auth
