// The Grafana dashboard (deploy/grafana/gatehouse.json) and the Prometheus
// alerting rules (deploy/prometheus/alerts.yml) name only metrics the
// service really exports: every metric in every PromQL expression is looked
// for in GET /metrics of a running server after traffic that causes them.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { parse as parseYaml } from "yaml";

import { startGatehouse } from "./gatehouse.mjs";
import { generateTraffic, scrapeMetrics } from "./traffic.mjs";

const deploy = new URL("../../deploy/", import.meta.url);
const dashboard = JSON.parse(readFileSync(new URL("grafana/gatehouse.json", deploy), "utf8"));
const rules = parseYaml(readFileSync(new URL("prometheus/alerts.yml", deploy), "utf8"));

// Metrics Prometheus makes itself for every target.
const PROVIDED_BY_PROMETHEUS = new Set(["up", "scrape_duration_seconds", "scrape_samples_scraped"]);
const KEYWORDS = new Set(["by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset", "inf", "nan"]);

// The metric names a PromQL expression selects (not functions, keywords,
// label names, label values, numbers, durations or Grafana variables).
export function metricNames(expr) {
  const stripped = expr
    .replace(/\$\{[^}]*\}|\$\w+/g, " ") // Grafana variables
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""') // strings (label values)
    .replace(/\{[^}]*\}/g, " ") // label matchers
    .replace(/\[[^\]]*\]/g, " ") // ranges and subqueries
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " "); // label lists
  const names = new Set();
  for (const [, number, name, call] of stripped.matchAll(/(\d[\d.]*(?:e[+-]?\d+)?[smhdwy]*)|([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    if (number || call || KEYWORDS.has(name.toLowerCase())) continue;
    names.add(name);
  }
  return names;
}

// Grafana's `label_values(metric{…}, label)` variable queries.
function variableMetricNames(query) {
  const text = typeof query === "string" ? query : query?.query ?? "";
  const match = /label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(text);
  return match ? new Set([match[1]]) : metricNames(text);
}

function dashboardExpressions() {
  const found = [];
  const walk = (panels) => {
    for (const panel of panels ?? []) {
      for (const target of panel.targets ?? []) if (target.expr) found.push([`panel "${panel.title}"`, target.expr]);
      walk(panel.panels);
    }
  };
  walk(dashboard.panels);
  return found;
}

function ruleExpressions() {
  return rules.groups.flatMap((group) => group.rules.map((rule) => [`rule ${rule.alert ?? rule.record}`, rule.expr]));
}

// name -> the places that use it.
function usedMetrics() {
  const used = new Map();
  const add = (where, names) => {
    for (const name of names) used.set(name, [...(used.get(name) ?? []), where]);
  };
  for (const [where, expr] of [...dashboardExpressions(), ...ruleExpressions()]) add(where, metricNames(expr));
  for (const variable of dashboard.templating.list) {
    if (variable.type === "query") add(`variable $${variable.name}`, variableMetricNames(variable.query));
  }
  return used;
}

// Exposition: sample names, and each family's TYPE.
function parseExposition(text) {
  const samples = new Set();
  const types = new Map();
  for (const line of text.split("\n")) {
    const typed = /^# TYPE (\S+) (\S+)/.exec(line);
    if (typed) types.set(typed[1], typed[2]);
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{| )/.exec(line);
    if (sample) samples.add(sample[1]);
  }
  return { samples, types };
}

function familyOf(name, types) {
  if (types.has(name)) return name;
  const base = name.replace(/_(bucket|sum|count)$/, "");
  return types.has(base) ? base : null;
}

test("the PromQL name extractor finds metrics and nothing else", () => {
  assert.deepEqual(
    [
      ...metricNames(
        'histogram_quantile(0.99, sum by (route, le) (rate(gatehouse_http_request_duration_seconds_bucket{job=~"$job", route!="/x"}[$__rate_interval]))) > 2.5e-1 and on (job) up == 1',
      ),
    ],
    ["gatehouse_http_request_duration_seconds_bucket", "up"],
  );
  assert.deepEqual(
    [...metricNames('sum(rate(a_total{x="b_total"}[5m] offset 1h)) / ignoring (y) group_left sum without (z) (c_sum)')],
    ["a_total", "c_sum"],
  );
  assert.deepEqual([...variableMetricNames({ query: 'label_values(gatehouse_http_requests_total{job=~"$job"}, instance)' })], [
    "gatehouse_http_requests_total",
  ]);
});

test("the dashboard and the rules are well-formed", () => {
  assert.equal(typeof dashboard.title, "string");
  assert.ok(dashboard.templating.list.some((v) => v.type === "datasource" && v.query === "prometheus"));
  const ids = new Set();
  const walk = (panels) => {
    for (const panel of panels ?? []) {
      assert.ok(!ids.has(panel.id), `panel id ${panel.id} is unique`);
      ids.add(panel.id);
      assert.ok(panel.gridPos, `panel "${panel.title}" has a position`);
      if (panel.targets) assert.equal(panel.datasource?.uid, "${datasource}", `panel "${panel.title}" uses the datasource variable`);
      walk(panel.panels);
    }
  };
  walk(dashboard.panels);
  assert.ok(dashboardExpressions().length >= 20);

  assert.ok(Array.isArray(rules.groups) && rules.groups.length >= 1);
  const alerts = rules.groups.flatMap((g) => g.rules);
  for (const rule of alerts) {
    assert.equal(typeof rule.alert, "string");
    assert.equal(typeof rule.expr, "string");
    assert.match(rule.labels?.severity ?? "", /^(critical|warning|info)$/, rule.alert);
    assert.equal(typeof rule.annotations?.summary, "string", rule.alert);
  }
  const used = usedMetrics();
  // What the brief asked the alerts to watch.
  const ruleNames = new Set(ruleExpressions().flatMap(([, expr]) => [...metricNames(expr)]));
  for (const name of ["up", "gatehouse_http_requests_total", "gatehouse_http_request_duration_seconds_bucket", "gatehouse_webhook_message_age_seconds_bucket"]) {
    assert.ok(ruleNames.has(name), `the rules use ${name}`);
  }
  for (const name of ["gatehouse_auth_rejected_total", "gatehouse_access_token_rejected_total", "gatehouse_password_hash_shed_total", "gatehouse_webhook_attempts_total", "gatehouse_cache_requests_total"]) {
    assert.ok(used.has(name), `the dashboard uses ${name}`);
  }
});

let gatehouse, exposition, rawExposition;

before(async () => {
  gatehouse = await startGatehouse({
    // One hashing thread and no queue, so that concurrent sign-ins are shed.
    GATEHOUSE__SECURITY__PASSWORD_HASH_CONCURRENCY: "1",
    GATEHOUSE__SECURITY__PASSWORD_HASH_QUEUE: "0",
    GATEHOUSE__RATE_LIMITS__SIGN_IN_PER_IP_PER_MINUTE: "0",
  });
  let text = "";
  for (let round = 0; round < 5; round++) {
    await generateTraffic(gatehouse);
    text = await scrapeMetrics(gatehouse.base);
    if (/^gatehouse_password_hash_shed_total /m.test(text)) break;
  }
  rawExposition = text;
  exposition = parseExposition(text);
});

// promtool (Debian's `prometheus`) lints the live exposition by Prometheus'
// own rules (HELP on every family, counters named _total, base units) and
// checks the alert rules. CI installs it and sets
// GATEHOUSE_TEST_REQUIRE_PROMTOOL, so there it never skips.
const promtool = spawnSync("promtool", ["--version"]).error ? null : "promtool";
const promtoolSkip = promtool || process.env.GATEHOUSE_TEST_REQUIRE_PROMTOOL ? false : "promtool is not installed (apt-get install prometheus)";

test("promtool finds nothing to say about /metrics after traffic", { skip: promtoolSkip }, () => {
  const checked = spawnSync("promtool", ["check", "metrics"], { input: rawExposition, encoding: "utf8" });
  assert.equal(checked.error, undefined, "promtool runs");
  assert.equal(checked.status, 0, `promtool check metrics:\n${checked.stdout}${checked.stderr}`);
  assert.equal(checked.stdout.trim() + checked.stderr.trim(), "", "no lint findings");
  for (const family of ["gatehouse_build_info", "process_cpu_seconds_total", "process_resident_memory_bytes"]) {
    assert.match(rawExposition, new RegExp(`^# HELP ${family} `, "m"), `${family} is exported with HELP`);
  }
  assert.doesNotMatch(rawExposition, /^# TYPE \S+ summary$/m, "no summaries: histograms add up across nodes");
});

test("every alert rule has its section in the operators' alert guide", () => {
  const guide = readFileSync(new URL("../../docs/operations/alerts.md", import.meta.url), "utf8");
  const sections = new Set([...guide.matchAll(/^## (\S+)$/gm)].map((m) => m[1]));
  for (const rule of parseYaml(readFileSync(new URL("prometheus/alerts.yml", deploy), "utf8")).groups.flatMap((g) => g.rules)) {
    assert.ok(sections.has(rule.alert), `docs/operations/alerts.md has a section for ${rule.alert}`);
  }
});

test("promtool accepts the alert rules", { skip: promtoolSkip }, () => {
  const checked = spawnSync("promtool", ["check", "rules", new URL("prometheus/alerts.yml", deploy).pathname], { encoding: "utf8" });
  assert.equal(checked.status, 0, `promtool check rules:\n${checked.stdout}${checked.stderr}`);
});

after(() => gatehouse?.stop());

test("every metric the dashboard and the alerts name is exported by the server", () => {
  const { samples, types } = exposition;
  const missing = [];
  for (const [name, places] of usedMetrics()) {
    if (PROVIDED_BY_PROMETHEUS.has(name)) continue;
    if (samples.has(name)) continue;
    const family = familyOf(name, types);
    missing.push(
      family
        ? `${name} (used by ${places.join(", ")}): family ${family} is a ${types.get(family)}, which has no ${name} series`
        : `${name} (used by ${places.join(", ")}): not exported`,
    );
  }
  assert.deepEqual(missing, [], `metrics not found in GET /metrics:\n${missing.join("\n")}`);
});

test("counters are counters and latency is a histogram", () => {
  const { types } = exposition;
  for (const name of usedMetrics().keys()) {
    const family = familyOf(name, types);
    if (name.endsWith("_total")) assert.equal(types.get(family), "counter", name);
    if (name.endsWith("_bucket")) assert.equal(types.get(family), "histogram", name);
  }
});
