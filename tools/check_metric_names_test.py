#!/usr/bin/python3
"""Tests of tools/check-metric-names: the names it takes out of PromQL, and
that a made-up metric or a query that does not parse fails the check."""
import contextlib
import importlib.machinery
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
check = importlib.machinery.SourceFileLoader(
    "check_metric_names", os.path.join(HERE, "check-metric-names")).load_module()


class MetricNamesTest(unittest.TestCase):
    def test_names_of_queries(self):
        cases = {
            'histogram_quantile(0.99, sum by (keyspace, table, le) '
            '(rate(msgq_send_delay_seconds_bucket{table=~"$table"}'
            '[$__rate_interval])))': ["msgq_send_delay_seconds_bucket"],
            "msgq_innodb_history_list_length > 1e5 and "
            "delta(msgq_innodb_history_list_length[30m]) > 0":
                ["msgq_innodb_history_list_length"] * 2,
            "sum(a) by (le) / on (k) group_left(z) b offset 5m": ["a", "b"],
            'count(up{job="msgq"} == bool 1) or vector(0)': ["up"],
            'max(x{l="sum(y)"})': ["x"],
            "vector(1)": [],
        }
        for query, names in cases.items():
            self.assertEqual(check.metric_names(query), names, query)


class CheckTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def run_check(self, dashboard, promtool=True):
        path = os.path.join(self.dir, "d.json")
        with open(path, "w") as f:
            json.dump(dashboard, f)
        argv = ["check-metric-names", "--root", os.path.join(HERE, "..")]
        if promtool:
            argv += ["--promtool", "promtool"]
        out = io.StringIO()
        old = sys.argv
        sys.argv = argv + [path]
        try:
            with contextlib.redirect_stdout(out):
                code = check.main()
        finally:
            sys.argv = old
        return code, out.getvalue()

    @staticmethod
    def dashboard(*exprs):
        return {"panels": [{"title": "p", "targets": [
            {"refId": "A", "expr": e} for e in exprs]}]}

    def test_exported_names_pass(self):
        code, out = self.run_check(self.dashboard(
            "sum(rate(msgq_sent_total[$__rate_interval]))"))
        self.assertEqual(code, 0, out)
        self.assertIn("1 queries", out)

    def test_made_up_name_fails(self):
        code, out = self.run_check(self.dashboard("msgq_dead_letters"),
                                   promtool=False)
        self.assertEqual(code, 1)
        self.assertIn("msgq_dead_letters is not exported by msgqd", out)

    def test_unparsable_query_fails(self):
        code, out = self.run_check(self.dashboard("sum(msgq_sent_total"))
        self.assertEqual(code, 1)
        self.assertIn("check:query_0 is panel 'p' A", out)

    def test_query_without_a_metric_fails(self):
        code, out = self.run_check(self.dashboard("vector(1)"), promtool=False)
        self.assertEqual(code, 1)
        self.assertIn("names no metric", out)


if __name__ == "__main__":
    unittest.main()
