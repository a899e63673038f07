// The Prometheus text exposition format 0.0.4, line by line (what a scraper accepts), for tests.
const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = `[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*"`;
const FLOAT = '[+-]?(?:Inf|NaN|(?:\\d+\\.?\\d*|\\.\\d+)(?:[eE][+-]?\\d+)?)';
const HELP_LINE = new RegExp(`^# HELP (${NAME}) (?:[^\\\\\\n]|\\\\[\\\\n])*$`);
const TYPE_LINE = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`);
const SAMPLE_LINE = new RegExp(`^(${NAME})(?:\\{(?:${LABEL}(?:,${LABEL})*,?)?\\})? ${FLOAT}(?: -?\\d+)?$`);

/** The lines of `text` that a Prometheus scraper would refuse, with the reason; empty when all is well. */
export function invalidPrometheusLines(text: string): string[] {
  const problems: string[] = [];
  if (text !== '' && !text.endsWith('\n')) problems.push('the text does not end with a newline');
  const types = new Map<string, string>();
  const helped = new Set<string>();
  for (const line of text.split('\n').slice(0, -1)) {
    const help = HELP_LINE.exec(line);
    const type = TYPE_LINE.exec(line);
    const sample = SAMPLE_LINE.exec(line);
    if (help) {
      if (helped.has(help[1]!)) problems.push(`second HELP: ${line}`);
      helped.add(help[1]!);
    } else if (type) {
      if (types.has(type[1]!)) problems.push(`second TYPE: ${line}`);
      types.set(type[1]!, type[2]!);
    } else if (sample) {
      if (!types.has(familyOf(sample[1]!, types))) problems.push(`sample before its TYPE: ${line}`);
    } else {
      problems.push(`malformed: ${JSON.stringify(line)}`);
    }
  }
  return problems;
}

/** `x_bucket`, `x_sum`, `x_count` belong to histogram `x`. */
function familyOf(name: string, types: Map<string, string>): string {
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return base !== name && types.get(base) === 'histogram' ? base : name;
}

/** The value of the sample written exactly as `series` (name and label text), or undefined. */
export function sampleValue(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/**
 * A service's counters of segmented exports from its /metrics (docs/operator.md, The segment cache): picture
 * segments encoded and reused, sounds mixed and reused.
 */
export async function segmentCounters(service: { url: string; adminToken: string }): Promise<{
  encoded: number;
  reused: number;
  soundsMixed: number;
  soundsReused: number;
}> {
  const answer = await fetch(`${service.url}/metrics`, {
    headers: { authorization: `Bearer ${service.adminToken}` },
  });
  const text = await answer.text();
  const count = (series: string, result: string) => sampleValue(text, `${series}{result="${result}"}`) ?? 0;
  return {
    encoded: count('mf_export_segments_total', 'encoded'),
    reused: count('mf_export_segments_total', 'reused'),
    soundsMixed: count('mf_export_sounds_total', 'mixed'),
    soundsReused: count('mf_export_sounds_total', 'reused'),
  };
}
