/**
 * 32-bit FNV-1a over the key's UTF-8 bytes. Every node must map a key to the same partition forever (the
 * partition fixes which consumer orders the key's messages), so this is spelled out here rather than taken
 * from a library whose hash could change between versions; test/unit/actor-partition.test.ts pins values.
 */
export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** The partition that orders every message of `key`: `fnv1a32(key) % partitions`. */
export function partitionOf(key: string, partitions: number): number {
  return fnv1a32(key) % partitions;
}
