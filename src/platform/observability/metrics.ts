/** Adds to a counter series; label values are positional, in the order of the counter's `labels`. */
export interface Counter {
  inc(labelValues: readonly string[], by?: number): void;
}

/** Records an observation (in seconds, for durations) in a histogram series. */
export interface Histogram {
  observe(labelValues: readonly string[], value: number): void;
}

/** Metric name, help text and label names. */
export interface MetricOptions {
  name: string;
  help: string;
  labels: readonly string[];
}

/** A histogram's options; `buckets` are the finite upper bounds (`+Inf` is always added). */
export interface HistogramOptions extends MetricOptions {
  buckets?: readonly number[];
}

/** What a gauge callback returns at render time: one `[labelValues, value]` pair per series. */
export type GaugeSamples = ReadonlyArray<readonly [labelValues: readonly string[], value: number]>;

/** A dependency-free Prometheus registry: counters, histograms and callback gauges. */
export interface MetricsRegistry {
  counter(opts: MetricOptions): Counter;
  histogram(opts: HistogramOptions): Histogram;
  /** A gauge whose series are read from `collect` each time the registry is rendered. */
  gauge(opts: MetricOptions, collect: () => GaugeSamples): void;
  /** Prometheus text exposition format 0.0.4 */
  render(): string;
}

/** Latencies from 0.5 ms to 10 s. */
export const DEFAULT_BUCKETS: readonly number[] = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
// Series are keyed by their label values joined with a character that label values practically never hold.
const SEPARATOR = '\u0000';

/** Creates an empty registry; metrics render in the order they were registered. */
export function createMetricsRegistry(): MetricsRegistry {
  const metrics: Metric[] = [];
  const register = <T extends Metric>(metric: T): T => {
    if (metrics.some((m) => m.name === metric.name))
      throw new Error(`metric registered twice: ${metric.name}`);
    metrics.push(metric);
    return metric;
  };
  return {
    counter: (opts) => register(new CounterMetric(opts)),
    histogram: (opts) => register(new HistogramMetric(opts)),
    gauge: (opts, collect) => void register(new GaugeMetric(opts, collect)),
    render: () => metrics.map((m) => m.render()).join(''),
  };
}

interface Metric {
  readonly name: string;
  render(): string;
}

/** Name and label checks, the `# HELP`/`# TYPE` header and label rendering shared by every metric type. */
abstract class BaseMetric implements Metric {
  readonly name: string;
  protected readonly labelNames: readonly string[];
  private readonly header: string;

  constructor(
    opts: MetricOptions,
    type: 'counter' | 'histogram' | 'gauge',
    reserved: readonly string[] = [],
  ) {
    if (!METRIC_NAME.test(opts.name)) throw new Error(`invalid metric name: ${opts.name}`);
    for (const label of opts.labels) {
      if (!LABEL_NAME.test(label) || label.startsWith('__') || reserved.includes(label))
        throw new Error(`invalid label name for ${opts.name}: ${label}`);
    }
    if (new Set(opts.labels).size !== opts.labels.length)
      throw new Error(`duplicate label name for ${opts.name}`);
    this.name = opts.name;
    this.labelNames = [...opts.labels];
    this.header = `# HELP ${opts.name} ${escapeHelp(opts.help)}\n# TYPE ${opts.name} ${type}\n`;
  }

  render(): string {
    return this.header + this.body();
  }

  protected abstract body(): string;

  /** `a="x",b="y"` (no braces), escaped; computed once per series, off the hot path. */
  protected labelText(values: readonly string[]): string {
    if (values.length !== this.labelNames.length) {
      throw new Error(
        `${this.name} takes ${this.labelNames.length} label values (${this.labelNames.join(', ')}), got ${values.length}`,
      );
    }
    return this.labelNames.map((name, i) => `${name}="${escapeLabelValue(values[i]!)}"`).join(',');
  }
}

/** A metric that keeps its series: one Map lookup per update, keyed by the joined label values. */
abstract class StoredMetric<S> extends BaseMetric {
  protected readonly series = new Map<string, S>();

  protected seriesFor(labelValues: readonly string[]): S {
    const key = labelValues.join(SEPARATOR);
    let series = this.series.get(key);
    if (series === undefined) {
      series = this.newSeries(this.labelText(labelValues));
      this.series.set(key, series);
    }
    return series;
  }

  protected abstract newSeries(labels: string): S;
}

interface CounterSeries {
  labels: string;
  value: number;
}

class CounterMetric extends StoredMetric<CounterSeries> implements Counter {
  constructor(opts: MetricOptions) {
    super(opts, 'counter');
  }

  inc(labelValues: readonly string[], by = 1): void {
    if (!(by >= 0)) throw new Error(`${this.name}: a counter only goes up (got ${by})`);
    this.seriesFor(labelValues).value += by;
  }

  protected newSeries(labels: string): CounterSeries {
    return { labels, value: 0 };
  }

  protected body(): string {
    let out = '';
    for (const s of this.series.values()) out += sample(this.name, s.labels, s.value);
    return out;
  }
}

interface HistogramSeries {
  labels: string;
  /** Per bucket, not cumulative (one increment per observation); the last one is `+Inf`. */
  counts: Float64Array;
  sum: number;
}

class HistogramMetric extends StoredMetric<HistogramSeries> implements Histogram {
  private readonly bounds: readonly number[];
  private readonly le: readonly string[];

  constructor(opts: HistogramOptions) {
    super(opts, 'histogram', ['le']);
    const bounds = (opts.buckets ?? DEFAULT_BUCKETS).filter((b) => b !== Infinity);
    if (bounds.length === 0 || bounds.some((b, i) => !Number.isFinite(b) || (i > 0 && b <= bounds[i - 1]!)))
      throw new Error(`${opts.name}: buckets must be finite and strictly increasing`);
    this.bounds = bounds;
    this.le = [...bounds.map(formatValue), '+Inf'];
  }

  observe(labelValues: readonly string[], value: number): void {
    const series = this.seriesFor(labelValues);
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    series.counts[i]!++;
    series.sum += value;
  }

  protected newSeries(labels: string): HistogramSeries {
    return { labels, counts: new Float64Array(this.le.length), sum: 0 };
  }

  protected body(): string {
    let out = '';
    for (const s of this.series.values()) {
      const prefix = s.labels ? `${s.labels},` : '';
      let cumulative = 0;
      for (let i = 0; i < this.le.length; i++) {
        cumulative += s.counts[i]!;
        out += sample(`${this.name}_bucket`, `${prefix}le="${this.le[i]}"`, cumulative);
      }
      out += sample(`${this.name}_sum`, s.labels, s.sum);
      out += sample(`${this.name}_count`, s.labels, cumulative);
    }
    return out;
  }
}

class GaugeMetric extends BaseMetric {
  constructor(
    opts: MetricOptions,
    private readonly collect: () => GaugeSamples,
  ) {
    super(opts, 'gauge');
  }

  protected body(): string {
    let out = '';
    for (const [labelValues, value] of this.collect())
      out += sample(this.name, this.labelText(labelValues), value);
    return out;
  }
}

function sample(name: string, labels: string, value: number): string {
  return labels ? `${name}{${labels}} ${formatValue(value)}\n` : `${name} ${formatValue(value)}\n`;
}

function formatValue(value: number): string {
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value); // NaN, integers and JavaScript's exponent form are all valid Prometheus floats
}

function escapeLabelValue(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

function escapeHelp(help: string): string {
  return help.replace(/[\\\n]/g, (c) => (c === '\n' ? '\\n' : '\\\\'));
}
