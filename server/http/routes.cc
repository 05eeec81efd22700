#include "server/http/routes.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/http/console_api.h"
#include "server/http/console_assets.h"

namespace msgq {
namespace {

// With bearer tokens on, a scrape needs one and shows the tables its
// principal may list (as ListTables), so the labels are not a way around
// that filter. With client certificates only, the TLS handshake is the
// gate (the HTTP port does not map certificates to principals) and every
// table is shown.
HttpResponse Metrics(const Engine& engine, const GrpcMetrics* grpc,
                     const BuildInfo& build, const DueDepthSampler* depth,
                     const auth::Authorizer* authorizer,
                     const HttpRequest& request) {
  constexpr char kType[] = "text/plain; version=0.0.4; charset=utf-8";
  if (authorizer == nullptr || !authorizer->has_tokens()) {
    return HttpResponse{200, kType, RenderMetrics(engine, grpc, build, depth)};
  }
  std::optional<absl::string_view> header;
  if (auto it = request.headers.find("authorization");
      it != request.headers.end()) {
    header = it->second;
  }
  absl::StatusOr<std::string> principal = authorizer->Authenticate(header, {});
  if (!principal.ok()) {
    return HttpResponse{401, "text/plain; charset=utf-8",
                        absl::StrCat(principal.status().message(), "\n")};
  }
  TableFilter visible = [&](const Engine::TableInfo& t) {
    return authorizer->MayList(*principal, t.keyspace, t.name);
  };
  return HttpResponse{200, kType,
                      RenderMetrics(engine, grpc, build, depth, visible)};
}

}  // namespace

std::map<std::string, HttpHandler> MsgqdRoutes(
    Engine* engine, const GrpcMetrics* grpc, BuildInfo build,
    const auth::Authorizer* authorizer) {
  // Measures pending due messages off the scrape path; stopped when the
  // routes (the HTTP server) go away.
  std::shared_ptr<DueDepthSampler> depth = DueDepthSampler::ForEngine(
      engine, engine->clock(), DueDepthSampler::Options());
  depth->Start();
  // The console charts' last hour, kept while the routes live.
  auto history = std::make_shared<ConsoleHistory>(
      [engine] { return engine->ListTables(); }, engine->clock(),
      ConsoleHistory::Options());
  history->Start();
  std::map<std::string, HttpHandler> routes =
      ConsoleApiRoutes(engine, depth, authorizer, history);
  routes["/metrics"] = [engine, grpc, build, depth,
                        authorizer](const HttpRequest& request) {
    return Metrics(*engine, grpc, build, depth.get(), authorizer, request);
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
