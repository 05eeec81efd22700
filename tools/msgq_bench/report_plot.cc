// WritePlot (report.h): the gnuplot chart of a bench run.
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/launch/child_process.h"
#include "tools/msgq_bench/report.h"

namespace msgq::bench {

absl::Status WritePlot(const BenchOptions& o, const BenchResults& r,
                       const std::string& csv, const std::string& png) {
  std::vector<std::string> drain_phases;
  std::set<std::string> seen;
  bool sustained = false;
  for (const SeriesPoint& p : r.series) {
    if (p.phase == "sustained") {
      sustained = true;
    } else if (seen.insert(p.phase).second) {
      drain_phases.push_back(p.phase);
    }
  }
  const int panels = (drain_phases.empty() ? 0 : 2) + (sustained ? 2 : 0);
  if (panels == 0) return absl::OkStatus();
  std::string gp;
  absl::StrAppend(&gp, "set terminal pngcairo size 1400,", panels * 330,
                  " font 'sans,10' noenhanced\n", "set output '", png, "'\n",
                  "set datafile separator ','\n", "set key outside right\n",
                  "set grid\n", "set multiplot layout ", panels,
                  ",1 title 'msgq-bench ", r.env.date_utc, " - ", r.env.host,
                  " (", r.env.cpus, " CPUs)'\n");
  auto sel = [](const std::string& phase, const std::string& col) {
    return absl::StrCat("(strcol(1) eq '", phase, "' ? ", col, " : NaN)");
  };
  if (!drain_phases.empty()) {
    absl::StrAppend(&gp, "set title 'Drain of ", o.messages,
                    " messages: throughput (msgq: first receipts/s; relay: "
                    "rows relayed/s)'\n",
                    "set xlabel 's since first delivery'\nset ylabel "
                    "'msgs/s'\nunset logscale y\nset yrange [0:*]\nplot ");
    std::vector<std::string> plots;
    for (const std::string& ph : drain_phases) {
      plots.push_back(absl::StrCat("'", csv, "' using ", sel(ph, "$2"), ":",
                                   sel(ph, "$4"), " with linespoints title '",
                                   ph, "'"));
    }
    absl::StrAppend(&gp, absl::StrJoin(plots, ", "), "\n");
    absl::StrAppend(&gp,
                    "set title 'msgqd during the drains: RSS (MiB, left) and "
                    "CPU (% of one core, right)'\n",
                    "set ylabel 'MiB'\nset y2label 'CPU %'\nset y2tics\n"
                    "set y2range [0:*]\nplot ");
    plots.clear();
    for (const std::string& ph : drain_phases) {
      if (ph == "relay") continue;  // msgqd is not running then
      plots.push_back(absl::StrCat("'", csv, "' using ", sel(ph, "$2"), ":",
                                   sel(ph, "$11"), " with lines title 'RSS ",
                                   ph, "'"));
      plots.push_back(absl::StrCat(
          "'", csv, "' using ", sel(ph, "$2"), ":", sel(ph, "$12"),
          " axes x1y2 with lines dashtype 2 title 'CPU ", ph, "'"));
    }
    absl::StrAppend(&gp, absl::StrJoin(plots, ", "),
                    "\nunset y2tics\nunset y2label\n");
  }
  if (sustained) {
    const std::string s = "sustained";
    absl::StrAppend(
        &gp, "set title 'Sustained: offered (commits/s) vs delivered/s'\n",
        "set xlabel 's since producers started'\nset ylabel 'msgs/s'\n",
        "unset logscale y\nset yrange [0:*]\nplot '", csv, "' using ",
        sel(s, "$2"), ":", sel(s, "$6"), " with lines title 'offered', '", csv,
        "' using ", sel(s, "$2"), ":", sel(s, "$4"),
        " with lines title 'delivered', '", csv, "' using ", sel(s, "$2"), ":",
        sel(s, "$5"), " with lines title 'acked'\n");
    absl::StrAppend(
        &gp,
        "set title 'Sustained: commit-to-receipt latency of the messages "
        "received each interval (ms, log scale)'\n",
        "set ylabel 'ms'\nset yrange [*:*]\nset logscale y\nplot '", csv,
        "' using ", sel(s, "$2"), ":", sel(s, "$8"),
        " with linespoints title 'p50', '", csv, "' using ", sel(s, "$2"), ":",
        sel(s, "$9"), " with linespoints title 'p99', '", csv, "' using ",
        sel(s, "$2"), ":", sel(s, "$10"), " with linespoints title 'max'\n");
  }
  absl::StrAppend(&gp, "unset multiplot\n");
  const std::string script = png.substr(0, png.rfind('.')) + ".gp";
  {
    std::ofstream f(script);
    f << gp;
    if (!f) return absl::InternalError(absl::StrCat("cannot write ", script));
  }
  absl::StatusOr<std::string> out = launch::RunCommand(
      absl::StrCat("gnuplot ", launch::ShellQuote(script), " 2>&1"));
  if (!out.ok()) return out.status();
  return absl::OkStatus();
}

}  // namespace msgq::bench
