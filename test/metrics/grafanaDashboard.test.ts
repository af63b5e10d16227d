import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { registerThrottleMetrics } from '../../src/metrics/registerThrottleMetrics';
import { MetricsScenario, startScenario } from './scenario';

const DASHBOARD = join(__dirname, '..', '..', 'docs', 'grafana', 'bullmq-throttle.json');

interface Panel {
  type: string;
  title: string;
  datasource?: { uid?: string };
  targets?: { expr: string }[];
  panels?: Panel[];
}

/** A metric an expression reads, with the labels it names for it (in its selector, or in by/without/on/ignoring). */
interface MetricReference {
  metric: string;
  labels: string[];
}

const GROUPING = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'atan2']);
const AGGREGATIONS = new Set(['sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count', 'count_values', 'bottomk', 'topk', 'quantile', 'limitk', 'limit_ratio']);

/**
 * The metrics a PromQL expression reads. Strings and range selectors go first (they hold Grafana's
 * $variables and durations); then a name followed by '(' is a function or an aggregation (so is an aggregation
 * followed by by/without), a grouping keyword's list holds label names, and any other name is a metric, with
 * the label names of its {selector}. Grouping labels are held against every metric of the expression: stricter
 * than PromQL, right for this dashboard's queries.
 */
export function promqlReferences(expr: string): MetricReference[] {
  const text = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""').replace(/\[[^\]]*\]/g, '');
  const metrics: MetricReference[] = [];
  const grouping: string[] = [];
  const token = /[a-zA-Z_:][a-zA-Z0-9_:]*/g;
  let found: RegExpExecArray | null;
  while ((found = token.exec(text)) !== null) {
    const name = found[0];
    const after = text.slice(token.lastIndex).trimStart();
    if (GROUPING.has(name)) {
      const list = /^\(([^)]*)\)/.exec(after);
      if (list) {
        grouping.push(...list[1].split(',').map((l) => l.trim()).filter(Boolean));
        token.lastIndex = text.indexOf(')', token.lastIndex) + 1;
      }
    } else if (after.startsWith('(') || KEYWORDS.has(name.toLowerCase()) || (AGGREGATIONS.has(name) && /^(by|without)\b/.test(after))) {
      continue;
    } else {
      const selector = /^\{([^}]*)\}/.exec(after);
      const labels = selector ? [...selector[1].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)].map((m) => m[1]) : [];
      metrics.push({ metric: name, labels });
      if (selector) token.lastIndex = text.indexOf('}', token.lastIndex) + 1;
    }
  }
  // Grouping labels name labels of the series aggregated or matched: those of the expression's metrics.
  return metrics.map((m) => ({ metric: m.metric, labels: [...new Set([...m.labels, ...grouping])] }));
}

function allPanels(panels: readonly Panel[]): Panel[] {
  return panels.flatMap((p) => [p, ...allPanels(p.panels ?? [])]);
}

describe('the Grafana dashboard (docs/grafana/bullmq-throttle.json)', () => {
  let scenario: MetricsScenario;
  let exported: Map<string, { type: string; labels: string[] }>;
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    schemaVersion: number;
    panels: Panel[];
    templating: { list: { name: string; type: string; query: string | { query: string } }[] };
  };

  beforeAll(async () => {
    scenario = await startScenario('grafana');
    const registry = new Registry();
    const metrics = registerThrottleMetrics(registry, { connection: scenario.admin });
    try {
      await registry.metrics(); // a scrape, as Prometheus would make it, against the scenario
      exported = new Map((await registry.getMetricsAsJSON()).map((m) => {
        const labelNames = (registry.getSingleMetric(m.name) as unknown as { labelNames?: string[] }).labelNames ?? [];
        // What the scrape reported must be labelled as declared.
        for (const value of m.values) for (const label of Object.keys(value.labels)) expect(labelNames).toContain(label);
        return [m.name, { type: String(m.type), labels: [...labelNames] }];
      }));
    } finally {
      await metrics.close();
    }
  });
  afterAll(async () => { await scenario?.close(); });

  /** The exported metric a queried name reads: histograms and summaries are queried by their series' suffixes. */
  function resolve(name: string): { type: string; labels: string[] } | undefined {
    if (exported.has(name)) return exported.get(name);
    const series = /^(.*)_(bucket|sum|count)$/.exec(name);
    const base = series ? exported.get(series[1]) : undefined;
    if (!base || !['histogram', 'summary'].includes(base.type)) return undefined;
    return { ...base, labels: [...base.labels, ...(series![2] === 'bucket' ? ['le'] : []), ...(base.type === 'summary' ? ['quantile'] : [])] };
  }

  it('the collector exports what the check reads', () => {
    expect(exported.has('bullmq_throttle_jobs_delivered_total')).toBe(true);
    expect(exported.get('bullmq_throttle_effective_limit_jobs')?.labels.sort()).toEqual(['throttle', 'window']);
  });

  it('reads the metrics from the parser\'s point of view as intended', () => {
    expect(promqlReferences('sum by (throttle) (rate(bullmq_throttle_jobs_delivered_total{throttle=~"$throttle"}[$__rate_interval]))'))
      .toEqual([{ metric: 'bullmq_throttle_jobs_delivered_total', labels: ['throttle'] }]);
    expect(promqlReferences('histogram_quantile(0.9, sum by (le) (rate(x_seconds_bucket{queue!="a,b"}[5m]))) / on(queue) y'))
      .toEqual([{ metric: 'x_seconds_bucket', labels: ['queue', 'le'] }, { metric: 'y', labels: ['le', 'queue'] }]);
  });

  it('every panel queries metrics the collector exports, by labels they carry', () => {
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    const panels = allPanels(dashboard.panels).filter((p) => p.type !== 'row');
    expect(panels.length).toBeGreaterThanOrEqual(10);
    const queried = new Set<string>();
    for (const panel of panels) {
      expect(panel.datasource?.uid).toBe('${datasource}');
      expect(panel.targets?.length).toBeGreaterThan(0);
      for (const { expr } of panel.targets ?? []) {
        const refs = promqlReferences(expr);
        expect(refs.length).toBeGreaterThan(0);
        for (const { metric, labels } of refs) {
          const known = resolve(metric);
          expect({ panel: panel.title, metric, exported: known !== undefined }).toEqual({ panel: panel.title, metric, exported: true });
          for (const label of labels) expect({ metric, label, carried: known!.labels.includes(label) }).toEqual({ metric, label, carried: true });
          queried.add(metric);
        }
      }
    }
    // The figures the issue asks for have a panel each.
    for (const metric of ['bullmq_throttle_window_delivered_jobs', 'bullmq_throttle_effective_limit_jobs', 'bullmq_throttle_queue_held_jobs', 'bullmq_throttle_buckets_at_limit',
      'bullmq_throttle_queue_oldest_waiting_seconds', 'bullmq_throttle_tokens_expired_total', 'bullmq_throttle_effective_rate_per_second']) expect(queried).toContain(metric);
  });

  it('its variables: a Prometheus data source, and throttle (and queue) from label values of exported metrics', () => {
    const vars = new Map(dashboard.templating.list.map((v) => [v.name, v]));
    expect(vars.get('datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
    for (const name of ['throttle', 'queue']) {
      const v = vars.get(name)!;
      const query = typeof v.query === 'string' ? v.query : v.query.query;
      const [, metric, label] = /^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_]\w*)\s*\)$/.exec(query) ?? [];
      expect(label).toBe(name);
      expect(resolve(metric)?.labels).toContain(label);
    }
  });
});
