// The web console's static files (server/http/console/), embedded in msgqd
// at build time by embed_assets.cmake: no file system or network access is
// needed to serve them.
#ifndef MSGQ_SERVER_HTTP_CONSOLE_ASSETS_H_
#define MSGQ_SERVER_HTTP_CONSOLE_ASSETS_H_

#include <cstddef>

namespace msgq {

struct ConsoleAsset {
  const char* path;  // "/index.html"
  const char* content_type;
  const char* body;  // NUL-terminated text
};

extern const ConsoleAsset kConsoleAssets[];
extern const size_t kConsoleAssetCount;

}  // namespace msgq

#endif  // MSGQ_SERVER_HTTP_CONSOLE_ASSETS_H_
