import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createMetricsRegistry, DEFAULT_BUCKETS } from '../../src/platform/observability/metrics.ts';
import {
  registerProcessMetrics,
  SAMPLER_RESOLUTION_MS,
  type LoopDelaySampler,
} from '../../src/platform/observability/process-metrics.ts';
import { invalidPrometheusLines, sampleValue } from '../helpers/prometheus.ts';

describe('metrics registry', () => {
  it('renders a counter with HELP, TYPE and one line per label set, summing increments', () => {
    const registry = createMetricsRegistry();
    const counter = registry.counter({
      name: 'mf_things_total',
      help: 'Things.',
      labels: ['kind', 'outcome'],
    });
    counter.inc(['a', 'ok']);
    counter.inc(['a', 'ok'], 2);
    counter.inc(['b', 'error']);
    assert.equal(
      registry.render(),
      [
        '# HELP mf_things_total Things.',
        '# TYPE mf_things_total counter',
        'mf_things_total{kind="a",outcome="ok"} 3',
        'mf_things_total{kind="b",outcome="error"} 1',
        '',
      ].join('\n'),
    );
  });

  it('renders a metric without labels without braces, and a registered metric with no samples as its header', () => {
    const registry = createMetricsRegistry();
    registry.counter({ name: 'mf_plain_total', help: 'Plain.', labels: [] }).inc([], 0.5);
    registry.counter({ name: 'mf_unused_total', help: 'Unused.', labels: ['x'] });
    assert.equal(
      registry.render(),
      '# HELP mf_plain_total Plain.\n# TYPE mf_plain_total counter\nmf_plain_total 0.5\n' +
        '# HELP mf_unused_total Unused.\n# TYPE mf_unused_total counter\n',
    );
  });

  it('renders histogram buckets cumulatively, with +Inf, _sum and _count per label set', () => {
    const registry = createMetricsRegistry();
    const histogram = registry.histogram({
      name: 'mf_wait_seconds',
      help: 'Waits.',
      labels: ['route'],
      buckets: [0.1, 1, 10],
    });
    for (const value of [0.05, 0.1, 0.5, 2, 20]) histogram.observe(['/a'], value); // 0.1 falls in le="0.1"
    histogram.observe(['/b'], 3);
    assert.equal(
      registry.render(),
      [
        '# HELP mf_wait_seconds Waits.',
        '# TYPE mf_wait_seconds histogram',
        'mf_wait_seconds_bucket{route="/a",le="0.1"} 2',
        'mf_wait_seconds_bucket{route="/a",le="1"} 3',
        'mf_wait_seconds_bucket{route="/a",le="10"} 4',
        'mf_wait_seconds_bucket{route="/a",le="+Inf"} 5',
        'mf_wait_seconds_sum{route="/a"} 22.65',
        'mf_wait_seconds_count{route="/a"} 5',
        'mf_wait_seconds_bucket{route="/b",le="0.1"} 0',
        'mf_wait_seconds_bucket{route="/b",le="1"} 0',
        'mf_wait_seconds_bucket{route="/b",le="10"} 1',
        'mf_wait_seconds_bucket{route="/b",le="+Inf"} 1',
        'mf_wait_seconds_sum{route="/b"} 3',
        'mf_wait_seconds_count{route="/b"} 1',
        '',
      ].join('\n'),
    );
  });

  it('uses default buckets from 0.5 ms to 10 s', () => {
    const registry = createMetricsRegistry();
    registry.histogram({ name: 'mf_latency_seconds', help: 'Latency.', labels: [] }).observe([], 0.0004);
    const text = registry.render();
    assert.equal(DEFAULT_BUCKETS[0], 0.0005);
    assert.equal(DEFAULT_BUCKETS.at(-1), 10);
    for (const le of DEFAULT_BUCKETS)
      assert.equal(sampleValue(text, `mf_latency_seconds_bucket{le="${le}"}`), 1);
    assert.equal(sampleValue(text, 'mf_latency_seconds_bucket{le="+Inf"}'), 1);
    assert.equal(sampleValue(text, 'mf_latency_seconds_count'), 1);
  });

  it('reads gauges from their callback each time it renders', () => {
    const registry = createMetricsRegistry();
    let depth = 3;
    registry.gauge({ name: 'mf_queue_depth', help: 'Depth.', labels: ['queue'] }, () => [
      [['jobs'], depth],
      [['webhooks'], 0],
    ]);
    assert.equal(sampleValue(registry.render(), 'mf_queue_depth{queue="jobs"}'), 3);
    depth = 7;
    const text = registry.render();
    assert.match(text, /^# TYPE mf_queue_depth gauge$/m);
    assert.equal(sampleValue(text, 'mf_queue_depth{queue="jobs"}'), 7);
    assert.equal(sampleValue(text, 'mf_queue_depth{queue="webhooks"}'), 0);
  });

  it('escapes backslash, double quote and newline in label values, and backslash and newline in help', () => {
    const registry = createMetricsRegistry();
    registry
      .counter({ name: 'mf_odd_total', help: 'A \\ and a\nnewline.', labels: ['value'] })
      .inc(['C:\\dir "quoted"\nnext']);
    const text = registry.render();
    assert.equal(
      text,
      '# HELP mf_odd_total A \\\\ and a\\nnewline.\n' +
        '# TYPE mf_odd_total counter\n' +
        'mf_odd_total{value="C:\\\\dir \\"quoted\\"\\nnext"} 1\n',
    );
    assert.deepEqual(invalidPrometheusLines(text), []);
  });

  it('writes special values the way Prometheus reads them', () => {
    const registry = createMetricsRegistry();
    registry.gauge({ name: 'mf_special', help: 'Special.', labels: ['v'] }, () => [
      [['inf'], Infinity],
      [['-inf'], -Infinity],
      [['nan'], NaN],
      [['tiny'], 1e-7],
      [['huge'], 2 ** 64],
    ]);
    const text = registry.render();
    assert.match(text, /^mf_special\{v="inf"\} \+Inf$/m);
    assert.match(text, /^mf_special\{v="-inf"\} -Inf$/m);
    assert.match(text, /^mf_special\{v="nan"\} NaN$/m);
    assert.deepEqual(invalidPrometheusLines(text), []);
  });

  it('renders every line in the text format grammar', () => {
    const registry = createMetricsRegistry();
    const requests = registry.counter({
      name: 'mf_http_requests_total',
      help: 'Requests.',
      labels: ['method', 'route', 'status'],
    });
    const duration = registry.histogram({
      name: 'mf_http_request_duration_seconds',
      help: 'D.',
      labels: ['route'],
    });
    registry.gauge({ name: 'mf_rss_bytes', help: 'RSS.', labels: [] }, () => [[[], 123456789]]);
    for (const route of ['/api/v1/models', '/api/v1/jobs/:job_id', 'unmatched', 'we"ird\\\n']) {
      requests.inc(['GET', route, '200']);
      duration.observe([route], 0.0123);
    }
    const text = registry.render();
    assert.deepEqual(invalidPrometheusLines(text), []);
    assert.equal(text.split('\n').filter((l) => l.startsWith('# TYPE')).length, 3);
  });

  it('has a grammar check that refuses malformed lines', () => {
    const bad = [
      'mf_x{a="b"} 1\n', // no TYPE before it
      '# TYPE mf_y counter\nmf_y{a="unterminated} 1\n',
      '# TYPE mf_y counter\nmf_y{a="x"}1\n',
      '# TYPE mf_y counter\nmf_y{a="bad \\q escape"} 1\n',
      '# TYPE mf_y counter\nmf_y 1.2.3\n',
      '# TYPE mf_y counter\n# TYPE mf_y counter\n',
      '# TYPE mf-y counter\n',
      '# TYPE mf_y counter\nmf_y 1', // no final newline
    ];
    for (const text of bad) assert.notDeepEqual(invalidPrometheusLines(text), [], text);
    const good = '# HELP mf_y Y.\n# TYPE mf_y counter\nmf_y{a="b",} 1 1700000000000\n';
    assert.deepEqual(invalidPrometheusLines(good), []);
  });

  it('aggregates one series across different arrays with the same label values', () => {
    const registry = createMetricsRegistry();
    const counter = registry.counter({ name: 'mf_a_total', help: 'A.', labels: ['x', 'y'] });
    const route = ['GET', '/a'].join(' ').split(' ');
    counter.inc(['GET', '/a']);
    counter.inc(route);
    counter.inc(['GET', '/a\u0001']); // a different value, not merged
    assert.equal(sampleValue(registry.render(), 'mf_a_total{x="GET",y="/a"}'), 2);
  });

  it('refuses bad names, duplicate metrics, wrong label counts and decreasing counters', () => {
    const registry = createMetricsRegistry();
    const counter = registry.counter({ name: 'mf_c_total', help: 'C.', labels: ['a', 'b'] });
    assert.throws(
      () => registry.counter({ name: 'mf_c_total', help: 'again', labels: [] }),
      /registered twice/,
    );
    assert.throws(() => registry.counter({ name: 'mf-bad', help: 'x', labels: [] }), /invalid metric name/);
    assert.throws(() => registry.counter({ name: 'mf_l', help: 'x', labels: ['a-b'] }), /invalid label name/);
    assert.throws(() => registry.counter({ name: 'mf_r', help: 'x', labels: ['__r'] }), /invalid label name/);
    assert.throws(
      () => registry.histogram({ name: 'mf_h', help: 'x', labels: ['le'] }),
      /invalid label name/,
    );
    assert.throws(
      () => registry.histogram({ name: 'mf_h2', help: 'x', labels: [], buckets: [1, 0.5] }),
      /strictly increasing/,
    );
    assert.throws(() => counter.inc(['only-one']), /takes 2 label values/);
    assert.throws(() => counter.inc(['a', 'b'], -1), /only goes up/);
  });

  it('reports the event loop’s lag without the sampler’s resolution, which an idle loop reads', () => {
    // The sampler records the time between its timer's runs: an idle loop reads 20 ms, a busy one more.
    let p99Ms = SAMPLER_RESOLUTION_MS;
    let resets = 0;
    const sampler: LoopDelaySampler = {
      count: 10,
      percentile: () => p99Ms * 1e6,
      reset: () => void resets++,
      enable: () => true,
      disable: () => true,
    };
    const registry = createMetricsRegistry();
    const stop = registerProcessMetrics(registry, sampler);
    try {
      assert.equal(sampleValue(registry.render(), 'mf_nodejs_eventloop_lag_seconds'), 0, 'idle');
      p99Ms = SAMPLER_RESOLUTION_MS + 25;
      assert.equal(sampleValue(registry.render(), 'mf_nodejs_eventloop_lag_seconds'), 0.025, 'busy');
      assert.equal(resets, 2, 'each scrape starts a new interval');
    } finally {
      stop();
    }
  });

  it('samples the real event loop', async () => {
    const registry = createMetricsRegistry();
    const stop = registerProcessMetrics(registry);
    try {
      // The loop-delay histogram samples every few ms while the loop runs: let it run some.
      await new Promise((resolve) => setTimeout(resolve, 100));
      const lag = sampleValue(registry.render(), 'mf_nodejs_eventloop_lag_seconds');
      assert.ok(lag !== undefined && Number.isFinite(lag) && lag >= 0, `lag ${lag}`);
    } finally {
      stop();
    }
  });
});
