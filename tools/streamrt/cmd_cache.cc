// Engine cache in the CLI: `build|compile --cache-dir D [--cache-max-size 10GiB]` and
// `cache list|prune|clear [--cache-dir D]`.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "commands.h"
#include "core/byte_size.h"
#include "streamrt/cache.h"

namespace streamrt::cli {
namespace {

Result<uint64_t> parse_max_size(const std::string& s) {
  if (s.empty()) return kDefaultCacheMaxBytes;
  auto spec = parse_budget(s);
  if (!spec.ok() || spec->kind != BudgetSpec::Kind::kBytes)
    return invalid_argument("--cache-max-size '" + s + "': expected a size in bytes such as 10GiB, 512MiB or 1073741824");
  return spec->bytes;
}

// The default directory follows XDG_CACHE_HOME, else HOME (the library takes their values).
Result<std::string> cache_dir(const std::string& dir) {
  if (!dir.empty()) return dir;
  return default_cache_dir(std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
}

Result<std::unique_ptr<DiskEngineCache>> open_cache(const std::string& dir_option, const std::string& max_size) {
  SRT_ASSIGN_OR_RETURN(uint64_t max_bytes, parse_max_size(max_size));
  SRT_ASSIGN_OR_RETURN(std::string dir, cache_dir(dir_option));
  return DiskEngineCache::open(dir, max_bytes);
}

std::string format_time(int64_t t) {
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm {};
  char buf[32] = "-";
  if (t > 0 && ::localtime_r(&tt, &tm)) std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

int list_entries(DiskEngineCache& cache) {
  auto entries = cache.list();
  if (!entries.ok()) return report_error(entries.status());
  uint64_t total = 0;
  for (const auto& e : *entries) total += e.size;
  std::printf("engine cache %s: %zu entries, %s of %s\n", cache.dir().c_str(), entries->size(),
              format_bytes(total).c_str(), format_bytes(cache.max_bytes()).c_str());
  if (!cache.read_only_reason().empty())
    std::printf("  read-only: %s (builds use its entries but store none)\n", cache.read_only_reason().c_str());
  if (entries->empty()) return 0;
  std::printf("%-64s  %10s  %-19s  %-19s  %s\n", "key", "size", "created", "last use", "engine");
  for (const auto& e : *entries)
    std::printf("%s  %10s  %-19s  %-19s  %s\n", e.key.hex().c_str(), format_bytes(e.size).c_str(),
                format_time(e.created).c_str(), format_time(e.last_use).c_str(), e.engine_name.c_str());
  return 0;
}

void print_report(const char* what, const PruneReport& r) {
  std::printf("%s: %zu entries removed, %zu broken entries removed, %zu leftover files removed, %s freed\n", what,
              r.evicted, r.broken, r.orphans, format_bytes(r.bytes_freed).c_str());
  // (Each is named in a warning above.)
  if (r.skipped) std::printf("%s: %zu things streamrt did not write left in place\n", what, r.skipped);
}

}  // namespace

void add_cache_options(CLI::App& app, CacheOptions& o) {
  app.add_flag("--cache", o.use_default, "build engines through the engine cache in the default directory "
                                         "($XDG_CACHE_HOME/streamrt/engines or ~/.cache/streamrt/engines)");
  app.add_option("--cache-dir", o.dir, "build engines through the engine cache in this directory");
  app.add_option("--cache-max-size", o.max_size, "engine cache size limit (least recently used entries go first; "
                                                 "default 10GiB)");
}

Result<std::unique_ptr<DiskEngineCache>> open_cache(const CacheOptions& o) { return open_cache(o.dir, o.max_size); }

std::string describe_cache_result(const CachedBuildInfo& info, const std::string& dir) {
  if (info.hit) return "hit " + info.key.hex() + " in " + dir + " (weights refitted from the model)";
  return "miss " + info.key.hex() + " (" + info.miss_reason + "); " +
         (info.saved ? "stored in " + dir : "not stored: " + info.save_error);
}

Status build_with_cache(const std::string& model, const BuilderConfig& config, const std::string& output,
                        const CacheOptions& o, BuildReport* report) {
  SRT_ASSIGN_OR_RETURN(auto cache, open_cache(o));
  CachedBuildInfo info;
  SRT_RETURN_IF_ERROR(build_plan_file_cached(model, config, *cache, output, &info, report));
  std::printf("cache: %s\n", describe_cache_result(info, cache->dir()).c_str());
  return ok_status();
}

Command add_cache_command(CLI::App& app) {
  struct State {
    std::string dir, max_size;
  };
  auto s = std::make_shared<State>();
  // Not require_subcommand(): its message for a misspelt one ("A subcommand is required") hides
  // the misspelling. The callback names it instead.
  app.allow_extras();
  CLI::App* self = &app;
  auto add_dir = [&](CLI::App* sub) {
    sub->add_option("--cache-dir", s->dir, "cache directory (default $XDG_CACHE_HOME/streamrt/engines)");
  };
  CLI::App* list = app.add_subcommand("list", "list entries: key, size, created, last use");
  CLI::App* prune = app.add_subcommand("prune", "remove broken entries and leftovers, evict down to the size limit");
  CLI::App* clear = app.add_subcommand("clear", "remove every entry");
  for (CLI::App* sub : {list, prune, clear}) {
    add_dir(sub);
    sub->allow_extras(false);  // (inherited from `cache`)
  }
  prune->add_option("--cache-max-size", s->max_size, "size limit (default 10GiB)");
  return [s, self, list, prune, clear]() {
    if (!list->parsed() && !prune->parsed() && !clear->parsed()) {
      auto rest = self->remaining();
      return report_error(invalid_argument(
          rest.empty() ? std::string("cache needs a subcommand: list, prune or clear")
                       : "unknown cache subcommand '" + rest.front() + "' (expected list, prune or clear)"));
    }
    if (auto max = parse_max_size(s->max_size); !max.ok()) return report_error(max.status());
    // Listing or clearing never creates a cache: a directory that is not there is reported.
    auto dir = cache_dir(s->dir);
    if (!dir.ok()) return report_error(dir.status());
    if (::access((*dir + "/entries").c_str(), F_OK) != 0) {
      if (!s->dir.empty()) return report_error(not_found("no engine cache at '" + *dir + "'"));
      std::printf("engine cache %s: empty (not created yet)\n", dir->c_str());
      return 0;
    }
    auto cache = open_cache(*dir, s->max_size);
    if (!cache.ok()) return report_error(cache.status());
    if (list->parsed()) return list_entries(**cache);
    auto rep = prune->parsed() ? (*cache)->prune() : (*cache)->clear();
    if (!rep.ok()) return report_error(rep.status());
    print_report(prune->parsed() ? "prune" : "clear", *rep);
    return 0;
  };
}

}  // namespace streamrt::cli
