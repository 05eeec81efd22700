// CurrentBuildInfo: msgqd's version and git commit, for msgq_build_info.
//
// Defined in a file generated at build time by build_info.cmake: the
// msgq_build_info_cc target reruns `git rev-parse` at every build and
// rewrites the file only when the commit (or version) changed, so a new
// HEAD shows without reconfiguring and an unchanged one rebuilds nothing.
// The commit is "unknown" outside a git checkout.
//
// Thread-safe (returns constants).
#ifndef MSGQ_SERVER_HTTP_BUILD_INFO_H_
#define MSGQ_SERVER_HTTP_BUILD_INFO_H_

#include "server/http/metrics_page.h"

namespace msgq {

BuildInfo CurrentBuildInfo();

}  // namespace msgq

#endif  // MSGQ_SERVER_HTTP_BUILD_INFO_H_
