#include "server/http/routes.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/http/console_api.h"
#include "server/http/console_assets.h"

namespace msgq {

std::map<std::string, HttpHandler> MsgqdRoutes(
    Engine* engine, const GrpcMetrics* grpc, BuildInfo build,
    const auth::Authorizer* authorizer) {
  // Measures pending due messages off the scrape path; stopped when the
  // routes (the HTTP server) go away.
  std::shared_ptr<DueDepthSampler> depth = DueDepthSampler::ForEngine(
      engine, RealClock::Get(), DueDepthSampler::Options());
  depth->Start();
  std::map<std::string, HttpHandler> routes =
      ConsoleApiRoutes(engine, depth, authorizer);
  routes["/metrics"] = [engine, grpc, build, depth](const HttpRequest&) {
    return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8",
                        RenderMetrics(*engine, grpc, build, depth.get())};
  };
  routes["/healthz"] = [](const HttpRequest&) {
    return HttpResponse{200, "text/plain; charset=utf-8", "ok\n"};
  };
  routes["/readyz"] = [engine](const HttpRequest&) {
    const absl::Status health = engine->Health();
    if (health.ok()) {
      return HttpResponse{200, "text/plain; charset=utf-8", "ready\n"};
    }
    return HttpResponse{503, "text/plain; charset=utf-8",
                        absl::StrCat("not ready: ", health.message(), "\n")};
  };
  for (size_t i = 0; i < kConsoleAssetCount; ++i) {
    const ConsoleAsset& asset = kConsoleAssets[i];
    HttpHandler serve = [&asset](const HttpRequest&) {
      return HttpResponse{200, asset.content_type, asset.body};
    };
    routes[asset.path] = serve;
    if (std::string(asset.path) == "/index.html") routes["/"] = serve;
  }
  return routes;
}

}  // namespace msgq
