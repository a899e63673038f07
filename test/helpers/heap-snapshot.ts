// A page's V8 heap snapshot through CDP, summed by constructor the way DevTools' "Summary" groups it, and the
// difference of two such sums: what grew between them. For the benches that judge a page's heap over time
// (test/bench/dashboard.ts), so that a miss says where the bytes went.
import type { CDPSession } from 'playwright-core';

/** Objects and their shallow bytes under one constructor (or V8 category), and V8's node type for them. */
export interface HeapGroup {
  count: number;
  bytes: number;
  type: string;
}

/** The heap's groups by name, e.g. `Array`, `(closure) tick`, `(string)`. */
export type HeapSummary = Map<string, HeapGroup>;

interface RawSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

/** Takes a snapshot (V8 collects garbage first) and sums its nodes by constructor. */
export async function heapSummary(cdp: CDPSession): Promise<HeapSummary> {
  const chunks: string[] = [];
  const onChunk = ({ chunk }: { chunk: string }) => chunks.push(chunk);
  cdp.on('HeapProfiler.addHeapSnapshotChunk', onChunk);
  try {
    await cdp.send('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
  } finally {
    cdp.off('HeapProfiler.addHeapSnapshotChunk', onChunk);
  }
  return summarise(JSON.parse(chunks.join('')) as RawSnapshot);
}

function summarise(raw: RawSnapshot): HeapSummary {
  const fields = raw.snapshot.meta.node_fields;
  const types = raw.snapshot.meta.node_types[0];
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const summary: HeapSummary = new Map();
  for (let i = 0; i < raw.nodes.length; i += width) {
    const type = types[raw.nodes[i + typeAt]!]!;
    const name = raw.strings[raw.nodes[i + nameAt]!]!;
    // Objects by their constructor (the browser's own marked [C++]); closures by function name (a listener
    // that piles up shows by name); strings, arrays, code and V8's own objects by category, as DevTools does.
    const key =
      type === 'object'
        ? name
        : type === 'native'
          ? `${name} [C++]`
          : type === 'closure'
            ? `(closure) ${name || 'anonymous'}`
            : type.includes('string')
              ? '(string)'
              : `(${type})`;
    const group = summary.get(key) ?? { count: 0, bytes: 0, type };
    group.count++;
    group.bytes += raw.nodes[i + sizeAt]!;
    summary.set(key, group);
  }
  return summary;
}

/** A C++ template's name cut to its outer type (`blink::HeapHashTableBacking<…>`). */
const shortName = (name: string) => name.replace(/<.*>/, '<…>');

/** The `top` groups that grew most in bytes from `before` to `after`, one line each. */
export function heapGrowth(before: HeapSummary, after: HeapSummary, top = 8): string[] {
  const names = new Set([...before.keys(), ...after.keys()]);
  const grown = [...names]
    .map((name) => {
      const was = before.get(name) ?? { count: 0, bytes: 0 };
      const now = after.get(name) ?? { count: 0, bytes: 0 };
      return { name, bytes: now.bytes - was.bytes, count: now.count - was.count };
    })
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, top);
  return grown.map(
    (g) =>
      `${g.bytes >= 0 ? '+' : ''}${(g.bytes / 1024).toFixed(1)} KB ${g.count >= 0 ? '+' : ''}${g.count} × ${shortName(g.name)}`,
  );
}

/**
 * The summary's bytes in three kinds: the page's JavaScript (objects, arrays, closures, strings, their
 * shapes), V8's compiled code (bytecode and optimised code: it grows while the hot code is optimised), and
 * the browser's own objects in the snapshot (C++: DOM, performance entries, the inspector's buffers).
 */
export function heapKinds(summary: HeapSummary): { script: number; code: number; native: number } {
  const kinds = { script: 0, code: 0, native: 0 };
  for (const group of summary.values()) {
    if (group.type === 'code') kinds.code += group.bytes;
    else if (group.type === 'native') kinds.native += group.bytes;
    else kinds.script += group.bytes;
  }
  return kinds;
}
